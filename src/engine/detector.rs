//! Streaming detectors and the two-thread pipeline that feeds them.
//!
//! Parsing and the cheap streaming engines cost about the same per event, so on
//! two cores the parser runs on the calling thread and the detector on a second
//! one, connected by a bounded channel of recycled event chunks. Results are
//! identical to a sequential pass (the detector sees the same events in the
//! same order); memory stays a few megabytes beyond the detector's own state.

use std::path::Path;
use std::sync::mpsc::sync_channel;

use crate::report::{Keep, Report};
use crate::trace::{self, Event, EventId, Format, LoadError, Names, Trace};

/// A streaming race detector: fed every event in trace order, then finished.
pub trait Detector {
    /// Feed event `id` (ids are consecutive from 0).
    fn event(&mut self, id: EventId, ev: &Event);
    /// The normalized report.
    fn finish(self) -> Report;
    /// The report being filled (to choose where its races go before the run).
    fn report_mut(&mut self) -> &mut Report;
    /// Events the parser may run ahead of the detector: a detector that
    /// works in batches (windowed CP's stretches) needs a batch's worth, or
    /// parsing waits while it works.
    fn lookahead(&self) -> usize {
        4 * CHUNK
    }
    /// A hint that event `ev` comes sixteen events from now: a detector may
    /// start loading the state it will touch (per-variable state of
    /// millions of variables misses the caches).
    #[inline]
    fn prefetch(&self, _ev: &Event) {}
    /// The second hint, eight events ahead: state reached through what
    /// [`Detector::prefetch`] loaded (by then in the cache) may be loaded.
    #[inline]
    fn prefetch_near(&self, _ev: &Event) {}
    /// No event from now on touches the variables `vars` (a recorded
    /// program's memory allocated again: see
    /// [`crate::trace::cprace_bin::RETIRE`]): what is kept for them may go.
    /// Told after the events before the retirement, perhaps some after it.
    fn retire(&mut self, _vars: &[u32]) {}
}

/// Events ahead of the one being fed whose state is prefetched (and half
/// as many for [`Detector::prefetch_near`]).
const PREFETCH_AHEAD: usize = 16;

/// Hints to `far` the event [`PREFETCH_AHEAD`] events after `events[i]`
/// and to `near` the one half as many after it: the two steps of a
/// lookup whose second load needs the first one's result (a variable's
/// head, then its stamps).
#[inline(always)]
pub(crate) fn prefetch_ahead(
    events: &[Event],
    i: usize,
    far: impl FnOnce(&Event),
    near: impl FnOnce(&Event),
) {
    if let Some(e) = events.get(i + PREFETCH_AHEAD) {
        far(e);
    }
    if let Some(e) = events.get(i + PREFETCH_AHEAD / 2) {
        near(e);
    }
}

/// Implement [`Detector`] for types with inherent `event` and `finish`
/// methods and a `report` field (after `prefetch:`, also an
/// [`crate::engine::history::AccessHistory`] field `history`, whose
/// entries they prefetch).
#[macro_export]
macro_rules! impl_detector {
    (prefetch: $($t:ty),* $(,)?) => {$(
        $crate::impl_detector!(@one $t,
            #[inline]
            fn prefetch(&self, ev: &$crate::trace::Event) {
                self.history.prefetch(ev)
            }
            #[inline]
            fn prefetch_near(&self, ev: &$crate::trace::Event) {
                self.history.prefetch_stamps(ev)
            }
            fn retire(&mut self, vars: &[u32]) {
                <$t>::retire(self, vars)
            }
        );
    )*};
    (@one $t:ty, $($extra:tt)*) => {
        impl $crate::engine::detector::Detector for $t {
            fn event(&mut self, id: $crate::trace::EventId, ev: &$crate::trace::Event) {
                <$t>::event(self, id, ev)
            }
            fn finish(self) -> $crate::report::Report {
                <$t>::finish(self)
            }
            fn report_mut(&mut self) -> &mut $crate::report::Report {
                &mut self.report
            }
            $($extra)*
        }
    };
    ($($t:ty),* $(,)?) => {$(
        $crate::impl_detector!(@one $t,);
    )*};
}

