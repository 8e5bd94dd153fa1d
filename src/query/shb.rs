//! `query --relation shb`: schedulable happens-before (Mathur, Kini &
//! Viswanathan, OOPSLA 2018) among synchronization events, and SHB paths
//! between any two events.
//!
//! SHB is HB plus, for every data read, an edge from the write it reads from
//! (the last earlier write to its variable) when another thread made it. The
//! clocks are HB's, computed with those reads-from edges as hard edges, so
//! every test and path of [`HbIndex`] carries over; paths may take a
//! `reads-from` step.

use std::cell::OnceCell;
use std::io;

use super::hb::{count_sync, not_after, window_note};
use super::hbpath::HbIndex;
use super::{Answer, DumpSink, QueryEngine, clock_pairs, show};
use crate::cp::sync::{SyncPoints, VolatileOrder};
use crate::facts::Facts;
use crate::trace::{EventId, Op, Trace};

/// SHB over one trace.
pub struct ShbQuery<'a> {
    trace: &'a Trace,
    window: Option<u64>,
    facts: Facts,
    /// Reads-from edges `(write, read)` across threads, by read.
    reads_from: Vec<(EventId, EventId)>,
    sync: SyncPoints,
    /// HB's clocks, for `hb_ordered`; computed on the first explain.
    hb: OnceCell<SyncPoints>,
}

/// The reads-from edges SHB adds to HB: `(w, r)` for each data read `r`
/// whose last earlier data write `w` to the same variable is another
/// thread's (a write of the same thread is already before `r` in program
/// order). Ascending by read.
pub fn reads_from_edges(trace: &Trace) -> Vec<(EventId, EventId)> {
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

impl<'a> ShbQuery<'a> {
    /// Compute SHB clocks for `trace`; `window` only limits the dump.
    pub fn new(trace: &'a Trace, window: Option<u64>) -> ShbQuery<'a> {
        let facts = Facts::new(trace);
        let reads_from = reads_from_edges(trace);
        // HB keeps the Java memory model's volatile edges: SHB = HB + data
        // reads-from (README, "Semantic decisions").
        let sync = SyncPoints::with_order(trace, &facts, &reads_from, VolatileOrder::WriteRead);
        ShbQuery {
            trace,
            window,
            facts,
            reads_from,
            sync,
            hb: OnceCell::new(),
        }
    }
}

impl QueryEngine for ShbQuery<'_> {
    fn relation(&self) -> &'static str {
        "shb"
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
        let mut a = Answer::new("shb", self.window, e1, e2);
        if let Some(why) = not_after(e1, e2) {
            a.explanation = why;
            return a;
        }
        let shb =
            HbIndex::new(self.trace, &self.facts, &self.sync).with_reads_from(&self.reads_from);
        match shb.path(self.trace, e1, e2) {
            Some(chain) => {
                a.ordered = true;
                let hb = self
                    .hb
                    .get_or_init(|| SyncPoints::new(self.trace, &self.facts, &[]));
                a.hb_ordered = HbIndex::new(self.trace, &self.facts, hb).leq(self.trace, e1, e2);
                a.chain = chain;
                a.explanation = format!(
                    "{} is SHB-before {}: each step is a generating HB edge (program order, release -> \
                     later acquire of the same lock, fork, join, volatile write -> read by another thread) \
                     or a reads-from edge (a write -> a read of another thread that reads its value), so \
                     the chain orders them by transitivity.",
                    show(self.trace, e1),
                    show(self.trace, e2)
                );
            }
            None => a.explanation = not_shb(self.trace, &shb, e1, e2),
        }
        a.explanation += &window_note(self.window, e1, e2);
        a
    }
}

/// Why `e1` (before `e2`) is not SHB-before `e2`, checkably: the latest
/// event of `e1`'s thread that is SHB-before `e2`.
fn not_shb(trace: &Trace, shb: &HbIndex, e1: EventId, e2: EventId) -> String {
    let t1 = trace.events[e1 as usize].thread;
    let name = crate::report::printable(trace.names.thread(t1));
    let latest = match shb.latest_before(trace, t1, e2) {
        Some(x) => format!(
            "the latest event of {name} that is SHB-before {} is {}, which precedes {}",
            show(trace, e2),
            show(trace, x),
            show(trace, e1)
        ),
        None => format!("no event of {name} is SHB-before {}", show(trace, e2)),
    };
    format!(
        "not ordered: {} is not SHB-before {} (no path of program order, release -> acquire, fork, \
         join, volatile or reads-from edges leads from it to {}): {latest}.",
        show(trace, e1),
        show(trace, e2),
        show(trace, e2)
    )
}
