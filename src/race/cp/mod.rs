//! Causally-precedes (CP), the relation of causally-precedes-2012.
//!
//! [`input`] turns a trace into sync slots with HB clocks, critical sections and
//! seed base edges; [`fixpoint`] runs the semi-naive datafrog fixpoint for rule
//! (b); [`races`] derives CP clocks and checks accesses. See each module for
//! the reasoning that keeps the quadratic relations inside the window.

pub(crate) mod fixpoint;
pub(crate) mod input;
pub(crate) mod races;
pub mod reference;
pub mod stream;

use std::time::Instant;

use serde_json::json;

use crate::relation::{Engine, Relation};
use crate::report::{Race, Report};
use crate::trace::{EventId, Trace};
pub(crate) use input::{CpInput, Rule};
pub use races::PassOptions;

/// Default window K (the paper used 500 and 1000).
pub const DEFAULT_WINDOW: u64 = 1000;

/// How to report races beyond the first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reporting {
    /// Every racy event (only the first is covered by the soundness theorem).
    #[default]
    All,
    /// Stop at the first racy event.
    FirstRace,
    /// Treat each reported race as a CP edge from then on (the paper's
    /// conservative scheme), so every report is covered by the theorem.
    OrderRaces,
}

impl Reporting {
    /// The note a report with races carries: what the soundness theorem
    /// covers under this scheme.
    pub fn note(self) -> &'static str {
        match self {
            Reporting::All => {
                "all racy events reported; CP's soundness theorem covers the first race (use --order-races to make every report sound, --first-race to stop at the first)"
            }
            Reporting::FirstRace => {
                "stopped at the first race (the one CP's soundness theorem covers)"
            }
            Reporting::OrderRaces => {
                "each reported race was treated as a CP edge from then on, so every report is covered by the soundness theorem"
            }
        }
    }
}

/// The `base_edges` statistic from counts indexed by [`Rule`] (A, B,
/// window, hard).
pub(crate) fn base_edge_stats([a, b, w, h]: [u64; 4]) -> serde_json::Value {
    json!({"total": a + b + w + h, "rule_a": a, "rule_b": b, "window": w, "hard": h})
}

/// The computed relation: base edges and the fixpoint's effort.
pub(crate) struct CpResult {
    /// Seconds spent building inputs and running the fixpoint.
    pub seconds_input: f64,
    /// Seconds in the fixpoint.
    pub seconds_fixpoint: f64,
    /// Inputs (sync points, sections).
    pub input: CpInput,
    /// Base edges `(a, r, rule)` in slots.
    pub base: Vec<(u32, u32, Rule)>,
    /// Fixpoint rounds.
    pub rounds: u64,
}

/// Compute the CP base relation of `trace` under `window` with `extra` hard edges.
pub(crate) fn compute(
    trace: &Trace,
    window: Option<u64>,
    extra: &[(EventId, EventId)],
) -> CpResult {
    let t0 = Instant::now();
    crate::progress::phase("cp datalog: building inputs");
    let input = CpInput::new(trace, window, extra);
    let t1 = Instant::now();
    crate::progress::phase("cp datalog: fixpoint");
    let fp = input.fixpoint();
    CpResult {
        seconds_input: (t1 - t0).as_secs_f64(),
        seconds_fixpoint: t1.elapsed().as_secs_f64(),
        input,
        base: fp.base,
        rounds: fp.rounds,
    }
}

/// Run the `datalog` engine on `trace`, reporting every racy pair however far
/// apart (the window bounds CP's reasoning, not the report).
pub fn analyze(trace: &Trace, window: Option<u64>, reporting: Reporting) -> Report {
    analyze_within(trace, window, None, reporting)
}

/// [`analyze`], reporting only pairs less than `max_distance` events apart
/// (`--max-distance`; the CP paper's report is `max_distance = window`).
pub fn analyze_within(
    trace: &Trace,
    window: Option<u64>,
    max_distance: Option<u64>,
    reporting: Reporting,
) -> Report {
    let mut races = Vec::new();
    let mut report = analyze_into(trace, window, max_distance, reporting, &mut |r| {
        races.push(r)
    });
    report.races = races;
    report.normalize();
    report
}

