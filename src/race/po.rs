//! The `po` relation: thread (program) order only. Every conflicting pair of
//! accesses by different threads races (plain or atomic, bytes overlapping,
//! not both atomic: [`crate::trace::Event::conflicts`]). It is the upper bound all relations'
//! races lie in, and the smallest engine that exercises the whole pipeline.

use crate::engine::history::AccessHistory;
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Event, EventId};

/// Streaming program-order race checker.
pub(crate) struct ProgramOrder {
    history: AccessHistory,
    report: Report,
}

impl ProgramOrder {
    /// A checker pairing accesses less than `window` events apart.
    pub(crate) fn new(window: Option<u64>) -> Self {
        ProgramOrder {
            history: AccessHistory::new(window),
            report: Report::new(Relation::Po, Engine::Stream, window, 0),
        }
    }

    /// Feed the next event.
    pub(crate) fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        if ev.op.is_memory()
            && let Some(r) = self.history.access(id, ev, id, |_, _| false)
        {
            self.report.push(r);
        }
    }

    /// The finished report.
    pub(crate) fn finish(mut self) -> Report {
        self.report.normalize();
        self.report
    }
}
