//! `query --relation hb`: happens-before among synchronization events, and
//! HB paths between any two events.

use std::io;

use super::hbpath::HbIndex;
use super::{Answer, DumpSink, QueryEngine, clock_pairs, is_sync_event, show};
use crate::cp::sync::SyncPoints;
use crate::facts::Facts;
use crate::trace::{EventId, Trace};

/// HB over one trace.
pub struct HbQuery<'a> {
    trace: &'a Trace,
    window: Option<u64>,
    facts: Facts,
    sync: SyncPoints,
}

impl<'a> HbQuery<'a> {
    /// Compute HB clocks for `trace`; `window` only limits the dump.
    pub fn new(trace: &'a Trace, window: Option<u64>) -> HbQuery<'a> {
        let facts = Facts::new(trace);
        let sync = SyncPoints::new(trace, &facts, &[]);
        HbQuery {
            trace,
            window,
            facts,
            sync,
        }
    }
}

impl QueryEngine for HbQuery<'_> {
    fn relation(&self) -> &'static str {
        "hb"
    }
    fn window(&self) -> Option<u64> {
        self.window
    }
    fn sync_events(&self) -> usize {
        count_sync(self.trace)
    }
    fn has_base_edges(&self) -> bool {
        false
    }
    fn dump(&self, sink: &mut dyn DumpSink) -> io::Result<()> {
        let sync = &self.sync;
        clock_pairs(self.trace, sync, &sync.hb, self.window, |x, y| {
            sink.pair(x, y)
        })
    }
    fn explain(&self, e1: EventId, e2: EventId) -> Answer {
        let mut a = Answer::new("hb", self.window, e1, e2);
        if let Some(why) = not_after(e1, e2) {
            a.explanation = why;
            return a;
        }
        let hb = HbIndex::new(self.trace, &self.facts, &self.sync);
        match hb.path(self.trace, e1, e2) {
            Some(chain) => {
                a.ordered = true;
                a.hb_ordered = true;
                a.chain = chain;
                a.explanation = format!(
                    "{} happens before {}: each step is a generating HB edge (program order, release -> \
                     later acquire of the same lock, fork, join, volatile write -> read by another thread), \
                     so the chain orders them by transitivity.",
                    show(self.trace, e1),
                    show(self.trace, e2)
                );
            }
            None => a.explanation = not_hb(self.trace, &hb, e1, e2),
        }
        a.explanation += &window_note(self.window, e1, e2);
        a
    }
}

/// Synchronization events of `trace`.
pub fn count_sync(trace: &Trace) -> usize {
    trace.events.iter().filter(|e| is_sync_event(e.op)).count()
}

/// Why `e1` cannot be ordered before `e2` when it does not precede it.
pub fn not_after(e1: EventId, e2: EventId) -> Option<String> {
    if e1 == e2 {
        Some(format!(
            "not ordered: the relations are strict orders, so event {e1} is not ordered before itself."
        ))
    } else if e1 > e2 {
        Some(format!(
            "not ordered: event {e1} comes after event {e2} in the trace, and HB, CP and WCP only order an \
             event before later events (ask for --pair {e2},{e1})."
        ))
    } else {
        None
    }
}

/// Why `e1` (before `e2`) does not happen before `e2`, checkably: the latest
/// event of `e1`'s thread that happens before `e2`.
pub fn not_hb(trace: &Trace, hb: &HbIndex, e1: EventId, e2: EventId) -> String {
    let t1 = trace.events[e1 as usize].thread;
    let name = crate::report::printable(trace.names.thread(t1));
    let latest = match hb.latest_before(trace, t1, e2) {
        Some(x) => format!(
            "the latest event of {name} that happens before {} is {}, which precedes {}",
            show(trace, e2),
            show(trace, x),
            show(trace, e1)
        ),
        None => format!("no event of {name} happens before {}", show(trace, e2)),
    };
    format!(
        "not ordered: {} does not happen before {} (no path of program order, release -> acquire, fork, \
         join or volatile edges leads from it to {}): {latest}.",
        show(trace, e1),
        show(trace, e2),
        show(trace, e2)
    )
}

/// A note when the pair is outside the window analyze checks.
pub fn window_note(window: Option<u64>, e1: EventId, e2: EventId) -> String {
    match window {
        Some(k) if e1 < e2 && (e2 - e1) as u64 >= k => format!(
            " Note: the events are {} >= K = {k} events apart; `analyze --window {k}` does not pair them.",
            e2 - e1
        ),
        _ => String::new(),
    }
}
