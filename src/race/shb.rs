//! Schedulable happens-before (Mathur, Kini & Viswanathan, "What happens-after
//! the first race?", OOPSLA 2018).
//!
//! SHB is the smallest partial order containing HB and, for every read, an
//! edge from the write it reads from (the last earlier write to its variable)
//! to the read. A read is checked for races *before* its own reads-from edge
//! joins its clock (Algorithm 1 of the paper); a write is checked as in HB.
//! The paper's theorem: every pair SHB leaves unordered this way is a
//! predictable race, not only the first one, because the SHB-downward closure
//! of the two events' predecessors, laid out in trace order, is a correct
//! reordering (reads keep their writes: the reads-from edges are in SHB).
//!
//! Volatiles: HB already orders a volatile write before every later volatile
//! read of the variable, which includes the read's reads-from edge, so only
//! data reads add edges (SEMANTICS.md: SHB = HB + data reads-from edges).
//!
//! The engine is [`crate::race::hb::vc`]'s vector clocks plus, per variable, the
//! clock of its last data write; a write ticks its thread's own entry so that
//! joining the write's clock orders exactly the events up to the write.

use serde_json::json;

use crate::engine::clock::VectorClock;
use crate::engine::history::AccessHistory;
use crate::race::hb::vc::HbClocks;
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Event, EventId, Op};

/// Streaming SHB detector (`--relation shb --engine vc`).
pub(crate) struct ShbDetector {
    clocks: HbClocks,
    history: AccessHistory,
    /// Per variable, the clock of its last data write (None: none yet);
    /// a shared copy-on-write clock, so saving it is O(1).
    last_write: Vec<Option<VectorClock>>,
    rf_joins: u64,
    report: Report,
}

impl ShbDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub(crate) fn new(window: Option<u64>) -> Self {
        ShbDetector {
            clocks: HbClocks::new(),
            history: AccessHistory::new(window),
            last_write: Vec::new(),
            rf_joins: 0,
            report: Report::new(Relation::Shb, Engine::Vc, window, 0),
        }
    }

    /// Feed the next event.
    #[inline]
    pub(crate) fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        if !self.clocks.event(ev) {
            return;
        }
        let t = ev.thread;
        let row = self.clocks.row(t);
        let clock = row.get(t);
        let race = self.history.access(id, ev, clock, |u, c| row.get(u) >= c);
        if let Some(r) = race {
            self.report.push(r);
        }
        let x = ev.target as usize;
        if self.last_write.len() <= x {
            self.last_write.resize(x + 1, None);
        }
        if ev.op == Op::Write {
            self.last_write[x] = Some(row.clone());
            self.clocks.tick_thread(t);
        } else if let Some(w) = &self.last_write[x] {
            // The read's reads-from edge, after its race check.
            self.clocks.join_thread(t, w);
            self.rf_joins += 1;
        }
    }

    /// The finished report.
    pub(crate) fn finish(mut self) -> Report {
        let c = &self.clocks;
        let s = &mut self.report.stats;
        s.insert("threads".into(), json!(c.num_threads()));
        s.insert("locks".into(), json!(c.num_locks()));
        s.insert("volatiles".into(), json!(c.num_volatiles()));
        s.insert("clock_joins".into(), json!(c.joins));
        s.insert("reads_from_joins".into(), json!(self.rf_joins));
        self.report.notes.push(
            "every SHB race is a predictable race (OOPSLA 2018 theorem), not only the first".into(),
        );
        self.report.normalize();
        let report = std::mem::take(&mut self.report);
        crate::alloc::drop_later(self, report.events > crate::alloc::BIG);
        report
    }
}

crate::impl_detector!(ShbDetector);
