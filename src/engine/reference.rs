//! What the reference engines share (`race::hb::reference`,
//! `race::cp::reference`): the literal Datalog rules of `rules/hb.dl` and
//! `rules/cp.dl`, compiled into crepe programs by build.rs and evaluated over
//! every event of a trace.
//!
//! They are quadratic (HB and CP are materialised as sets of event pairs) and
//! exist to be obviously right, not fast: the optimized engines are checked
//! against them. Races are decided by [`AccessHistory`] with the derived
//! relation as the ordering test, so witnesses match every other exact engine.

use rustc_hash::FxHashSet;

use crate::engine::history::AccessHistory;
use crate::relation::{Engine, Relation};
use crate::report::{Race, Report};
use crate::trace::{EventId, Trace};

/// Longest trace the reference engines accept: their relations grow with the
/// square of the trace length.
pub const MAX_EVENTS: usize = 2000;

/// A derived relation: ordered pairs of event ids `(x, y)`, always `x < y`.
pub type Pairs = FxHashSet<(EventId, EventId)>;

/// Refuse traces longer than [`MAX_EVENTS`] with a usage error naming the
/// fast engine `fast`.
pub(crate) fn check_size(trace: &Trace, relation: Relation, fast: Engine) -> crate::Result<()> {
    if trace.len() > MAX_EVENTS {
        return Err(crate::Error::Usage(format!(
            "the reference engine of `{relation}` materialises quadratic relations and accepts traces of at most \
             {MAX_EVENTS} events, but this trace has {}; use a fast engine instead (--engine {fast})",
            trace.len()
        )));
    }
    Ok(())
}

/// The race witnesses of `trace` under an ordering: `ordered(e1, e2)` tells
/// whether access `e1` is ordered before the later access `e2` of another
/// thread (every access, plain or atomic, is checked). Event ids serve as
/// the history's clocks.
pub fn races(
    trace: &Trace,
    window: Option<u64>,
    ordered: impl Fn(EventId, EventId) -> bool,
) -> Vec<Race> {
    let mut history = AccessHistory::new(window);
    let mut out = Vec::new();
    for (i, ev) in trace.events.iter().enumerate() {
        let id = i as EventId;
        if ev.op.is_memory()
            && let Some(r) = history.access(id, ev, id, |_, e1| ordered(e1, id))
        {
            out.push(r);
        }
    }
    out
}

/// Compare two reports on their racy events and witnesses. `Err` names the
/// first (smallest) event on which they differ, with both engines' views.
pub fn compare(a: &Report, b: &Report) -> Result<(), String> {
    let name = |r: &Report| format!("{}/{}", r.relation, r.engine);
    if a.window != b.window {
        return Err(format!(
            "{} uses window {} but {} uses window {}",
            name(a),
            show_window(a.window),
            name(b),
            show_window(b.window)
        ));
    }
    if a.max_distance != b.max_distance {
        return Err(format!(
            "{} reports pairs within {} but {} within {}",
            name(a),
            show_window(a.max_distance),
            name(b),
            show_window(b.max_distance)
        ));
    }
    let mut ra: Vec<&Race> = a.races.iter().collect();
    let mut rb: Vec<&Race> = b.races.iter().collect();
    ra.sort_by_key(|r| (r.second.id, r.first.id));
    rb.sort_by_key(|r| (r.second.id, r.first.id));
    ra.dedup_by_key(|r| r.second.id);
    rb.dedup_by_key(|r| r.second.id);
    let (mut i, mut j) = (0, 0);
    loop {
        let (x, y) = (ra.get(i), rb.get(j));
        let diff = match (x, y) {
            (None, None) => return Ok(()),
            (Some(x), Some(y)) if x.second.id == y.second.id => {
                i += 1;
                j += 1;
                if x.first.id == y.first.id {
                    continue;
                }
                (x.second.id, view(Some(x)), view(Some(y)))
            }
            (Some(x), Some(y)) if x.second.id < y.second.id => {
                (x.second.id, view(Some(x)), view(None))
            }
            (Some(_), Some(y)) => (y.second.id, view(None), view(Some(y))),
            (Some(x), None) => (x.second.id, view(Some(x)), view(None)),
            (None, Some(y)) => (y.second.id, view(None), view(Some(y))),
        };
        let (event, va, vb) = diff;
        return Err(format!(
            "engines disagree on event {event}: {} says {va}; {} says {vb}",
            name(a),
            name(b)
        ));
    }
}

fn view(r: Option<&Race>) -> String {
    match r {
        None => "not racy".to_string(),
        Some(r) => format!(
            "racy ({} with event {} of thread {} on variable {})",
            r.kind(),
            r.first.id,
            r.first.thread,
            r.variable
        ),
    }
}

fn show_window(w: Option<u64>) -> String {
    w.map_or("none".to_string(), |k| k.to_string())
}
