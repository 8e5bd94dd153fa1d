//! Witness reorderings for reported races (`analyze --witness`) and their
//! independent check (`cprace verify`).
//!
//! For a race (e1, e2) the witness is the sync-preserving closure of the two
//! events' thread predecessors ([`closure`]), in trace order, when it holds
//! neither event: a correct reordering prefix after which both are enabled.
//! For `shb` and `syncp` every race has one (their soundness theorems; the
//! tests check it); for `hb`, `cp` and `wcp` races it is tried and may be
//! missing. [`verify`] checks a witness against the trace alone.

pub(crate) mod closure;
pub mod deadlock;
pub(crate) mod search;
pub mod verify;

use std::io::Write;
use std::path::Path;

use crate::relation::Relation;
use crate::report::tsan::WitnessRun;
use crate::report::{Race, Report};
use crate::trace::recorded::StackEntry;
use crate::trace::{EventId, Op, ThreadId, Trace};
use crate::{Error, Result};

pub(crate) use closure::Closure;
pub(crate) use closure::TraceIndex;

/// Fill `report.witnesses` (one per race) and add notes saying what was found.
///
/// Each race first gets the sync-preserving closure of its two events; when
/// that holds one of them and the trace is small, a bounded search for a
/// reordering that swaps critical sections ([`search`]) follows.
pub fn attach(report: &mut Report, trace: &Trace) {
    attach_to(report, trace, None)
}

/// [`attach`] for the races whose racy (second) event `only` holds, when
/// given (the races a report shows): the others get no witness and are not
/// counted in the note. A trace with hundreds of thousands of racy events
/// and a few location pairs is shown in a few races.
pub fn attach_to(
    report: &mut Report,
    trace: &Trace,
    only: Option<&rustc_hash::FxHashSet<EventId>>,
) {
    let idx = TraceIndex::new(trace);
    let mut searched = (0usize, 0usize); // found by search, proven absent
    let mut first_missing: Option<(usize, search::Search)> = None;
    let mut ws: Vec<Option<Vec<EventId>>> = Vec::with_capacity(report.races.len());
    let mut total = 0;
    for (i, r) in report.races.iter().enumerate() {
        let (e1, e2) = (r.first.id, r.second.id);
        if only.is_some_and(|o| !o.contains(&e2)) {
            ws.push(None);
            continue;
        }
        total += 1;
        let mut w = closure::witness(&idx, trace.num_locks(), e1, e2);
        if w.is_none() {
            let s = if search::applicable(trace, e2) {
                search::search(trace, &idx, e1, e2, search::BUDGET)
            } else {
                search::Search::Budget
            };
            match &s {
                search::Search::Found(p) => {
                    searched.0 += 1;
                    w = Some(p.clone());
                }
                search::Search::None => searched.1 += 1,
                search::Search::Budget => {}
            }
            if w.is_none() && first_missing.is_none() {
                first_missing = Some((i, s));
            }
        }
        ws.push(w);
    }
    let found = ws.iter().filter(|w| w.is_some()).count();
    let shown = if only.is_some() { " shown" } else { "" };
    if total > 0 {
        report.notes.push(format!(
            "witnesses: {found} of {total} races{shown} have a witness reordering ({} of them reorder critical sections); \
             check them with `cprace verify`",
            searched.0
        ));
    }
    if let Some((i, s)) = first_missing {
        let r = &report.races[i];
        let rel = report.relation;
        let why = match (&s, rel, i) {
            (search::Search::None, Relation::Hb | Relation::Cp | Relation::Wcp, 0) => {
                // The theorems leave out pasts holding a relaxed atomic pair
                // HB leaves unordered (docs/src/semantic-decisions.md): with
                // no relaxed access in the trace there is none.
                let relaxed = trace
                    .events
                    .iter()
                    .any(|e| matches!(e.op, Op::AtomicRead | Op::AtomicWrite));
                format!(
                    "; no correct reordering exhibits it, and it is the first race, so by the {} soundness theorem \
                     the trace has a predictable deadlock{}",
                    rel.name().to_uppercase(),
                    if relaxed {
                        ", or the race's past holds relaxed atomic accesses that happens-before leaves \
                         unordered with another thread's atomic access, which the theorem does not cover"
                    } else {
                        ""
                    }
                )
            }
            (search::Search::None, _, _) => {
                "; no correct reordering exhibits it (a race after the first may be a consequence of an earlier one)"
                    .to_string()
            }
            _ => "; the search for one that reorders critical sections was not run to the end (trace too large)"
                .to_string(),
        };
        report.notes.push(format!(
            "the first race without a witness is ({}, {}){why}",
            r.first.id, r.second.id
        ));
    }
    report.witnesses = Some(ws);
}

