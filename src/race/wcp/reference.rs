//! The `reference` WCP engine: Definition 3 of wcp-2017 evaluated literally as
//! Datalog (`rules/wcp.dl`, compiled by crepe), over every pair of events.
//!
//! Only the rules live in Datalog; the inputs are the plain facts of
//! [`crate::facts::Relations`]. Races are then read off the derived relation by
//! the most direct scan possible: for every access `e2`, the latest earlier
//! conflicting access `e1` (within the window) with no `Wcp(e1, e2)` fact is the
//! witness. This deliberately shares no code with the vector-clock engine or
//! [`crate::engine::history`], so tests comparing the two check both.
//!
//! Cost: the closures are cubic in the trace length; meant for traces of a few
//! hundred events (tests, paper figures). `cprace analyze` refuses traces longer
//! than [`MAX_EVENTS`].

use rustc_hash::FxHashSet;
use serde_json::json;

use crate::facts::{Facts, Relations};
use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{EventId, Trace};

/// Longest trace the command line lets this engine analyse (the reference
/// engines' one limit).
pub use crate::engine::reference::MAX_EVENTS;

#[allow(clippy::all, dead_code, unused_parens)]
mod rules {
    include!(concat!(env!("OUT_DIR"), "/wcp_rules.rs"));

    /// Evaluate the program; returns (WCP pairs, strict HBv pairs).
    pub(super) fn run(r: &crate::facts::Relations) -> (Vec<(u32, u32)>, Vec<(u32, u32)>) {
        let mut rt = Crepe::new();
        crate::facts::feed_sections!(rt, r);
        crate::facts::feed!(rt, r; fork_join_edge => ForkJoinEdge);
        let (hbv, wcp) = rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
        (
            wcp.into_iter().map(|Wcp(a, b)| (a, b)).collect(),
            hbv.into_iter().map(|Hbv(a, b)| (a, b)).collect(),
        )
    }
}

/// The relations the reference derives for a trace.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Strict WCP: `(a, b)` when `a ≺WCP b`.
    pub wcp: FxHashSet<(EventId, EventId)>,
    /// Strict HBv: happens-before with the hard fork/join edges and every
    /// pair of atomic accesses of a variable by different threads, at least
    /// one a write (what WCP composes with).
    pub hbv: FxHashSet<(EventId, EventId)>,
}

/// Derive WCP and HBv for `trace` by evaluating `rules/wcp.dl`.
pub fn derive(trace: &Trace) -> Derived {
    let facts = Facts::new(trace);
    let rel = Relations::new(trace, &facts);
    let (wcp, hbv) = rules::run(&rel);
    Derived {
        wcp: wcp.into_iter().collect(),
        hbv: hbv.into_iter().collect(),
    }
}

/// Whether `a` and `b` conflict ([`crate::trace::Event::conflicts`]: same
/// variable and bytes, different threads, at least one a write, not both
/// atomic).
fn conflicting(trace: &Trace, a: EventId, b: EventId) -> bool {
    trace.events[a as usize].conflicts(&trace.events[b as usize])
}

/// Races of `trace` under the derived relation `wcp` (≤WCP = WCP ∪ thread order):
/// one witness per racy access, the latest unordered earlier conflicting access
/// less than `window` events before it.
pub fn races(trace: &Trace, wcp: &FxHashSet<(EventId, EventId)>, window: Option<u64>) -> Vec<Race> {
    let mut out = Vec::new();
    for (i, ev) in trace.events.iter().enumerate() {
        if !ev.op.is_memory() {
            continue;
        }
        let e2 = i as EventId;
        let lowest = window.map_or(0, |k| (e2 as u64 + 1).saturating_sub(k)) as EventId;
        for e1 in (lowest..e2).rev() {
            if conflicting(trace, e1, e2) && !wcp.contains(&(e1, e2)) {
                out.push(Race {
                    first: Access::of(e1, &trace.events[e1 as usize]),
                    second: Access::of(e2, ev),
                    variable: ev.target,
                });
                break;
            }
        }
    }
    out
}

/// Analyse `trace` with the reference engine.
pub fn analyze(trace: &Trace, window: Option<u64>) -> Report {
    let d = derive(trace);
    let mut report = Report::new(Relation::Wcp, Engine::Reference, window, trace.len() as u64);
    report.races = races(trace, &d.wcp, window);
    report.normalize();
    report.stats.insert("wcp_pairs".into(), json!(d.wcp.len()));
    report.stats.insert("hbv_pairs".into(), json!(d.hbv.len()));
    report
}
