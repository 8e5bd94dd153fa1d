//! An independent checker of race witnesses: replays the listed events against
//! the trace alone, with no relation, engine or closure code involved.
//!
//! A witness for a race (e1, e2) is a list of event ids that, executed in the
//! listed order, is a correct reordering prefix of the trace (see SEMANTICS.md)
//! after which e1 and e2 are the next events of their threads.

use crate::trace::{EventId, Op, Trace};

/// What a valid witness additionally is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every lock's acquires appear in trace order (a sync-preserving reordering).
    pub sync_preserving: bool,
}

/// The state a valid witness leaves: what was listed, who holds which lock.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// Each thread's events, in trace order.
    pub per_thread: Vec<Vec<EventId>>,
    /// Position of each event in its thread.
    pub pos: Vec<u32>,
    /// The fork of each thread, if forked.
    pub fork_of: Vec<Option<EventId>>,
    /// Whether each event is listed.
    pub done: Vec<bool>,
    /// Per thread, how many of its events are listed (its next event's position).
    pub next: Vec<u32>,
    /// Per lock, the thread holding it after the witness.
    pub holder: Vec<Option<u32>>,
    /// Every lock's acquires appear in trace order.
    pub sync_preserving: bool,
}

impl Replayed {
    /// Whether thread `t` has started (its fork, if any, is listed).
    pub fn started(&self, t: usize) -> bool {
        self.fork_of[t].is_none_or(|f| self.done[f as usize])
    }

    /// Whether event `e` is the next event of its (started) thread.
    pub fn is_next(&self, trace: &Trace, e: EventId) -> Result<(), String> {
        let t = trace.events[e as usize].thread as usize;
        if self.pos[e as usize] != self.next[t] {
            return Err(format!(
                "event {e} is not enabled after the witness: its thread has {} listed events, it is event #{}",
                self.next[t], self.pos[e as usize]
            ));
        }
        if let Some(f) = self.fork_of[t].filter(|_| !self.started(t)) {
            return Err(format!(
                "event {e} is not enabled: its thread's fork (event {f}) is not listed"
            ));
        }
        Ok(())
    }
}

/// Replay `witness` on `trace`: the state it leaves, or which rule its first
/// offending entry breaks (each event the next of its thread, a forked
/// thread after its fork, a join after every event of the joined thread, no
/// acquire of a lock another thread holds, every read seeing the write it
/// saw in the trace, no blocked request run).
pub fn replay(trace: &Trace, witness: &[EventId]) -> Result<Replayed, String> {
    let ev = &trace.events;
    let n = ev.len();
    let nt = trace.num_threads();
    if let Some(&e) = witness.iter().find(|&&e| e as usize >= n) {
        return Err(format!("event {e} is not in the trace ({n} events)"));
    }

    // Facts of the trace: each event's position in its thread, each thread's
    // events, which thread each fork starts, and the write each read sees.
    let mut pos = vec![0u32; n];
    let mut per_thread: Vec<Vec<EventId>> = vec![Vec::new(); nt];
    let mut fork_of: Vec<Option<EventId>> = vec![None; nt];
    let mut sees: Vec<Option<EventId>> = vec![None; n];
    let mut last_write: Vec<Option<EventId>> = vec![None; trace.num_vars()];
    for (i, e) in ev.iter().enumerate() {
        let th = &mut per_thread[e.thread as usize];
        pos[i] = th.len() as u32;
        th.push(i as EventId);
        match e.op {
            Op::Fork if fork_of[e.target as usize].is_none() => {
                fork_of[e.target as usize] = Some(i as EventId)
            }
            Op::Read | Op::VolatileRead => sees[i] = last_write[e.target as usize],
            Op::Write | Op::VolatileWrite => last_write[e.target as usize] = Some(i as EventId),
            _ => {}
        }
    }

    // Replay.
    let mut r = Replayed {
        per_thread,
        pos,
        fork_of,
        done: vec![false; n],
        next: vec![0u32; nt],
        holder: vec![None; trace.num_locks()],
        sync_preserving: true,
    };
    let mut written: Vec<Option<EventId>> = vec![None; trace.num_vars()];
    let mut last_acquire: Vec<Option<EventId>> = vec![None; trace.num_locks()];
    for (k, &e) in witness.iter().enumerate() {
        let x = ev[e as usize];
        let t = x.thread as usize;
        let fail = |why: String| Err(format!("witness entry {k} (event {e}): {why}"));
        if r.done[e as usize] {
            return fail("listed twice".into());
        }
        if r.pos[e as usize] != r.next[t] {
            return fail(format!(
                "not the next event of its thread (expected its event #{})",
                r.next[t]
            ));
        }
        if let Some(f) = r.fork_of[t].filter(|_| !r.started(t)) {
            return fail(format!("its thread starts before its fork (event {f})"));
        }
        match x.op {
            Op::Join => {
                let u = x.target as usize;
                if r.next[u] as usize != r.per_thread[u].len() {
                    return fail("joins a thread whose events are not all listed before it".into());
                }
            }
            Op::Acquire => {
                let l = x.target as usize;
                if let Some(h) = r.holder[l] {
                    return fail(format!(
                        "acquires a lock held by thread {}",
                        trace.names.thread(h)
                    ));
                }
                r.holder[l] = Some(x.thread);
                if last_acquire[l].is_some_and(|p| p > e) {
                    r.sync_preserving = false;
                }
                last_acquire[l] = Some(e);
            }
            Op::Release => {
                let l = x.target as usize;
                if r.holder[l] != Some(x.thread) {
                    return fail("releases a lock its thread does not hold".into());
                }
                r.holder[l] = None;
            }
            Op::Read | Op::VolatileRead => {
                let v = x.target as usize;
                if written[v] != sees[e as usize] {
                    let name = |w: Option<EventId>| {
                        w.map_or("the initial value".to_string(), |w| format!("event {w}"))
                    };
                    return fail(format!(
                        "reads {} instead of {} as in the trace",
                        name(written[v]),
                        name(sees[e as usize])
                    ));
                }
            }
            Op::Write | Op::VolatileWrite => written[x.target as usize] = Some(e),
            Op::Request => {
                return fail("is a blocked request (`req`), which never runs".into());
            }
            _ => {}
        }
        r.done[e as usize] = true;
        r.next[t] += 1;
    }
    Ok(r)
}

