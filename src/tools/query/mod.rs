//! `cprace query`: dump a derived relation among synchronization events, dump
//! the CP paper's input facts, and explain why two events are (not) ordered.
//!
//! Each relation plugs in as a [`QueryEngine`]: a dump function (base edges,
//! if the relation has any, then the derived pairs, both streamed to a
//! [`DumpSink`], see [`dump`]) and an explain function returning an
//! [`Answer`] ([`explain`]) whose witness chain is made of [`Step`]s a person
//! can check against the trace, printed as text or JSON by [`render`].
//! [`engine`] maps a [`Relation`] to its engine; a new relation adds one
//! match arm. [`export`] writes the CP paper's input facts.

pub(crate) mod cp;
mod dump;
mod explain;
pub mod export;
pub(crate) mod hb;
pub(crate) mod hbpath;
mod render;
pub(crate) mod wcp;

use std::io::{self, Write};

use crate::relation::Relation;
use crate::trace::{EventId, Op, Trace};

pub(crate) use dump::clock_pairs;
pub use dump::{CSV_COLUMNS, DumpFormat, DumpSink, write_dump};
pub use explain::{Answer, CpEdge, Dropped, Justification, Kind, Step, WcpEdge};
pub(crate) use render::{hb_only_text, show};

/// A relation `cprace query` can dump and explain.
pub trait QueryEngine {
    /// The relation (hb, shb, cp, wcp).
    fn relation(&self) -> Relation;
    /// The window K the relation was computed with (None: whole trace).
    fn window(&self) -> Option<u64>;
    /// Number of synchronization events (see [`is_sync_event`]).
    fn sync_events(&self) -> usize;
    /// Whether the relation has base edges to dump before its pairs.
    fn has_base_edges(&self) -> bool;
    /// Stream the base edges (sorted by `(from, to)`), then the derived pairs
    /// among synchronization events less than K apart (sorted by `(from, to)`).
    fn dump(&self, sink: &mut dyn DumpSink) -> io::Result<()>;
    /// Whether `e1` is ordered before `e2`, with a witness chain. Both must be
    /// valid event ids (see [`check_event`]).
    fn explain(&self, e1: EventId, e2: EventId) -> Answer;
}

/// The query engine of `relation` over `trace` with window `window`.
pub fn engine<'a>(
    trace: &'a Trace,
    relation: Relation,
    window: Option<u64>,
) -> crate::Result<Box<dyn QueryEngine + 'a>> {
    match relation {
        Relation::Hb => Ok(Box::new(hb::HbQuery::new(trace, window))),
        Relation::Cp => Ok(Box::new(cp::CpQuery::new(trace, window))),
        Relation::Wcp => Ok(Box::new(wcp::WcpQuery::new(trace, window))),
        Relation::Shb => Ok(Box::new(hb::HbQuery::shb(trace, window))),
        Relation::Po => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb (po is thread order only: \
             e1 is ordered before e2 exactly when both are events of one thread and e1 comes first)"
                .into(),
        )),
        Relation::Deadlock => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb".into(),
        )),
        Relation::Lockset => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb (lockset is a discipline check, not an order)".into(),
        )),
        Relation::Syncp => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb; syncp is not an order between \
             events (a pair is a sync-preserving race when some reordering exhibits it), so there is \
             nothing to dump or explain: `cprace analyze --relation syncp --witness` gives each race \
             such a reordering (check it with `cprace verify`)"
                .into(),
        )),
    }
}

/// Synchronization events: acquires, releases, forks, joins and volatile
/// accesses (re-entrant acquires and releases are not: every analysis ignores
/// them). The dumps relate exactly these events.
pub fn is_sync_event(op: Op) -> bool {
    matches!(
        op,
        Op::Acquire | Op::Release | Op::Fork | Op::Join | Op::VolatileRead | Op::VolatileWrite
    )
}

/// A usage error unless `e` is an event id of `trace`.
pub(crate) fn check_event(trace: &Trace, e: u64) -> crate::Result<EventId> {
    if e < trace.len() as u64 {
        return Ok(e as EventId);
    }
    Err(crate::Error::Usage(if trace.is_empty() {
        format!("event {e} is not in the trace: it has no events")
    } else {
        format!(
            "event {e} is not in the trace: it has {} events (ids 0 to {})",
            trace.len(),
            trace.len() - 1
        )
    }))
}

/// Whether `x`, `y` are conflicting volatile accesses of different threads
/// (same variable, at least one a write): a hard CP/WCP edge when `x` is first.
pub(crate) fn volatile_conflict(x: &crate::trace::Event, y: &crate::trace::Event) -> bool {
    let vol = |op: Op| matches!(op, Op::VolatileRead | Op::VolatileWrite);
    vol(x.op)
        && vol(y.op)
        && x.target == y.target
        && x.thread != y.thread
        && (x.op == Op::VolatileWrite || y.op == Op::VolatileWrite)
}

/// Whether `x` before `y` is a pair CP and WCP give an edge to when HBv
/// orders it: atomic accesses of one variable by different threads, at
/// least one a write and one relaxed (`ar`, `aw`).
pub(crate) fn relaxed_pair(x: &crate::trace::Event, y: &crate::trace::Event) -> bool {
    let relaxed = |op: Op| matches!(op, Op::AtomicRead | Op::AtomicWrite);
    x.op.is_atomic()
        && y.op.is_atomic()
        && x.target == y.target
        && x.thread != y.thread
        && (x.op.is_write() || y.op.is_write())
        && (relaxed(x.op) || relaxed(y.op))
}

/// What `cprace query` was asked.
#[derive(Clone, Debug)]
pub enum Request {
    /// Dump the relation.
    Dump(DumpFormat),
    /// Explain one pair; `json` selects JSON over text.
    Pair {
        /// E1 as given.
        from: u64,
        /// E2 as given.
        to: u64,
        /// JSON output.
        json: bool,
    },
}

/// Run a relation query on a loaded trace, writing to `out`.
pub fn run(
    trace: &Trace,
    relation: Relation,
    window: Option<u64>,
    request: &Request,
    out: &mut dyn Write,
) -> crate::Result<()> {
    match *request {
        Request::Pair { from, to, json } => {
            // Check the events before computing anything.
            let (e1, e2) = (check_event(trace, from)?, check_event(trace, to)?);
            let answer = engine(trace, relation, window)?.explain(e1, e2);
            if json {
                serde_json::to_writer_pretty(&mut *out, &answer.to_json(trace))
                    .map_err(io::Error::from)?;
                writeln!(out)?;
            } else {
                answer.write_text(trace, out)?;
            }
        }
        Request::Dump(format) => {
            let engine = engine(trace, relation, window)?;
            write_dump(trace, engine.as_ref(), format, out)?;
        }
    }
    Ok(())
}