/// How [`runs`] names what it shows: a thread (`thread T1`), an event's
/// site (`a.c:7 in f`) and its innermost frame, when the trace kept stacks.
pub struct RunNames<'a> {
    /// A thread as the report names it.
    pub who: &'a dyn Fn(ThreadId) -> String,
    /// Where an event is.
    pub site: &'a dyn Fn(EventId) -> String,
    /// An event's innermost frame.
    pub top: &'a dyn Fn(EventId) -> Option<StackEntry>,
}

/// Witness `w` of race `r` as the steps a reader follows: each maximal
/// stretch of one thread's events ("T1 runs to a.c:7"), in order, then the
/// two racy accesses, each alone.
pub fn runs(trace: &Trace, w: &[EventId], r: &Race, n: &RunNames) -> Vec<WitnessRun> {
    let thread = |e: EventId| trace.events[e as usize].thread;
    let run = |events: &[EventId], text: String| {
        let last = *events.last().expect("a run has events");
        let t = thread(last);
        WitnessRun {
            thread: (n.who)(t),
            thread_id: trace.names.thread(t).to_string(),
            events: events.to_vec(),
            loc: trace.events[last as usize].loc,
            top: (n.top)(last),
            text,
        }
    };
    let mut out: Vec<WitnessRun> = Vec::new();
    for stretch in w.chunk_by(|&a, &b| thread(a) == thread(b)) {
        let text = format!(
            "{}. {} runs to {} ({} {})",
            out.len() + 1,
            (n.who)(thread(stretch[0])),
            (n.site)(*stretch.last().expect("chunks are not empty")),
            if stretch.len() == 1 {
                "event"
            } else {
                "events"
            },
            crate::report::text::ranges(stretch)
        );
        out.push(run(stretch, text));
    }
    for a in [r.first, r.second] {
        let text = format!("{} at {}", (n.who)(a.thread), (n.site)(a.id));
        out.push(run(&[a.id], text));
    }
    out
}

/// `--witness-out DIR`: one STD file per race with a witness,
/// `race-E1-E2.std`, holding the witness events then e1 and e2.
pub(crate) fn write_dir(report: &Report, trace: &Trace, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir).map_err(Error::io(format!("cannot create {}", dir.display())))?;
    let Some(ws) = &report.witnesses else {
        return Ok(0);
    };
    let mut written = 0;
    for (r, w) in report.races.iter().zip(ws) {
        let Some(w) = w else { continue };
        let mut t = Trace {
            events: Vec::with_capacity(w.len() + 2),
            names: trace.names.clone(),
            stats: Default::default(),
        };
        t.events.extend(
            w.iter()
                .chain([&r.first.id, &r.second.id])
                .map(|&e| trace.events[e as usize]),
        );
        let path = dir.join(format!("race-{}-{}.std", r.first.id, r.second.id));
        let mut buf = Vec::new();
        crate::trace::std_format::write(&t, &mut buf)?;
        // Write to a temporary file and rename, so an existing file is only
        // replaced by a complete one.
        let tmp = dir.join(format!(".race-{}-{}.std.tmp", r.first.id, r.second.id));
        std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&buf))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(Error::io(format!("cannot write {}", path.display())))?;
        written += 1;
    }
    Ok(written)
}
