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
//! Reads-from is per byte: a read (`r`, `vr` or `ar`) reads each byte it
//! touches from the last earlier write (`w`, `vw` or `aw`) touching that byte,
//! so it gets an edge from each such write (every access of a text trace
//! touches its whole variable: one write). Volatile reads get the edge too:
//! HB already has it when they read a volatile write, but not when they read
//! a plain or relaxed one.
//!
//! The engine is [`crate::race::hb::vc`]'s vector clocks plus, per variable, the
//! clock of its last write (per byte once a write touched part of it); a
//! plain or relaxed write ticks its thread's own entry so that joining the
//! write's clock orders exactly the events up to the write (a volatile write
//! ticks anyway).

use rustc_hash::FxHashMap;
use serde_json::json;

use crate::engine::clock::VectorClock;
use crate::engine::history::AccessHistory;
use crate::engine::paged::Paged;
use crate::race::hb::vc::HbClocks;
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Event, EventId, Op};

/// Streaming SHB detector (`--relation shb --engine vc`).
pub(crate) struct ShbDetector {
    clocks: HbClocks,
    history: AccessHistory,
    /// Per variable, the clock of its last write (None: none yet); a
    /// shared copy-on-write clock, so saving it is O(1).
    /// In pages freed when their variables are retired.
    last_write: Paged<Option<VectorClock>>,
    /// Variables a write touched only part of: the clock of the last write
    /// of each byte (their `last_write` entry is then unused).
    bytes: FxHashMap<u32, Box<[Option<VectorClock>; 8]>>,
    rf_joins: u64,
    report: Report,
}

impl ShbDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub(crate) fn new(window: Option<u64>) -> Self {
        ShbDetector {
            clocks: HbClocks::new(),
            history: AccessHistory::new(window),
            last_write: Paged::new(None),
            bytes: FxHashMap::default(),
            rf_joins: 0,
            report: Report::new(Relation::Shb, Engine::Vc, window, 0),
        }
    }

    /// Forgets variables no later event touches (see
    /// [`crate::engine::detector::Detector::retire`]): their access
    /// histories and the clocks of their last writes.
    pub(crate) fn retire(&mut self, vars: &[u32]) {
        self.history.retire(vars);
        self.clocks.retire(vars);
        for &v in vars {
            self.last_write.retire(v as usize, Option::is_some);
            self.bytes.remove(&v);
        }
    }

    /// Feed the next event.
    #[inline]
    pub(crate) fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let Some(clock) = self.clocks.event(ev) else {
            return;
        };
        let t = ev.thread;
        let row = self.clocks.row(t);
        let race = self.history.access(id, ev, clock, |u, c| row.get(u) >= c);
        if let Some(r) = race {
            self.report.push(r);
        }
        let x = ev.target as usize;
        let mask = ev.bytes();
        if ev.op.is_write() {
            let mut w = row.clone();
            if ev.op == Op::VolatileWrite {
                // Its row already ticked past it.
                w.set(t, clock);
            } else {
                self.clocks.tick_thread(t);
            }
            if mask == 0xff {
                if !self.bytes.is_empty() {
                    self.bytes.remove(&ev.target);
                }
                let (slot, live) = self.last_write.slot(x);
                if slot.is_none() {
                    *live += 1;
                }
                *slot = Some(w);
            } else {
                let whole = self.last_write.get(x).and_then(Option::as_ref);
                let per = self
                    .bytes
                    .entry(ev.target)
                    .or_insert_with(|| Box::new(std::array::from_fn(|_| whole.cloned())));
                for (b, slot) in per.iter_mut().enumerate() {
                    if mask >> b & 1 == 1 {
                        *slot = Some(w.clone());
                    }
                }
            }
            return;
        }
        // The read's reads-from edges, after its race check.
        let per = if self.bytes.is_empty() {
            None
        } else {
            self.bytes.get(&ev.target)
        };
        match per {
            Some(per) => {
                let mut joined: [Option<&VectorClock>; 8] = [None; 8];
                for (b, w) in per.iter().enumerate() {
                    if let Some(w) = w
                        && mask >> b & 1 == 1
                        && !joined.iter().flatten().any(|j| j.ptr_eq(w))
                    {
                        joined[b] = Some(w);
                        self.clocks.join_thread(t, w);
                        self.rf_joins += 1;
                    }
                }
            }
            None => {
                if let Some(Some(w)) = self.last_write.get(x) {
                    self.clocks.join_thread(t, w);
                    self.rf_joins += 1;
                }
            }
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

crate::impl_detector!(prefetch: ShbDetector);