/// Check `witness` for the race (e1, e2) on `trace`. The error says which
/// rule the first offending event breaks.
pub fn check(
    trace: &Trace,
    e1: EventId,
    e2: EventId,
    witness: &[EventId],
) -> Result<Verdict, String> {
    let ev = &trace.events;
    let n = ev.len();
    for e in [e1, e2] {
        if e as usize >= n {
            return Err(format!("event {e} is not in the trace ({n} events)"));
        }
    }
    let (a, b) = (ev[e1 as usize], ev[e2 as usize]);
    if !(a.op.is_access() && b.op.is_access()) {
        return Err(format!("events {e1} and {e2} are not both data accesses"));
    }
    if a.target != b.target || a.thread == b.thread || !(a.op == Op::Write || b.op == Op::Write) {
        return Err(format!("events {e1} and {e2} do not conflict"));
    }
    let r = replay(trace, witness)?;
    for e in [e1, e2] {
        r.is_next(trace, e)?;
    }
    Ok(Verdict {
        sync_preserving: r.sync_preserving,
    })
}

/// The event ids of JSON array `v` (`what` names it in errors).
fn id_list(
    v: Option<&serde_json::Value>,
    file: &std::path::Path,
    what: &str,
) -> anyhow::Result<Vec<EventId>> {
    let bad = || {
        anyhow::Error::new(crate::UsageError(format!(
            "{}: {what} is not an array of event ids",
            file.display()
        )))
    };
    let a = v.and_then(|v| v.as_array()).ok_or_else(bad)?;
    a.iter()
        .map(|x| match x.as_u64() {
            Some(x) if x <= u32::MAX as u64 => Ok(x as EventId),
            _ => Err(bad()),
        })
        .collect()
}

/// `cprace verify TRACE --witness FILE`: check every witness in FILE (races,
/// or deadlocks when FILE is a `cprace deadlocks` report), print one line
/// each, return the exit code (0 all valid, 1 some invalid).
pub fn run_cli(
    trace: &std::path::Path,
    file: &std::path::Path,
    format: Option<crate::trace::Format>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<i32> {
    use anyhow::{Context, bail};
    let t = crate::trace::load(trace, format)?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| crate::UsageError(format!("{}: not JSON: {e}", file.display())))?;
    let deadlocks = json.get("deadlocks").and_then(|d| d.as_array());
    let items: Vec<&serde_json::Value> = match (deadlocks, json.get("races")) {
        (Some(d), _) => d.iter().collect(),
        (None, Some(serde_json::Value::Array(a))) => a.iter().collect(),
        _ => vec![&json],
    };
    let id = |v: &serde_json::Value, k: &str| -> anyhow::Result<EventId> {
        match v.get(k).and_then(|x| x.as_u64()) {
            Some(x) if x <= u32::MAX as u64 => Ok(x as EventId),
            _ => bail!(crate::UsageError(format!(
                "{}: a race without a valid `{k}` event id",
                file.display()
            ))),
        }
    };
    let (mut valid, mut invalid, mut absent) = (0, 0, 0);
    for v in items {
        let (what, name) = if deadlocks.is_some() {
            let events = id_list(v.get("events"), file, "a deadlock's `events`")?;
            let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("deadlock");
            let list: Vec<String> = events.iter().map(|e| e.to_string()).collect();
            (
                Some(events),
                format!("deadlock [{}] ({kind})", list.join(", ")),
            )
        } else {
            let (e1, e2) = (id(v, "first")?, id(v, "second")?);
            (None, format!("({e1}, {e2})"))
        };
        let w = match v.get("witness") {
            Some(serde_json::Value::Null) => {
                absent += 1;
                writeln!(out, "{name}: no witness")?;
                continue;
            }
            Some(w @ serde_json::Value::Array(_)) => {
                id_list(Some(w), file, &format!("the witness of {name}"))?
            }
            _ => bail!(crate::UsageError(format!(
                "{}: {name} has no `witness` array (run {} with --witness)",
                file.display(),
                if deadlocks.is_some() {
                    "deadlocks"
                } else {
                    "analyze"
                }
            ))),
        };
        let verdict = match &what {
            Some(events) => {
                let locks: Option<Vec<String>> = v.get("locks").and_then(|l| {
                    l.as_array()?
                        .iter()
                        .map(|x| x.as_str().map(String::from))
                        .collect()
                });
                super::deadlock::check(&t, events, locks.as_deref(), &w)
            }
            None => check(&t, id(v, "first")?, id(v, "second")?, &w).map(|v| v.sync_preserving),
        };
        match verdict {
            Ok(sync_preserving) => {
                valid += 1;
                let sp = if sync_preserving {
                    ", sync-preserving"
                } else {
                    ""
                };
                writeln!(out, "{name}: valid ({} events{sp})", w.len())?;
            }
            Err(why) => {
                invalid += 1;
                writeln!(out, "{name}: INVALID: {why}")?;
            }
        }
    }
    writeln!(
        out,
        "SUMMARY: {valid} valid, {invalid} invalid, {absent} without a witness"
    )?;
    Ok(if invalid > 0 { 1 } else { 0 })
}
