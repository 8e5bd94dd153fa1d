//! An independent checker of race witnesses: replays the listed events against
//! the trace alone, with no relation, engine or closure code involved (only
//! the bookkeeping of which write each byte holds last).
//!
//! A witness for a race (e1, e2) is a list of event ids that, executed in the
//! listed order, is a correct reordering prefix of the trace (README,
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
    let nt = trace.num_threads();
    for &e in [e1, e2].iter().chain(witness) {
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
    let reads = |op: Op| matches!(op, Op::Read | Op::VolatileRead | Op::AtomicRead);

    // Facts of the trace: each event's position in its thread, each thread's
    // length, which thread each fork starts, and the writes each listed read
    // sees (per byte).
    let mut pos = vec![0u32; n];
    let mut count = vec![0u32; nt];
    let mut fork_of: Vec<Option<EventId>> = vec![None; nt];
    let mut sees: FxHashMap<EventId, [u32; 8]> = witness
        .iter()
        .filter(|&&e| reads(ev[e as usize].op))
        .map(|&e| (e, [0; 8]))
        .collect();
    let mut last_write = LastWrites::new(trace.num_vars());
    for (i, e) in ev.iter().enumerate() {
        pos[i] = count[e.thread as usize];
        count[e.thread as usize] += 1;
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
    let mut done = vec![false; n];
    let mut next = vec![0u32; nt];
    let mut holder: Vec<Option<u32>> = vec![None; trace.num_locks()];
    let mut written = LastWrites::new(trace.num_vars());
    let mut last_acquire: Vec<Option<EventId>> = vec![None; trace.num_locks()];
    let mut sync_preserving = true;
    for (k, &e) in witness.iter().enumerate() {
        let x = ev[e as usize];
        let t = x.thread as usize;
        let fail = |why: String| Err(format!("witness entry {k} (event {e}): {why}"));
        if done[e as usize] {
            return fail("listed twice".into());
        }
        if pos[e as usize] != next[t] {
            return fail(format!(
                "not the next event of its thread (expected its event #{})",
                next[t]
            ));
        }
        if let Some(f) = fork_of[t].filter(|&f| next[t] == 0 && !done[f as usize]) {
            return fail(format!("its thread starts before its fork (event {f})"));
        }
        match x.op {
            Op::Join => {
                let u = x.target as usize;
                if next[u] != count[u] {
                    return fail("joins a thread whose events are not all listed before it".into());
                }
            }
            Op::Acquire => {
                let l = x.target as usize;
                if let Some(h) = holder[l] {
                    return fail(format!(
                        "acquires a lock held by thread {}",
                        trace.names.thread(h)
                    ));
                }
                holder[l] = Some(x.thread);
                if last_acquire[l].is_some_and(|p| p > e) {
                    sync_preserving = false;
                }
                last_acquire[l] = Some(e);
            }
            Op::Release => {
                let l = x.target as usize;
                if holder[l] != Some(x.thread) {
                    return fail("releases a lock its thread does not hold".into());
                }
                holder[l] = None;
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
            _ => {}
        }
        done[e as usize] = true;
        next[t] += 1;
    }
    for e in [e1, e2] {
        let t = ev[e as usize].thread as usize;
        if pos[e as usize] != next[t] {
            return Err(format!(
                "event {e} is not enabled after the witness: its thread has {} listed events, it is event #{}",
                next[t], pos[e as usize]
            ));
        }
        if let Some(f) = fork_of[t].filter(|&f| next[t] == 0 && !done[f as usize]) {
            return Err(format!(
                "event {e} is not enabled: its thread's fork (event {f}) is not listed"
            ));
        }
    }
    Ok(Verdict { sync_preserving })
}
