//! What the laws of docs/src/semantic-decisions.md "Semantic decisions" need beyond the engines:
//! HBv races (HB plus the volatile edges CP and WCP keep), and the condition
//! under which HB races ⊆ CP races holds.

use cprace::engine::history::AccessHistory;
use cprace::engine::sync::{Clocks, VolatileOrder};
use cprace::trace::{EventId, Op, Trace};

/// Racy events under HBv (pairs less than `window` apart): streaming HBv
/// vector clocks and the shared access history, as every exact engine.
pub fn hbv_racy(t: &Trace, window: Option<u64>) -> Vec<EventId> {
    let mut clocks = Clocks::with_order(t, true, VolatileOrder::Conflicting);
    let mut history = AccessHistory::new(window);
    let mut out = Vec::new();
    for (i, ev) in t.events.iter().enumerate() {
        let (clock, local) = clocks.step(ev, |_| false);
        if ev.op.is_memory()
            && history
                .access(i as EventId, ev, local, |u, c| clock.get(u) >= c)
                .is_some()
        {
            out.push(i as EventId);
        }
    }
    out
}

/// True when HBv has no edge HB lacks: every two atomic accesses of a
/// variable by different threads, at least one a write, are a volatile write
/// and a later volatile read (the one pair HB orders too). So no atomic
/// access is followed, in another thread, by an atomic write of the same
/// variable, and no relaxed access (`ar`, `aw`) by any other atomic access
/// with a write among the two. On such traces HB = HBv, so HB races ⊆
/// windowed CP races ⊆ exact CP races.
pub fn hbv_is_hb(t: &Trace) -> bool {
    // Per variable: threads (at most two kept: enough to tell whether one
    // other than a given thread did) that accessed it atomically, wrote it
    // atomically, and wrote it relaxed.
    let mut seen: Vec<[[u32; 2]; 3]> = Vec::new();
    let other = |s: &[u32; 2], t: u32| s.iter().any(|&u| u != u32::MAX && u != t);
    let add = |s: &mut [u32; 2], t: u32| {
        if !s.contains(&t) {
            if s[0] == u32::MAX {
                s[0] = t;
            } else {
                s[1] = t;
            }
        }
    };
    for ev in &t.events {
        if !ev.op.is_atomic() {
            continue;
        }
        let v = ev.target as usize;
        if seen.len() <= v {
            seen.resize(v + 1, [[u32::MAX; 2]; 3]);
        }
        let [any, writes, relaxed] = &mut seen[v];
        let extra = match ev.op {
            Op::VolatileWrite | Op::AtomicWrite => other(any, ev.thread),
            Op::VolatileRead => other(relaxed, ev.thread),
            _ => other(writes, ev.thread),
        };
        if extra {
            return false;
        }
        add(any, ev.thread);
        if ev.op.is_write() {
            add(writes, ev.thread);
        }
        if ev.op == Op::AtomicWrite {
            add(relaxed, ev.thread);
        }
    }
    true
}

/// `a ⊆ b` for sorted event lists.
pub fn subset(a: &[EventId], b: &[EventId]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

/// True when every atomic read that reads (a byte) from another thread's
/// atomic write is HB-after it: always without relaxed atomics (HB orders a
/// volatile write before every later volatile read). Then every reads-from
/// pair before the first HB race is HB-ordered, so HB's first race is
/// predictable, SHB has a race whenever HB has, and HB's first racy event is
/// a sync-preserving race. A relaxed flag publishing plain data breaks it:
/// HB reports a data race there (C11's, ThreadSanitizer's) that no correct
/// reordering exhibits.
pub fn hb_orders_atomic_reads_from(t: &Trace) -> bool {
    let hb = crate::common::oracle::hb_matrix(t);
    let mut last: std::collections::BTreeMap<(u32, u32), usize> = Default::default();
    for (i, ev) in t.events.iter().enumerate() {
        let bytes = (0..8u32).filter(|b| ev.bytes() >> b & 1 == 1);
        if ev.op.is_write() {
            bytes.for_each(|b| {
                last.insert((ev.target, b), i);
            });
        } else if ev.op.is_atomic() {
            let unordered = bytes.filter_map(|b| last.get(&(ev.target, b))).any(|&w| {
                let w_ev = &t.events[w];
                w_ev.op.is_atomic() && w_ev.thread != ev.thread && !hb[w][i]
            });
            if unordered {
                return false;
            }
        }
    }
    true
}
