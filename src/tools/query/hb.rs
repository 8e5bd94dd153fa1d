//! `query --relation hb|shb`: happens-before (or schedulable HB) among
//! synchronization events, and HB (SHB) paths between any two events.

use std::cell::OnceCell;
use std::io;

use super::hbpath::HbIndex;
use super::{Answer, DumpSink, QueryEngine, clock_pairs, is_sync_event, show};
use crate::engine::sync::{SyncPoints, VolatileOrder};
use crate::facts::Facts;
use crate::relation::Relation;
use crate::trace::{EventId, Op, Trace};

/// HB (or SHB) over one trace.
pub(crate) struct HbQuery<'a> {
    trace: &'a Trace,
    window: Option<u64>,
    facts: Facts,
    sync: SyncPoints,
    /// SHB only: the reads-from edges its clocks follow (empty for HB).
    reads_from: Vec<(EventId, EventId)>,
    shb: bool,
    /// SHB only: HB's own clocks, for `hb_ordered`; built on first use.
    hb: OnceCell<SyncPoints>,
}

impl<'a> HbQuery<'a> {
    /// Compute HB clocks for `trace`; `window` only limits the dump.
    pub(crate) fn new(trace: &'a Trace, window: Option<u64>) -> HbQuery<'a> {
        let facts = Facts::new(trace);
        let sync = SyncPoints::new(trace, &facts, &[]);
        HbQuery {
            trace,
            window,
            facts,
            sync,
            reads_from: Vec::new(),
            shb: false,
            hb: OnceCell::new(),
        }
    }

    /// Schedulable HB (Mathur, Kini & Viswanathan, OOPSLA 2018): HB plus,
    /// for every data read, an edge from the write it reads from when another
    /// thread made it. Its clocks are HB's with those edges as hard edges
    /// (volatiles keep the Java memory model, as in HB: docs/src/semantic-decisions.md, "Semantic
    /// decisions"), so every test and path carries over; paths may take a
    /// `reads-from` step.
    pub(crate) fn shb(trace: &'a Trace, window: Option<u64>) -> HbQuery<'a> {
        let facts = Facts::new(trace);
        let reads_from = reads_from_edges(trace);
        let sync = SyncPoints::with_order(trace, &facts, &reads_from, VolatileOrder::WriteRead);
        HbQuery {
            trace,
            window,
            facts,
            sync,
            reads_from,
            shb: true,
            hb: OnceCell::new(),
        }
    }
}

/// The reads-from edges SHB adds to HB: `(w, r)` for each data read `r`
/// whose last earlier data write `w` to the same variable is another
/// thread's (a write of the same thread is already before `r` in program
/// order). Ascending by read.
pub(crate) fn reads_from_edges(trace: &Trace) -> Vec<(EventId, EventId)> {
    let mut last_write: Vec<Option<EventId>> = vec![None; trace.num_vars()];
    let mut edges = Vec::new();
    for (i, ev) in trace.events.iter().enumerate() {
        let x = ev.target as usize;
        match ev.op {
            Op::Write => last_write[x] = Some(i as EventId),
            Op::Read => {
                if let Some(w) = last_write[x]
                    && trace.events[w as usize].thread != ev.thread
                {
                    edges.push((w, i as EventId));
                }
            }
            _ => {}
        }
    }
    edges
}

impl QueryEngine for HbQuery<'_> {
    fn relation(&self) -> Relation {
        if self.shb {
            Relation::Shb
        } else {
            Relation::Hb
        }
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
        let mut a = Answer::new(self.relation(), self.window, e1, e2);
        if let Some(why) = not_after(e1, e2) {
            a.explanation = why;
            return a;
        }
        let index =
            HbIndex::new(self.trace, &self.facts, &self.sync).with_reads_from(&self.reads_from);
        let (e1s, e2s) = (show(self.trace, e1), show(self.trace, e2));
        match index.path(self.trace, e1, e2) {
            Some(chain) => {
                a.ordered = true;
                a.hb_ordered = !self.shb || {
                    let hb = self
                        .hb
                        .get_or_init(|| SyncPoints::new(self.trace, &self.facts, &[]));
                    HbIndex::new(self.trace, &self.facts, hb).leq(self.trace, e1, e2)
                };
                a.chain = chain;
                a.explanation = if self.shb {
                    format!(
                        "{e1s} is SHB-before {e2s}: each step is a generating HB edge (program order, \
                         release -> later acquire of the same lock, fork, join, volatile write -> read by \
                         another thread) or a reads-from edge (a write -> a read of another thread that \
                         reads its value), so the chain orders them by transitivity."
                    )
                } else {
                    format!(
                        "{e1s} happens before {e2s}: each step is a generating HB edge (program order, \
                         release -> later acquire of the same lock, fork, join, volatile write -> read by \
                         another thread), so the chain orders them by transitivity."
                    )
                };
            }
            None => a.explanation = not_ordered(self.trace, &index, e1, e2, self.shb),
        }
        a.explanation += &window_note(self.window, e1, e2);
        a
    }
}

/// Synchronization events of `trace`.
pub(crate) fn count_sync(trace: &Trace) -> usize {
    trace.events.iter().filter(|e| is_sync_event(e.op)).count()
}

/// Why `e1` cannot be ordered before `e2` when it does not precede it.
pub(crate) fn not_after(e1: EventId, e2: EventId) -> Option<String> {
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
pub(crate) fn not_hb(trace: &Trace, hb: &HbIndex, e1: EventId, e2: EventId) -> String {
    not_ordered(trace, hb, e1, e2, false)
}

/// [`not_hb`] for HB, or for SHB when `shb` (`index` then follows the
/// reads-from edges).
fn not_ordered(trace: &Trace, index: &HbIndex, e1: EventId, e2: EventId, shb: bool) -> String {
    let (before, edges) = if shb {
        ("is SHB-before", "join, volatile or reads-from edges")
    } else {
        ("happens before", "join or volatile edges")
    };
    let t1 = trace.events[e1 as usize].thread;
    let name = crate::report::printable(trace.names.thread(t1));
    let (e1s, e2s) = (show(trace, e1), show(trace, e2));
    let latest = match index.latest_before(trace, t1, e2) {
        Some(x) => format!(
            "the latest event of {name} that {before} {e2s} is {}, which precedes {e1s}",
            show(trace, x)
        ),
        None => format!("no event of {name} {before} {e2s}"),
    };
    let neg = if shb {
        "is not SHB-before"
    } else {
        "does not happen before"
    };
    format!(
        "not ordered: {e1s} {neg} {e2s} (no path of program order, release -> acquire, fork, \
         {edges} leads from it to {e2s}): {latest}."
    )
}

/// A note when the pair is outside the window analyze checks.
pub(crate) fn window_note(window: Option<u64>, e1: EventId, e2: EventId) -> String {
    match window {
        Some(k) if e1 < e2 && (e2 - e1) as u64 >= k => format!(
            " Note: the events are {} >= K = {k} events apart; `analyze --window {k}` does not pair them.",
            e2 - e1
        ),
        _ => String::new(),
    }
}
