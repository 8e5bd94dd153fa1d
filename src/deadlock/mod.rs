//! Deadlocks: the ones that happened, the ones a reordering of the trace
//! reaches, and the lock-order inversions (potential deadlocks), found in one
//! streaming pass with per-thread, per-lock and per-window state.
//!
//! - [`graph`]: the lock graph, with edges through joins (critical sections
//!   that span threads);
//! - [`patterns`]: its cycles with distinct threads and disjoint held sets
//!   (deadlock patterns), and every cycle of locks for `--all`;
//! - [`window`] and [`spd`]: sync-preserving deadlock prediction over the
//!   last W events;
//! - [`engine`]: one pass feeding them all; [`analyze_path`] and
//!   [`analyze_trace`] run it on a file or a loaded trace.

pub(crate) mod engine;
pub(crate) mod graph;
pub(crate) mod patterns;
pub mod shapes;
pub(crate) mod spd;
pub(crate) mod window;

use std::path::Path;

use crate::Result;
use crate::relation::Relation;
use crate::report::Report;
use crate::trace::{EventId, Format, Names, Trace};

pub use engine::{DEFAULT_WINDOW, Engine, Findings, Options};

/// The report of `findings` on a trace of `events` events.
fn report(findings: Findings, opts: &Options, events: u64) -> Report {
    let mut r = Report::new(
        Relation::Deadlock,
        crate::relation::Engine::Spd,
        opts.window,
        events,
    );
    for (k, v) in &findings.stats {
        r.stats.insert((*k).to_string(), (*v).into());
    }
    let predicted = findings
        .deadlocks
        .iter()
        .filter(|d| d.kind == crate::report::DeadlockKind::Predicted)
        .count();
    let inversions = findings
        .deadlocks
        .iter()
        .filter(|d| d.kind == crate::report::DeadlockKind::Inversion)
        .count();
    if predicted > 0 {
        r.notes.push(
            "a predicted deadlock is reached by a correct reordering of the trace that keeps every lock's critical sections in order (--witness lists it; `cprace verify` checks it)"
                .into(),
        );
    }
    if inversions > 0 {
        r.notes.push(
            "a lock-order inversion is a potential deadlock: a cycle in the lock-order graph that no sync-preserving reordering was found to reach"
                .into(),
        );
    }
    if findings.truncated {
        let l = opts.limits;
        r.notes.push(format!(
            "the lock graph has more cycles than searched (at most {} patterns, {} edges a cycle, {} search steps an edge): some deadlocks may be missing",
            l.max_patterns, l.max_len, l.budget
        ));
    }
    if findings.out_of_steps {
        r.notes.push(format!(
            "deciding deadlock patterns stopped after {} closure steps: the patterns left undecided are listed as lock-order inversions",
            opts.limits.closure_budget
        ));
    }
    r.deadlocks = findings.deadlocks;
    r
}

/// Stream `path` through the engine: the report and the names.
pub fn analyze_path(
    path: &Path,
    format: Option<Format>,
    opts: &Options,
) -> Result<(Report, Names)> {
    crate::progress::phase("deadlocks");
    let mut e = Engine::new(*opts);
    let mut n = 0u64;
    let (names, _, _) = crate::trace::stream(path, format, |id, ev| {
        e.event(id, ev);
        n += 1;
    })?;
    let findings = e.finish(&names);
    Ok((report(findings, opts, n), names))
}

/// Analyze a loaded trace, with witnesses for actual and predicted deadlocks.
pub fn analyze_trace(t: &Trace, opts: &Options) -> Report {
    let mut e = Engine::new(*opts);
    for (i, ev) in t.events.iter().enumerate() {
        e.event(i as EventId, ev);
    }
    let findings = e.finish(&t.names);
    let cuts = findings.cuts.clone();
    let mut r = report(findings, opts, t.len() as u64);
    attach_witnesses(&mut r, t, &cuts);
    r
}

/// Fill the witnesses: a predicted deadlock's is its closure (every event
/// before its thread's cut, in trace order); an actual deadlock's the
/// sync-preserving closure of what precedes its blocked requests.
fn attach_witnesses(r: &mut Report, t: &Trace, cuts: &[Vec<u32>]) {
    use crate::report::DeadlockKind;
    let mut cuts = cuts.iter();
    let idx = crate::witness::TraceIndex::new(t);
    for d in &mut r.deadlocks {
        match d.kind {
            DeadlockKind::Predicted => {
                let Some(cut) = cuts.next() else { continue };
                d.witness = Some(events_before(t, cut));
            }
            DeadlockKind::Actual => {
                let mut c = crate::witness::Closure::new(idx.num_threads(), t.num_locks());
                let ok = d.events().iter().all(|&e| c.extend_pred(&idx, e).is_ok());
                d.witness = ok.then(|| c.events(&idx));
            }
            DeadlockKind::Inversion => {}
        }
    }
}

/// The events of `t` before `cut` in their thread, in trace order.
fn events_before(t: &Trace, cut: &[u32]) -> Vec<EventId> {
    let mut seen = vec![0u32; t.num_threads()];
    let mut v = Vec::new();
    for (i, ev) in t.events.iter().enumerate() {
        let th = ev.thread as usize;
        if seen[th] < cut.get(th).copied().unwrap_or(0) {
            v.push(i as EventId);
        }
        seen[th] += 1;
    }
    v
}
