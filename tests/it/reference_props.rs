//! Property tests of the reference engines on small generated traces:
//! - `rules/hb.dl` derives exactly the HB of the brute-force oracle
//!   (tests/common/oracle.rs), and its races (racy events and witnesses) match;
//! - `rules/cp.dl` derives exactly the CP of the oracle's literal Definition-2
//!   fixpoint (rules a, b and c iterated over all event pairs);
//! - the laws of docs/src/semantic-decisions.md "Semantic decisions": CP ⊆ HBv (the HB of
//!   `rules/hb.dl` plus `rules/cp.dl`'s volatile edges), HBv races within K ⊆
//!   CP(K) races ⊆ exact CP races, HB races likewise on traces where HBv = HB,
//!   CP(K) races grow with K, and CP(K) with K beyond the trace is exact CP.
//!
//! Every test also runs on traces mixing plain and atomic accesses of the
//! same variables, half of them with byte masks.

use crate::common;

use common::laws::hbv_is_hb;
use common::oracle;
use cprace::race::cp::reference as cp;
use cprace::race::hb::reference as hb;
use cprace::tools::generate::{Config, trace};
use cprace::trace::{EventId, Trace};

const SEEDS: u64 = 300;

fn config(seed: u64) -> Config {
    Config {
        events: 20 + seed % 41,
        threads: 2 + (seed % 5) as u32,
        locks: 1 + (seed % 4) as u32,
        vars: 1 + (seed % 4) as u32,
        volatiles: (seed % 2) as u32,
        max_nesting: 1 + (seed % 3) as u32,
        p_acquire: 0.25,
        p_volatile: 0.08,
        fork_join: !seed.is_multiple_of(3),
        seed,
        ..Config::default()
    }
}

/// The traces of the tests: [`config`]'s, then half as many more that mix
/// plain and atomic (relaxed and synchronizing) accesses of the same
/// variables, every other one with random byte masks (seeds from `SEEDS` on).
fn traces() -> impl Iterator<Item = (u64, Trace)> {
    let plain = (0..SEEDS).map(|seed| (seed, trace(&config(seed))));
    let atomic = (SEEDS..SEEDS + SEEDS / 2).map(|seed| {
        let cfg = Config {
            p_atomic: 0.3,
            masks: seed % 2 == 1,
            volatiles: 0,
            ..config(seed)
        };
        (seed, trace(&cfg))
    });
    plain.chain(atomic)
}