/// [`analyze_within`] with the races kept as `keep` says as the final pass
/// finds them: written to a temporary file ([`Report::spill_races`]) for the
/// output formats that stream, or only counted for the summary; either way
/// the report holds no race in memory, however many there are.
pub fn analyze_spilled(
    trace: &Trace,
    window: Option<u64>,
    max_distance: Option<u64>,
    reporting: Reporting,
    keep: crate::report::Keep,
) -> std::io::Result<Report> {
    let mut sink = Report::new(Relation::Cp, Engine::Datalog, window, trace.len() as u64);
    sink.keep_races(keep)?;
    let report = analyze_into(trace, window, max_distance, reporting, &mut |r| {
        sink.push(r)
    });
    sink.max_distance = report.max_distance;
    sink.stats = report.stats;
    sink.notes = report.notes;
    sink.normalize();
    Ok(sink)
}

/// [`analyze_within`], handing each race to `on_race` as the final pass finds
/// it, in trace order of the racy event (one witness each), instead of
/// collecting them: the returned report holds no races, only the statistics
/// and notes, so a streaming sink keeps memory flat whatever the race count.
/// (`--order-races` re-runs the fixpoint per race and hands them over at
/// the end.)
pub fn analyze_into(
    trace: &Trace,
    window: Option<u64>,
    max_distance: Option<u64>,
    reporting: Reporting,
    on_race: &mut dyn FnMut(Race),
) -> Report {
    let started = Instant::now();
    // Counted on the way out: the soundness note is only for reported races.
    let mut delivered = 0u64;
    let on_race = &mut |r: Race| {
        delivered += 1;
        on_race(r)
    };
    let mut extra: Vec<(EventId, EventId)> = Vec::new();
    let mut ordered_races: Vec<Race> = Vec::new();
    let mut rounds_total = 0;
    let opts = PassOptions {
        max_distance,
        first_only: reporting == Reporting::FirstRace,
        keep_clocks: false,
    };
    let (result, pass) = loop {
        let result = compute(trace, window, &extra);
        rounds_total += result.rounds;
        let base: Vec<(u32, u32)> = result.base.iter().map(|&(a, r, _)| (a, r)).collect();
        crate::progress::phase("cp datalog: race pass");
        if reporting != Reporting::OrderRaces {
            let pass = races::race_pass_with(trace, &result.input, &base, opts, on_race);
            break (result, pass);
        }
        // The next race after the ones already turned into edges.
        let done = ordered_races.last().map(|r| r.second.id);
        let mut next = None;
        let pass = races::race_pass_with(trace, &result.input, &base, opts, &mut |r| {
            if next.is_none() && done.is_none_or(|d| r.second.id > d) {
                next = Some(r);
            }
        });
        match next {
            Some(r) => {
                ordered_races.push(r);
                extra.push((r.first.id, r.second.id));
            }
            None => {
                for r in ordered_races.drain(..) {
                    on_race(r);
                }
                break (result, pass);
            }
        }
    };
    let mut report = Report::new(Relation::Cp, Engine::Datalog, window, trace.len() as u64);
    report.max_distance = max_distance;
    let (cp_pairs, hb_pairs) = (pass.cp_pairs, pass.hb_pairs);
    let mut by_rule = [0u64; 4];
    for e in &result.base {
        by_rule[e.2 as usize] += 1;
    }
    report
        .stats
        .insert("base_edges".into(), base_edge_stats(by_rule));
    report
        .stats
        .insert("sync_events".into(), json!(result.input.sync.len()));
    report.stats.insert(
        "critical_sections".into(),
        json!(result.input.sections.len()),
    );
    report.stats.insert("cp_pairs".into(), json!(cp_pairs));
    report.stats.insert("hb_pairs".into(), json!(hb_pairs));
    report.stats.insert(
        "cp_to_hb".into(),
        json!(if hb_pairs == 0 {
            0.0
        } else {
            cp_pairs as f64 / hb_pairs as f64
        }),
    );
    report
        .stats
        .insert("fixpoint_rounds".into(), json!(rounds_total));
    report.stats.insert(
        "seconds".into(),
        json!({
            "inputs": result.seconds_input,
            "fixpoint": result.seconds_fixpoint,
            "total": started.elapsed().as_secs_f64(),
        }),
    );
    // The soundness scope qualifies reported races; without any it says nothing.
    if delivered > 0 {
        report.notes.push(reporting.note().into());
    }
    report
}
