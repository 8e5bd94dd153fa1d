//! An independent checker of race witnesses: replays the listed events against
//! the trace alone, with no relation, engine or closure code involved (only
//! the bookkeeping of which write each byte holds last).
//!
//! A witness for a race (e1, e2) is a list of event ids that, executed in the
//! listed order, is a correct reordering prefix of the trace (docs/src/semantic-decisions.md,
//! "Semantic decisions") after which e1 and e2 are the next events of their
//! threads. Reads-from is per byte: every read (`r`, `vr`, `ar`) must see,
//! for each byte it touches, the write it saw in the trace.

use rustc_hash::FxHashMap;

use super::closure::LastWrites;
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
    // events, which thread each fork starts, and the writes each listed read
    // sees (per byte).
    let reads = |op: Op| matches!(op, Op::Read | Op::VolatileRead | Op::AtomicRead);
    let mut pos = vec![0u32; n];
    let mut per_thread: Vec<Vec<EventId>> = vec![Vec::new(); nt];
    let mut fork_of: Vec<Option<EventId>> = vec![None; nt];
    let mut sees: FxHashMap<EventId, [u32; 8]> = witness
        .iter()
        .filter(|&&e| reads(ev[e as usize].op))
        .map(|&e| (e, [0; 8]))
        .collect();
    let mut last_write = LastWrites::new(trace.num_vars());
    for (i, e) in ev.iter().enumerate() {
        let th = &mut per_thread[e.thread as usize];
        pos[i] = th.len() as u32;
        th.push(i as EventId);
        match e.op {
            Op::Fork if fork_of[e.target as usize].is_none() => {
                fork_of[e.target as usize] = Some(i as EventId)
            }
            op if reads(op) => {
                if let Some(s) = sees.get_mut(&(i as EventId)) {
                    *s = last_write.of(e.target, e.bytes());
                }
            }
            op if op.is_write() => last_write.write(e.target, e.bytes(), i as EventId),
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
    let mut written = LastWrites::new(trace.num_vars());
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
            op if reads(op) => {
                let (now, then) = (written.of(x.target, x.bytes()), sees[&e]);
                if let Some(b) = (0..8).find(|&b| now[b] != then[b]) {
                    let name = |w: u32| match w {
                        u32::MAX => "the initial value".to_string(),
                        w => format!("event {w}"),
                    };
                    let byte = match x.bytes() {
                        0xff if now.iter().all(|&w| w == now[0]) => String::new(),
                        _ => format!(" in byte {b}"),
                    };
                    return fail(format!(
                        "reads {}{byte} instead of {} as in the trace",
                        name(now[b]),
                        name(then[b])
                    ));
                }
            }
            op if op.is_write() => written.write(x.target, x.bytes(), e),
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
    check_pair(trace, e1, e2)?;
    let r = replay(trace, witness)?;
    for e in [e1, e2] {
        r.is_next(trace, e)?;
    }
    Ok(Verdict {
        sync_preserving: r.sync_preserving,
    })
}

/// Check that (e1, e2) can be a race of `trace` at all, witness or not:
/// both events exist and are conflicting accesses (of two threads, one a
/// write).
pub fn check_pair(trace: &Trace, e1: EventId, e2: EventId) -> Result<(), String> {
    let ev = &trace.events;
    let n = ev.len();
    for e in [e1, e2] {
        if e as usize >= n {
            return Err(format!("event {e} is not in the trace ({n} events)"));
        }
    }
    let (a, b) = (ev[e1 as usize], ev[e2 as usize]);
    if !(a.op.is_memory() && b.op.is_memory()) {
        return Err(format!("events {e1} and {e2} are not both accesses"));
    }
    if !a.conflicts(&b) {
        return Err(format!("events {e1} and {e2} do not conflict"));
    }
    Ok(())
}
