//! A bounded search for a witness that reorders critical sections, for races
//! whose sync-preserving closure holds one of the two events (possible for
//! `hb`, `cp`, `wcp` races after the first, and for CP/WCP first races).
//!
//! Depth-first over correct reordering prefixes, stopping when both racy
//! events are next. A state is
//! the per-thread positions plus the last write of every variable, of every
//! byte when some access touches part of a variable (the lock holders follow
//! from the positions); states are visited once, up to a budget. When the budget is not exhausted the answer is exact for such
//! prefixes: no witness exists among them.

use std::collections::HashSet;

use crate::trace::{EventId, Op, Trace};

use super::closure::{LastWrites, TraceIndex, is_read};

/// What the search found.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// A witness.
    Found(Vec<EventId>),
    /// No correct reordering prefix enables both.
    None,
    /// The state budget ran out.
    Budget,
}

/// States visited at most, per race.
pub(crate) const BUDGET: usize = 100_000;

/// Whether the search is tried at all: small traces only (each state holds
/// one position per thread and one last write per variable).
pub(crate) fn applicable(trace: &Trace, e2: EventId) -> bool {
    e2 < 5_000 && trace.num_vars() <= 64 && trace.num_threads() <= 16
}

/// Search a witness for (e1, e2), e1 < e2.
pub(crate) fn search(
    trace: &Trace,
    idx: &TraceIndex,
    e1: EventId,
    e2: EventId,
    budget: usize,
) -> Search {
    let nt = idx.num_threads();
    // Per thread, how far it may go: the racy events stop their threads.
    // (Events after the later racy event may be needed: a section of a third
    // thread that the trace releases after it can precede an acquire the
    // witness needs.)
    let mut limit: Vec<u32> = (0..nt).map(|t| idx.per_thread[t].len() as u32).collect();
    for e in [e1, e2] {
        let t = idx.thread[e as usize] as usize;
        limit[t] = limit[t].min(idx.pos[e as usize]);
    }
    let goal = |pos: &[u32]| {
        [e1, e2].iter().all(|&e| {
            let t = idx.thread[e as usize] as usize;
            pos[t] == idx.pos[e as usize]
        })
    };
    // Per read, the write each byte reads from; bytes are tracked apart only
    // when some access touches part of its variable.
    let width = if trace.events.iter().any(|e| e.bytes() != 0xff) {
        8
    } else {
        1
    };
    let mut last = LastWrites::new(trace.num_vars());
    let sees: Vec<[u32; 8]> = trace
        .events
        .iter()
        .enumerate()
        .map(|(i, ev)| {
            if !ev.op.is_memory() {
                return [u32::MAX; 8];
            }
            let s = last.of(ev.target, ev.bytes());
            if ev.op.is_write() {
                last.write(ev.target, ev.bytes(), i as EventId);
            }
            s
        })
        .collect();
    let bytes = |ev: &crate::trace::Event| {
        let (x, m) = (ev.target as usize * width, ev.bytes());
        (0..width)
            .filter(move |&b| width == 1 || m >> b & 1 == 1)
            .map(move |b| (x + b, b))
    };
    let fork_of: Vec<Option<EventId>> = {
        let mut f = vec![None; nt];
        for (i, ev) in trace.events.iter().enumerate() {
            if ev.op == Op::Fork && f[ev.target as usize].is_none() {
                f[ev.target as usize] = Some(i as EventId);
            }
        }
        f
    };
    let started = |pos: &[u32], t: usize| {
        fork_of[t].is_none_or(|f| idx.pos[f as usize] < pos[idx.thread[f as usize] as usize])
    };

    #[derive(Clone)]
    struct State {
        pos: Vec<u32>,
        holder: Vec<u32>,
        written: Vec<u32>,
        prefix: Vec<EventId>,
    }
    let none = u32::MAX;
    let start = State {
        pos: vec![0; nt],
        holder: vec![none; trace.num_locks()],
        written: vec![none; trace.num_vars() * width],
        prefix: Vec::new(),
    };
    let mut seen: HashSet<(Vec<u32>, Vec<u32>)> = HashSet::new();
    seen.insert((start.pos.clone(), start.written.clone()));
    let mut stack = vec![start];
    while let Some(s) = stack.pop() {
        if goal(&s.pos)
            && [e1, e2]
                .iter()
                .all(|&e| started(&s.pos, idx.thread[e as usize] as usize))
        {
            return Search::Found(s.prefix);
        }
        for (t, &lim) in limit.iter().enumerate() {
            if s.pos[t] >= lim || !started(&s.pos, t) {
                continue;
            }
            let e = idx.per_thread[t][s.pos[t] as usize];
            let ev = trace.events[e as usize];
            let mut n = s.clone();
            match ev.op {
                Op::Acquire => {
                    if n.holder[ev.target as usize] != none {
                        continue;
                    }
                    n.holder[ev.target as usize] = t as u32;
                }
                Op::Release => n.holder[ev.target as usize] = none,
                Op::Join => {
                    let u = ev.target as usize;
                    if (n.pos[u] as usize) < idx.per_thread[u].len() {
                        continue;
                    }
                }
                op if is_read(op)
                    && bytes(&ev).any(|(k, b)| n.written[k] != sees[e as usize][b]) =>
                {
                    continue;
                }
                op if op.is_write() => bytes(&ev).for_each(|(k, _)| n.written[k] = e),
                // A blocked request never runs.
                Op::Request => continue,
                _ => {}
            }
            n.pos[t] += 1;
            if !seen.insert((n.pos.clone(), n.written.clone())) {
                continue;
            }
            if seen.len() > budget {
                return Search::Budget;
            }
            n.prefix.push(e);
            stack.push(n);
        }
    }
    Search::None
}
