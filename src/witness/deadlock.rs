//! An independent checker of deadlock witnesses: replays the listed events
//! against the trace alone ([`super::verify::replay`]), with no lock graph,
//! pattern or closure code involved, then checks that the threads of the
//! listed requests are blocked for good.
//!
//! After the witness, a thread waits for another when its next event is an
//! acquire (or a blocked request) of a lock that other thread holds, or a
//! join of a thread that has not finished; a blocked request of a lock the
//! thread itself holds waits for itself. A thread is deadlocked when
//! following what it waits for leads into a cycle: no schedule can ever
//! move it again.

use super::verify::{Replayed, replay};
use crate::trace::{EventId, Op, Trace};

/// What the checked thread waits for after the witness, if anything.
fn waits_for(trace: &Trace, r: &Replayed, t: usize) -> Option<usize> {
    if !r.started(t) {
        return None;
    }
    let &e = r.per_thread[t].get(r.next[t] as usize)?;
    let x = trace.events[e as usize];
    match x.op {
        Op::Acquire | Op::Request => {
            let h = r.holder.get(x.target as usize).copied().flatten()? as usize;
            (h != t || x.op == Op::Request).then_some(h)
        }
        Op::Join => {
            let u = x.target as usize;
            ((r.next[u] as usize) < r.per_thread[u].len()).then_some(u)
        }
        _ => None,
    }
}

/// Whether thread `t` is deadlocked: what it waits for leads into a cycle.
fn deadlocked(trace: &Trace, r: &Replayed, t: usize) -> bool {
    let n = r.next.len();
    let mut cur = t;
    // In a graph where each thread waits for at most one other, a walk of
    // `n` steps that never stops has entered a cycle.
    for _ in 0..=n {
        match waits_for(trace, r, cur) {
            Some(u) => cur = u,
            None => return false,
        }
    }
    true
}

/// Check `witness` for the deadlock whose requests are `requests` (one per
/// lock of the cycle) and, when given, whose requested locks are named
/// `locks`. Returns whether the witness is sync-preserving; the error says
/// which rule is broken.
pub fn check(
    trace: &Trace,
    requests: &[EventId],
    locks: Option<&[String]>,
    witness: &[EventId],
) -> Result<bool, String> {
    let n = trace.len();
    if requests.is_empty() {
        return Err("the deadlock lists no request events".into());
    }
    let mut threads = Vec::new();
    for (i, &e) in requests.iter().enumerate() {
        let Some(x) = trace.events.get(e as usize) else {
            return Err(format!("event {e} is not in the trace ({n} events)"));
        };
        if !matches!(x.op, Op::Acquire | Op::Request) {
            return Err(format!(
                "event {e} is not a lock request (it is `{}`{})",
                x.op.as_str(),
                if x.op == Op::ReentrantAcquire {
                    ", re-entrant: it never blocks"
                } else {
                    ""
                }
            ));
        }
        if threads.contains(&x.thread) {
            return Err(format!(
                "two requests of thread {}",
                trace.names.thread(x.thread)
            ));
        }
        threads.push(x.thread);
        if let Some(name) = locks.and_then(|l| l.get(i))
            && trace.names.lock(x.target) != name
        {
            return Err(format!(
                "event {e} requests lock `{}`, not `{name}`",
                trace.names.lock(x.target)
            ));
        }
    }
    let r = replay(trace, witness)?;
    for &e in requests {
        r.is_next(trace, e)?;
        let t = trace.events[e as usize].thread as usize;
        if !deadlocked(trace, &r, t) {
            let why = match waits_for(trace, &r, t) {
                None => format!(
                    "lock `{}` is free",
                    trace.names.lock(trace.events[e as usize].target)
                ),
                Some(u) => format!(
                    "it waits for thread {}, which can still run",
                    trace.names.thread(u as u32)
                ),
            };
            return Err(format!(
                "thread {} is not deadlocked after the witness: {why}",
                trace.names.thread(t as u32)
            ));
        }
    }
    Ok(r.sync_preserving)
}