/// Events per chunk handed from the parser to the detector thread.
const CHUNK: usize = 1 << 14;

/// What feeds a streaming detector its events without a trace file of
/// its own: a trace read from a path, or a recording lowered in memory.
pub(crate) trait Feed {
    /// What errors name as the input.
    fn name(&self) -> String;
    /// Hands `sink` every event in trace order and `retire` the variables
    /// each retirement retires (between the events before it and those
    /// after), and returns the trace's names.
    fn feed<S: FnMut(EventId, &Event)>(
        self,
        sink: S,
        retire: trace::cprace_bin::Retire<'_>,
    ) -> Result<Names, LoadError>;
}

/// A trace file as a [`Feed`].
pub(crate) struct FromPath<'a> {
    /// The file (`-`: standard input).
    pub path: &'a Path,
    /// Its format, None to detect it.
    pub format: Option<Format>,
}

impl Feed for FromPath<'_> {
    fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
    fn feed<S: FnMut(EventId, &Event)>(
        self,
        sink: S,
        retire: trace::cprace_bin::Retire<'_>,
    ) -> Result<Names, LoadError> {
        trace::stream_retiring(self.path, self.format, sink, retire).map(|(names, _, _)| names)
    }
}

/// Run `d` over the events `feed` makes (a trace file's: parsed here):
/// fed here, detected on a second thread. `keep` says where the races go
/// as they are found: memory, a temporary file, or only their counts (see
/// [`crate::report::Keep`]).
pub(crate) fn run_fed<D: Detector + Send>(
    mut d: D,
    feed: impl Feed,
    keep: Keep,
) -> Result<(Report, Names), LoadError> {
    d.report_mut()
        .keep_races(keep)
        .map_err(|e| LoadError::new(&feed.name(), 0, b"", e.to_string()))?;
    // A channel preallocates its slots: at most 256 chunks (64 MB) ahead.
    let chunks = d.lookahead().div_ceil(CHUNK).clamp(1, 256);
    // A chunk: events, and the variables retired while they were read
    // (told to the detector after them: no later event touches them).
    let (full_tx, full_rx) = sync_channel::<(Vec<Event>, Vec<u32>)>(chunks);
    let (empty_tx, empty_rx) = sync_channel::<(Vec<Event>, Vec<u32>)>(chunks + 4);
    std::thread::scope(|s| {
        let worker = s.spawn(move || {
            let mut d = d;
            let mut id: EventId = 0;
            for (mut chunk, mut retired) in full_rx {
                for (i, ev) in chunk.iter().enumerate() {
                    prefetch_ahead(&chunk, i, |e| d.prefetch(e), |e| d.prefetch_near(e));
                    d.event(id, ev);
                    id = id.wrapping_add(1);
                }
                if !retired.is_empty() {
                    d.retire(&retired);
                }
                chunk.clear();
                retired.clear();
                // The parser may be gone (error or end); then the buffer is dropped.
                let _ = empty_tx.try_send((chunk, retired));
            }
            d.finish()
        });
        let mut buf: Vec<Event> = Vec::with_capacity(CHUNK);
        // Shared by the two closures below (one borrows it at a time).
        let retired = std::cell::RefCell::new(Vec::new());
        let parsed = feed.feed(
            |_, ev| {
                buf.push(*ev);
                if buf.len() == CHUNK {
                    let (next, next_retired) = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| (Vec::with_capacity(CHUNK), Vec::new()));
                    let r = retired.replace(next_retired);
                    // The worker only stops when this sender is dropped, so the send succeeds.
                    let _ = full_tx.send((std::mem::replace(&mut buf, next), r));
                }
            },
            &mut |vars| retired.borrow_mut().extend_from_slice(vars),
        );
        if !buf.is_empty() || !retired.borrow().is_empty() {
            let _ = full_tx.send((buf, retired.take()));
        }
        drop(full_tx);
        let report = worker
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        parsed.map(|names| (report, names))
    })
}

/// Run `d` over an in-memory trace.
pub fn run_trace<D: Detector>(mut d: D, trace: &Trace) -> Report {
    for (i, ev) in trace.events.iter().enumerate() {
        d.event(i as EventId, ev);
    }
    d.finish()
}
