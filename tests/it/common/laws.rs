//! What the laws of README "Semantic decisions" need beyond the engines:
//! HBv races (HB plus the volatile edges CP and WCP keep), and the condition
//! under which HB races ⊆ CP races holds.

use cprace::engine::history::AccessHistory;
use cprace::race::cp::sync::{Clocks, VolatileOrder};
use cprace::trace::{EventId, Op, Trace};

/// Racy events under HBv (pairs less than `window` apart): streaming HBv
/// vector clocks and the shared access history, as every exact engine.
pub fn hbv_racy(t: &Trace, window: Option<u64>) -> Vec<EventId> {
    let mut clocks = Clocks::with_order(t, true, VolatileOrder::Conflicting);
    let mut history = AccessHistory::new(window);
    let mut out = Vec::new();
    for (i, ev) in t.events.iter().enumerate() {
        let (clock, local) = clocks.step(ev, |_| {});
        if ev.op.is_access()
            && history
                .access(i as EventId, ev, local, |u, c| clock.get(u) >= c)
                .is_some()
        {
            out.push(i as EventId);
        }
    }
    out
}

/// True when HBv has no edge HB lacks: no volatile read or write is followed,
/// in another thread, by a write of the same volatile variable. On such traces
/// HB = HBv, so HB races ⊆ windowed CP races ⊆ exact CP races.
pub fn hbv_is_hb(t: &Trace) -> bool {
    // Per variable, the threads that accessed it so far (at most two kept:
    // enough to tell whether one other than a given thread did).
    let mut seen: Vec<[u32; 2]> = Vec::new();
    for ev in &t.events {
        if !matches!(ev.op, Op::VolatileRead | Op::VolatileWrite) {
            continue;
        }
        let v = ev.target as usize;
        if seen.len() <= v {
            seen.resize(v + 1, [u32::MAX; 2]);
        }
        let s = &mut seen[v];
        let other = s.iter().any(|&u| u != u32::MAX && u != ev.thread);
        if ev.op == Op::VolatileWrite && other {
            return false;
        }
        if !s.contains(&ev.thread) {
            if s[0] == u32::MAX {
                s[0] = ev.thread;
            } else {
                s[1] = ev.thread;
            }
        }
    }
    true
}

/// `a ⊆ b` for sorted event lists.
pub fn subset(a: &[EventId], b: &[EventId]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}
