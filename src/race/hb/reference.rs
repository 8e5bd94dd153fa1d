//! Reference happens-before: `rules/hb.dl` evaluated by crepe over every event.

use std::time::Instant;

use serde_json::json;

use crate::engine::reference::{Pairs, check_size, races};
use crate::facts::{Facts, Relations};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::Trace;

mod rules {
    include!(concat!(env!("OUT_DIR"), "/hb_rules.rs"));
}

/// The relations `rules/hb.dl` derives.
#[derive(Clone, Debug, Default)]
pub struct HbRelations {
    /// `PoNext(e, f)`: f is the next event of e's thread.
    pub po_next: Pairs,
    /// `HardEdge(x, y)`: fork -> child's first event, child's last event ->
    /// join, volatile write -> later volatile read of the same variable.
    pub hard_edges: Pairs,
    /// `HbEdge(x, y)`: the generating edges (program order, release ->
    /// later acquire of the same lock, hard edges).
    pub edges: Pairs,
    /// `Hb(x, y)`: happens-before, strict (x < y); read it reflexively.
    pub hb: Pairs,
}

impl HbRelations {}

/// Evaluate `rules/hb.dl` on the input relations of a trace.
pub fn derive(rel: &Relations) -> HbRelations {
    use rules::*;
    let mut rt = Crepe::new();
    crate::facts::feed!(rt, rel;
        trace_next => TraceNext,
        thread_for_event => ThreadForEvent,
        acq_event => AcqEvent,
        rel_event => RelEvent,
        volatile_read_event => VolatileReadEvent,
        volatile_write_event => VolatileWriteEvent,
        fork_event => ForkEvent,
        join_event => JoinEvent,
    );
    let (po_next, hard, edges, hb) = rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
    HbRelations {
        po_next: po_next.into_iter().map(|PoNext(a, b)| (a, b)).collect(),
        hard_edges: hard.into_iter().map(|HardEdge(a, b)| (a, b)).collect(),
        edges: edges.into_iter().map(|HbEdge(a, b)| (a, b)).collect(),
        hb: hb.into_iter().map(|Hb(a, b)| (a, b)).collect(),
    }
}

/// Derive HB for `trace` (building its facts and input relations first).
pub fn derive_trace(trace: &Trace) -> HbRelations {
    derive(&Relations::new(trace, &Facts::new(trace)))
}

/// `--relation hb --engine reference`: races are accesses with an earlier
/// conflicting access (within `window`) that does not happen before them.
pub fn analyze(trace: &Trace, window: Option<u64>) -> crate::Result<Report> {
    check_size(trace, Relation::Hb, Engine::Vc)?;
    let start = Instant::now();
    let r = derive_trace(trace);
    let mut report = Report::new(Relation::Hb, Engine::Reference, window, trace.len() as u64);
    report.races = races(trace, window, |x, y| r.hb.contains(&(x, y)));
    report.normalize();
    report.stats.insert("hb_edges".into(), json!(r.edges.len()));
    report.stats.insert("hb_pairs".into(), json!(r.hb.len()));
    report
        .stats
        .insert("hard_edges".into(), json!(r.hard_edges.len()));
    report.stats.insert(
        "seconds".into(),
        json!({"total": start.elapsed().as_secs_f64()}),
    );
    Ok(report)
}