fn describe(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let m = if e.mask == 0 {
                String::new()
            } else {
                format!("[{:#04x}]", e.mask)
            };
            format!("{i}:T{}.{}({}){m}", e.thread, e.op.as_str(), e.target)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Square bit matrix: row x holds the y with (x, y) in the relation.
fn witnesses(r: &cprace::report::Report) -> Vec<(EventId, EventId)> {
    r.races.iter().map(|r| (r.first.id, r.second.id)).collect()
}

fn subset(a: &[EventId], b: &[EventId]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

#[test]
fn hb_rules_match_brute_force_closure() {
    for (seed, t) in traces() {
        let brute = oracle::hb_matrix(&t);
        let r = hb::derive_trace(&t);
        assert!(
            r.hb == oracle::pairs(&brute),
            "seed {seed}: HB differs on {}",
            describe(&t)
        );
        for window in [None, Some(3), Some(10)] {
            let rep = hb::analyze(&t, window).unwrap();
            assert_eq!(
                witnesses(&rep),
                oracle::witnesses(&t, &brute, window),
                "seed {seed} window {window:?}: {}",
                describe(&t)
            );
        }
    }
}

#[test]
fn cp_rules_match_brute_force_fixpoint() {
    let mut rule_b_only = 0;
    for (seed, t) in traces() {
        for window in [None, Some(4), Some(12)] {
            let brute = oracle::cp_matrix(&t, window);
            let r = cp::derive_trace(&t, window);
            if window.is_none() {
                rule_b_only += usize::from(r.rule_b.iter().any(|p| !r.rule_a.contains(p)));
            }
            let bp = oracle::pairs(&brute);
            let mut only_rules: Vec<_> = r.cp.difference(&bp).collect();
            let mut only_brute: Vec<_> = bp.difference(&r.cp).collect();
            only_rules.sort();
            only_brute.sort();
            assert!(
                r.cp == bp,
                "seed {seed} window {window:?}: CP differs (only rules: {only_rules:?}, only brute force: {only_brute:?}) on {}",
                describe(&t)
            );
            let rep = cp::analyze(&t, window).unwrap();
            assert_eq!(
                witnesses(&rep),
                oracle::witnesses(&t, &brute, None),
                "seed {seed} window {window:?}: {}",
                describe(&t)
            );
        }
    }
    // Rule (b) must matter in the sample, or the recursion goes untested.
    println!("{rule_b_only} traces with rule (b) edges beyond rule (a)");
    assert!(
        rule_b_only > 10,
        "only {rule_b_only} traces with rule (b) edges beyond rule (a)"
    );
}

#[test]
fn cp_laws_hold() {
    let mut strictly_more = 0;
    let mut with_extra_edges = 0;
    for (seed, t) in traces() {
        let n = t.len() as u64;
        let exact = cp::derive_trace(&t, None);
        let plain = hbv_is_hb(&t);
        with_extra_edges += usize::from(!plain);
        // HBv races, read off the reference's own HBv relation.
        let hbv_racy = |k: Option<u64>| -> Vec<EventId> {
            let mut v: Vec<EventId> =
                cprace::engine::reference::races(&t, k, |x, y| exact.hbv.contains(&(x, y)))
                    .iter()
                    .map(|r| r.second.id)
                    .collect();
            v.dedup();
            v
        };
        let hb_exact = hb::analyze(&t, None).unwrap().racy_events();
        let hbv_exact = hbv_racy(None);
        let cp_exact = cp::analyze(&t, None).unwrap().racy_events();
        let ctx = || format!("seed {seed}: {}", describe(&t));
        assert!(
            exact.cp.iter().all(|p| exact.hbv.contains(p)),
            "CP ⊆ HBv, {}",
            ctx()
        );
        assert!(
            exact.hb.hb.iter().all(|p| exact.hbv.contains(p)),
            "HB ⊆ HBv, {}",
            ctx()
        );
        assert!(
            !plain || exact.hb.hb == exact.hbv,
            "HBv = HB without extra volatile edges, {}",
            ctx()
        );
        assert!(
            subset(&hbv_exact, &cp_exact),
            "HBv races ⊆ CP races, {}",
            ctx()
        );
        assert!(
            subset(&hbv_exact, &hb_exact),
            "HBv races ⊆ HB races, {}",
            ctx()
        );
        if plain {
            assert!(
                subset(&hb_exact, &cp_exact),
                "HB races ⊆ CP races when HBv = HB, {}",
                ctx()
            );
        }
        strictly_more += usize::from(cp_exact.len() > hbv_exact.len());
        let mut previous: Vec<EventId> = Vec::new();
        for k in [1, 2, 3, 5, 8, 13, 21, 34, n, n + 1] {
            let w = cp::analyze(&t, Some(k)).unwrap().racy_events();
            assert!(
                subset(&hbv_exact, &w),
                "HBv races ⊆ CP(K={k}) races, {}",
                ctx()
            );
            // Among pairs less than K apart (the CP paper's report).
            let w_k = cp::analyze_within(&t, Some(k), Some(k))
                .unwrap()
                .racy_events();
            assert!(
                subset(&hbv_racy(Some(k)), &w_k) && subset(&w_k, &w),
                "HBv races within K={k} ⊆ CP(K) races within K ⊆ CP(K) races, {}",
                ctx()
            );
            if plain {
                assert!(
                    subset(&hb_exact, &w),
                    "HB races ⊆ CP(K={k}) races when HBv = HB, {}",
                    ctx()
                );
            }
            assert!(
                subset(&w, &cp_exact),
                "CP(K={k}) races ⊆ exact CP races, {}",
                ctx()
            );
            assert!(
                subset(&previous, &w),
                "CP races grow with K (K={k}), {}",
                ctx()
            );
            previous = w;
        }
        assert_eq!(previous, cp_exact, "CP(K > length) == exact CP, {}", ctx());
        assert!(
            cp::derive_trace(&t, Some(n + 1)).cp == exact.cp,
            "CP(K > length) relation == exact, {}",
            ctx()
        );
    }
    // Not a law, but the test would be vacuous if CP never found more than
    // HBv, or if no trace had volatile edges beyond HB.
    assert!(
        strictly_more > 10,
        "only {strictly_more} traces where CP finds more races than HBv"
    );
    assert!(
        with_extra_edges > 10,
        "only {with_extra_edges} traces where HBv has edges HB lacks"
    );
}
