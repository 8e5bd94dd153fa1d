//! Causally-precedes (CP), the relation of causally-precedes-2012.
//!
//! [`input`] turns a trace into sync slots with HB clocks, critical sections and
//! seed base edges; [`fixpoint`] runs the semi-naive datafrog fixpoint for rule
//! (b); [`races`] derives CP clocks and checks accesses. See each module for
//! the reasoning that keeps the quadratic relations inside the window.

pub mod fixpoint;
pub mod hb_closure;
pub mod input;
pub mod races;
pub mod sync;

use std::time::Instant;

use serde_json::json;

use crate::report::Report;
use crate::trace::{EventId, Trace};
pub use input::{CpInput, Rule};

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

/// The computed relation: base edges and the fixpoint's effort.
pub struct CpResult {
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
pub fn compute(trace: &Trace, window: Option<u64>, extra: &[(EventId, EventId)]) -> CpResult {
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

/// Run the `datalog` engine on `trace`.
pub fn analyze(trace: &Trace, window: Option<u64>, reporting: Reporting) -> Report {
    let started = Instant::now();
    let mut extra: Vec<(EventId, EventId)> = Vec::new();
    let mut ordered_races = Vec::new();
    let mut rounds_total = 0;
    let (result, pass) = loop {
        let result = compute(trace, window, &extra);
        rounds_total += result.rounds;
        let base: Vec<(u32, u32)> = result.base.iter().map(|&(a, r, _)| (a, r)).collect();
        let first_only = reporting != Reporting::All;
        crate::progress::phase("cp datalog: race pass");
        let pass = races::race_pass(
            trace,
            &result.input,
            &base,
            first_only && reporting == Reporting::FirstRace,
        );
        if reporting != Reporting::OrderRaces {
            break (result, pass);
        }
        // Next race after the ones already turned into edges.
        let done = ordered_races
            .last()
            .map(|r: &crate::report::Race| r.second.id);
        match pass
            .races
            .iter()
            .find(|r| done.is_none_or(|d| r.second.id > d))
        {
            Some(r) => {
                ordered_races.push(*r);
                extra.push((r.first.id, r.second.id));
            }
            None => break (result, pass),
        }
    };
    let mut report = Report::new("cp", "datalog", window, trace.len() as u64);
    report.races = if reporting == Reporting::OrderRaces {
        ordered_races
    } else {
        pass.races
    };
    report.normalize();
    let count = |rule: Rule| result.base.iter().filter(|e| e.2 == rule).count();
    let (cp_pairs, hb_pairs) = sync_pair_counts(&result.input, &pass.cp_clocks, window);
    report.stats.insert(
        "base_edges".into(),
        json!({
            "total": result.base.len(),
            "rule_a": count(Rule::A),
            "rule_b": count(Rule::B),
            "window": count(Rule::Window),
            "hard": count(Rule::Hard),
        }),
    );
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
    report.notes.push(match reporting {
        Reporting::All => "all racy events reported; CP's soundness theorem covers the first race (use --order-races to make every report sound, --first-race to stop at the first)".into(),
        Reporting::FirstRace => "stopped at the first race (the one CP's soundness theorem covers)".into(),
        Reporting::OrderRaces => "each reported race was treated as a CP edge from then on, so every report is covered by the soundness theorem".into(),
    });
    report
}

/// Ordered pairs `(x, y)` of sync events, `x` before `y` and (under a window)
/// less than K apart, with `x` CP-before `y`, and with `x` HB-before `y`.
/// Counted from clocks, without materialising the pairs.
pub fn sync_pair_counts(input: &CpInput, cp_clocks: &[u32], window: Option<u64>) -> (u64, u64) {
    let sync = &input.sync;
    let nt = sync.nthreads;
    // Per thread, the (local, event) of its sync points in order.
    let mut per_thread: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nt];
    for s in 0..sync.len() {
        per_thread[sync.thread[s] as usize].push((sync.local[s], sync.events[s]));
    }
    let (mut cp, mut hb) = (0u64, 0u64);
    let count = |list: &Vec<(u32, u32)>, bound: u32, y: u32| -> u64 {
        // Points with local <= bound, event < y, and event > y - K.
        let upto = list.partition_point(|&(l, e)| l <= bound && e < y);
        let from = match window {
            Some(k) => list[..upto].partition_point(|&(_, e)| (y - e) as u64 >= k),
            None => 0,
        };
        (upto - from) as u64
    };
    for s in 0..sync.len() {
        let y = sync.events[s];
        let hbc = sync.clock(s as u32);
        let cpc = &cp_clocks[s * nt..(s + 1) * nt];
        for (t, list) in per_thread.iter().enumerate() {
            hb += count(list, hbc[t], y);
            cp += count(list, cpc[t], y);
        }
    }
    (cp, hb)
}
