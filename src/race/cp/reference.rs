//! Reference causally-precedes: `rules/cp.dl` evaluated by crepe over every
//! event, on top of the HB that `rules/hb.dl` derives.

use std::time::Instant;

use serde_json::json;

use crate::engine::reference::{Pairs, check_size, races};
use crate::facts::{Facts, Relations};
use crate::race::hb::reference::{self as hb, HbRelations};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Op, Trace};

mod rules {
    include!(concat!(env!("OUT_DIR"), "/cp_rules.rs"));
}

/// The relations `rules/cp.dl` derives, with the HB they were derived from.
#[derive(Clone, Debug, Default)]
pub struct CpRelations {
    /// HB and its generating edges (`rules/hb.dl`).
    pub hb: HbRelations,
    /// `VolatileEdge(x, y)`: synchronizing atomic accesses (`vr`, `vw`; not
    /// relaxed `ar`, `aw`) of one variable by different threads, at least
    /// one a write, x < y; hard CP edges and HBv's extra generating edges.
    pub volatile_edges: Pairs,
    /// `Hbv(x, y)`: HB plus the volatile edges, strict (x < y); CP composes
    /// with it and the window rule uses it.
    pub hbv: Pairs,
    /// `RuleA(rel, acq)`: base edges of rule (a), critical sections on the
    /// same lock containing conflicting events.
    pub rule_a: Pairs,
    /// `RuleB(rel, acq)`: base edges of rule (b), critical sections on the
    /// same lock containing CP-ordered events (may overlap `rule_a`).
    pub rule_b: Pairs,
    /// `Cp(x, y)`: causally-precedes, strict (x < y), including the window
    /// rule's pairs when a window was given.
    pub cp: Pairs,
}

/// Evaluate `rules/cp.dl` for a trace's input relations and derived HB, with
/// the window rule (w) for `window` K (None: exact CP).
pub fn derive(rel: &Relations, hb: HbRelations, window: Option<u64>) -> CpRelations {
    use rules::*;
    let mut rt = Crepe::new();
    rt.extend(hb.hb.iter().map(|&(a, b)| Hb(a, b)));
    rt.extend(hb.edges.iter().map(|&(a, b)| HbEdge(a, b)));
    rt.extend(hb.hard_edges.iter().map(|&(a, b)| HardEdge(a, b)));
    crate::facts::feed_sections!(rt, rel);
    if let Some(k) = window {
        // Event ids are u32, so a K beyond u32 orders nothing more than u32::MAX.
        rt.extend([Window(u32::try_from(k).unwrap_or(u32::MAX))]);
    }
    let (volatile_edges, hbv, rule_a, rule_b, cp) =
        rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
    CpRelations {
        hb,
        volatile_edges: volatile_edges
            .into_iter()
            .map(|VolatileEdge(a, b)| (a, b))
            .collect(),
        hbv: hbv.into_iter().map(|Hbv(a, b)| (a, b)).collect(),
        rule_a: rule_a.into_iter().map(|RuleA(a, b)| (a, b)).collect(),
        rule_b: rule_b.into_iter().map(|RuleB(a, b)| (a, b)).collect(),
        cp: cp.into_iter().map(|Cp(a, b)| (a, b)).collect(),
    }
}

/// Derive HB, then CP, for `trace`.
pub fn derive_trace(trace: &Trace, window: Option<u64>) -> CpRelations {
    let rel = Relations::new(trace, &Facts::new(trace));
    let hb = hb::derive(&rel);
    derive(&rel, hb, window)
}

/// `--relation cp --engine reference`: races are accesses with an earlier
/// conflicting access that is not CP-ordered before them (the window is rule
/// (w) of the relation; every pair is checked).
pub fn analyze(trace: &Trace, window: Option<u64>) -> crate::Result<Report> {
    analyze_within(trace, window, None)
}

/// [`analyze`], reporting only pairs less than `max_distance` events apart.
pub fn analyze_within(
    trace: &Trace,
    window: Option<u64>,
    max_distance: Option<u64>,
) -> crate::Result<Report> {
    check_size(trace, Relation::Cp, Engine::Datalog)?;
    let start = Instant::now();
    let r = derive_trace(trace, window);
    let mut report = Report::new(Relation::Cp, Engine::Reference, window, trace.len() as u64);
    report.max_distance = max_distance;
    report.races = races(trace, max_distance, |x, y| r.cp.contains(&(x, y)));
    report.normalize();
    let sync = |e: u32| matches!(trace.events[e as usize].op, Op::Acquire | Op::Release);
    let count_sync = |p: &Pairs| p.iter().filter(|&&(x, y)| sync(x) && sync(y)).count();
    let base: Pairs = r.rule_a.union(&r.rule_b).copied().collect();
    let s = &mut report.stats;
    s.insert("base_edges_rule_a".into(), json!(r.rule_a.len()));
    s.insert(
        "base_edges_rule_b_only".into(),
        json!(base.len() - r.rule_a.len()),
    );
    let hard: Pairs = r.hb.hard_edges.union(&r.volatile_edges).copied().collect();
    s.insert("hard_edges".into(), json!(hard.len()));
    s.insert("cp_pairs".into(), json!(r.cp.len()));
    s.insert("hb_pairs".into(), json!(r.hb.hb.len()));
    s.insert("hbv_pairs".into(), json!(r.hbv.len()));
    s.insert("cp_pairs_acq_rel".into(), json!(count_sync(&r.cp)));
    s.insert("hb_pairs_acq_rel".into(), json!(count_sync(&r.hb.hb)));
    s.insert(
        "seconds".into(),
        json!({"total": start.elapsed().as_secs_f64()}),
    );
    if !report.races.is_empty() {
        report.notes.push(
            "all races are reported; the CP soundness guarantee covers the first race (later ones may be \
             consequences of it)"
                .into(),
        );
    }
    Ok(report)
}
