//! The CP `datalog` engine against the brute-force Definition-2 oracle, on
//! hand-made traces and thousands of generated ones, exact and windowed.

use crate::common;

use common::oracle;
use common::traces::dump;
use cprace::race::cp::{Reporting, analyze, analyze_within};
use cprace::report::Keep;
use cprace::tools::generate::{Config, trace};
use cprace::trace::{Format, Trace, load_str};

fn csv(text: &str) -> Trace {
    load_str(&format!("thread,op,target,loc\n{text}"), Some(Format::Csv)).expect("valid trace")
}

fn engine_racy(t: &Trace, k: Option<u64>) -> Vec<u32> {
    analyze(t, k, Reporting::All).racy_events()
}

/// Racy events by Definition 2 with rule (w) for window `k`, every pair
/// checked (a window bounds CP's reasoning, not the report).
fn oracle_racy(t: &Trace, k: Option<u64>) -> Vec<u32> {
    oracle::racy(t, &oracle::cp_matrix(t, k), None)
}

#[test]
fn polar_coord_race_on_count() {
    // CP paper Fig. 3(A): the critical sections touch different fields, so no
    // CP edge orders the two writes to count; HB does.
    let t = csv(
        "T1,w,count,a\nT1,acq,this,b\nT1,r,radius,c\nT1,rel,this,d\nT2,acq,this,e\nT2,r,angle,f\nT2,rel,this,g\nT2,w,count,h\n",
    );
    assert_eq!(engine_racy(&t, None), vec![7]);
    assert_eq!(oracle_racy(&t, None), vec![7]);
}

#[test]
fn conflicting_sections_order_by_rule_a() {
    // CP paper Fig. 1: the sections conflict on x, so y is ordered.
    let t = csv(
        "T1,w,y,a\nT1,acq,l,b\nT1,w,x,c\nT1,rel,l,d\nT2,acq,l,e\nT2,r,x,f\nT2,rel,l,g\nT2,r,y,h\n",
    );
    assert_eq!(engine_racy(&t, None), Vec::<u32>::new());
}

#[test]
fn window_orders_far_hb_pairs_and_max_distance_limits_the_report() {
    let t = csv(
        "T1,w,count,a\nT1,acq,this,b\nT1,r,radius,c\nT1,rel,this,d\nT2,acq,this,e\nT2,r,angle,f\nT2,rel,this,g\nT2,w,count,h\n",
    );
    // Pair (0, 7) is 7 apart and HB-ordered: rule (w) orders it at K <= 7.
    assert_eq!(engine_racy(&t, Some(7)), Vec::<u32>::new());
    assert_eq!(engine_racy(&t, Some(8)), vec![7]);
    // Reporting distance 7 drops the race, distance 8 keeps it.
    let within = |k, d| analyze_within(&t, k, d, Reporting::All).racy_events();
    assert_eq!(within(Some(8), Some(7)), Vec::<u32>::new());
    assert_eq!(within(None, Some(8)), vec![7]);
}

#[test]
fn far_pairs_unordered_by_hb_are_races_at_every_window() {
    // Two writes of x 12 events apart with no synchronization between them:
    // HB leaves them unordered, so every window reports the race.
    let mut text = String::from("T1,w,x,a\n");
    for _ in 0..5 {
        text.push_str("T1,acq,l,b\nT1,rel,l,c\n");
    }
    text.push_str("T2,w,y,d\nT2,w,x,e\n");
    let t = csv(&text);
    for k in [1, 2, 5, 11, 12, 13, 1000, 1 << 63, u64::MAX] {
        assert_eq!(engine_racy(&t, Some(k)), vec![12], "K = {k}");
        assert_eq!(oracle_racy(&t, Some(k)), vec![12], "K = {k}");
    }
    // The CP paper's report (--window K --max-distance K) misses it for K <= 12.
    let paper = |k| analyze_within(&t, Some(k), Some(k), Reporting::All).racy_events();
    assert_eq!(paper(12), Vec::<u32>::new());
    assert_eq!(paper(13), vec![12]);
}

#[test]
fn windows_at_least_the_trace_length_are_no_window() {
    for cfg in configs().take(300) {
        let t = trace(&cfg);
        let exact = analyze(&t, None, Reporting::All);
        let n = t.len() as u64;
        for k in [n, n + 1, 1 << 32, 1 << 63, u64::MAX - 1, u64::MAX] {
            for d in [None, Some(k)] {
                let got = analyze_within(&t, Some(k), d, Reporting::All);
                assert_eq!(
                    (got.races, got.stats["base_edges"].clone()),
                    (exact.races.clone(), exact.stats["base_edges"].clone()),
                    "seed {} K={k} D={d:?}\n{}",
                    cfg.seed,
                    dump(&t)
                );
            }
            let reference = cprace::race::cp::reference::analyze(&t, Some(k)).expect("small trace");
            assert_eq!(
                reference.racy_events(),
                exact.racy_events(),
                "seed {} K={k}",
                cfg.seed
            );
        }
    }
}

fn configs() -> impl Iterator<Item = Config> {
    (0..2500u64).map(|seed| Config {
        events: 12 + seed % 30,
        threads: 2 + (seed % 5) as u32,
        locks: 1 + (seed % 4) as u32,
        vars: 2 + (seed % 3) as u32,
        volatiles: (seed % 2) as u32,
        max_nesting: 1 + (seed % 3) as u32,
        p_acquire: 0.3,
        p_release: 0.3,
        p_unlocked_access: 0.5,
        fork_join: seed % 3 != 0,
        // Dense volatiles in half the traces, so volatile hard edges matter.
        p_volatile: if seed % 4 == 1 { 0.25 } else { 0.03 },
        seed,
        ..Config::default()
    })
}

/// [`configs`] with plain and atomic (relaxed and synchronizing) accesses of
/// the same variables, every other one with random byte masks.
fn atomic_configs() -> impl Iterator<Item = Config> {
    configs().map(|c| Config {
        p_atomic: 0.3,
        masks: c.seed % 2 == 1,
        volatiles: 0,
        seed: c.seed + 10_000,
        ..c
    })
}

/// Atomics and byte masks: the engine equals the literal definition (rule (a)
/// counts atomic accesses like plain ones, HBv's hard edges join volatile ones)
/// and the crepe reference, with and without windows and distances.
#[test]
fn datalog_matches_definition_and_reference_with_atomics() {
    for cfg in atomic_configs().take(1000) {
        let t = trace(&cfg);
        for k in [None, Some(1), Some(3), Some(6), Some(15)] {
            let got = engine_racy(&t, k);
            assert_eq!(
                got,
                oracle_racy(&t, k),
                "seed {} window {k:?}\n{}",
                cfg.seed,
                dump(&t)
            );
        }
        for (k, d) in [
            (None, None),
            (Some(2), None),
            (Some(5), Some(5)),
            (None, Some(4)),
        ] {
            let fast = analyze_within(&t, k, d, Reporting::All);
            let cp = oracle::cp_matrix(&t, k);
            let got: Vec<_> = fast
                .races
                .iter()
                .map(|r| (r.first.id, r.second.id))
                .collect();
            assert_eq!(
                got,
                oracle::witnesses(&t, &cp, d),
                "seed {} {k:?} {d:?}\n{}",
                cfg.seed,
                dump(&t)
            );
            let reference =
                cprace::race::cp::reference::analyze_within(&t, k, d).expect("small trace");
            if let Err(diff) = cprace::engine::reference::compare(&fast, &reference) {
                panic!("seed {} window {k:?}: {diff}\n{}", cfg.seed, dump(&t));
            }
        }
    }
}

#[test]
fn datalog_matches_definition_on_generated_traces() {
    for cfg in configs().take(1500) {
        let t = trace(&cfg);
        for k in [None, Some(1), Some(3), Some(6), Some(15)] {
            let got = engine_racy(&t, k);
            let want = oracle_racy(&t, k);
            assert_eq!(got, want, "seed {} window {k:?}\n{}", cfg.seed, dump(&t));
        }
        // Reporting distances, with and without a window.
        for (k, d) in [
            (Some(3), Some(3)),
            (Some(6), Some(2)),
            (None, Some(5)),
            (Some(2), Some(9)),
        ] {
            let got = analyze_within(&t, k, d, Reporting::All);
            let cp = oracle::cp_matrix(&t, k);
            assert_eq!(
                got.races
                    .iter()
                    .map(|r| (r.first.id, r.second.id))
                    .collect::<Vec<_>>(),
                oracle::witnesses(&t, &cp, d),
                "seed {} window {k:?} distance {d:?}\n{}",
                cfg.seed,
                dump(&t)
            );
        }
    }
}

#[test]
fn datalog_matches_crepe_reference_on_generated_traces() {
    for cfg in configs() {
        let t = trace(&cfg);
        for (k, d) in [
            (None, None),
            (Some(2), None),
            (Some(5), None),
            (Some(12), None),
            (Some(5), Some(5)),
        ] {
            let fast = analyze_within(&t, k, d, Reporting::All);
            let reference =
                cprace::race::cp::reference::analyze_within(&t, k, d).expect("small trace");
            if let Err(diff) = cprace::engine::reference::compare(&fast, &reference) {
                panic!("seed {} window {k:?}: {diff}\n{}", cfg.seed, dump(&t));
            }
        }
    }
}

#[test]
fn hb_datalog_closure_matches_definition_within_window() {
    for cfg in configs().take(800) {
        let t = trace(&cfg);
        let hb = oracle::hb_matrix(&t);
        for k in [None, Some(2), Some(7)] {
            let got = cprace::race::hb::datalog::analyze(&t, k).racy_events();
            assert_eq!(
                got,
                oracle::racy(&t, &hb, k),
                "seed {} window {k:?}\n{}",
                cfg.seed,
                dump(&t)
            );
        }
    }
}

#[test]
fn first_race_and_order_races_follow_the_paper() {
    let mut ordered_some = 0;
    for cfg in configs().take(400) {
        let t = trace(&cfg);
        for k in [None, Some(6)] {
            let all = engine_racy(&t, k);
            let first = analyze(&t, k, Reporting::FirstRace).racy_events();
            assert_eq!(
                first,
                all.iter().copied().take(1).collect::<Vec<_>>(),
                "seed {}",
                cfg.seed
            );
            // Oracle for --order-races: after each race, its witness pair is a
            // hard CP edge, then the next race is sought.
            let mut extra = Vec::new();
            let mut want = Vec::new();
            loop {
                let cp = oracle::cp_matrix_with(&t, k, &extra);
                let racy = oracle::racy(&t, &cp, None);
                let Some(&j) = racy.iter().find(|&&j| want.last().is_none_or(|&l| j > l)) else {
                    break;
                };
                let i = oracle::witness(&t, &cp, None, j as usize).expect("racy has a witness");
                extra.push((i, j as usize));
                want.push(j);
            }
            let got = analyze(&t, k, Reporting::OrderRaces).racy_events();
            assert_eq!(got, want, "seed {} window {k:?}\n{}", cfg.seed, dump(&t));
            assert!(
                got.iter().all(|e| all.contains(e)),
                "ordering races only removes reports"
            );
            if got.len() < all.len() {
                ordered_some += 1;
            }
        }
    }
    assert!(
        ordered_some > 20,
        "order-races changed the reports in only {ordered_some} runs"
    );
}

#[test]
fn races_stream_in_trace_order_through_the_callback() {
    for cfg in configs().take(300) {
        let t = trace(&cfg);
        for (k, d) in [(None, None), (Some(4), None), (Some(6), Some(6))] {
            for reporting in [Reporting::All, Reporting::FirstRace, Reporting::OrderRaces] {
                let collected = analyze_within(&t, k, d, reporting);
                let mut streamed = Vec::new();
                let report =
                    cprace::race::cp::analyze_into(&t, k, d, reporting, &mut |r| streamed.push(r));
                assert!(report.races.is_empty(), "races went to the callback");
                assert!(
                    streamed.windows(2).all(|w| w[0].second.id < w[1].second.id),
                    "seed {}: races out of order",
                    cfg.seed
                );
                assert_eq!(streamed, collected.races, "seed {} {reporting:?}", cfg.seed);
                assert_eq!(report.stats["cp_pairs"], collected.stats["cp_pairs"]);
            }
        }
    }
}

#[test]
fn spilled_reports_read_back_the_collected_races() {
    for cfg in configs().take(200) {
        let t = trace(&cfg);
        for (k, d) in [(None, None), (Some(4), None), (Some(6), Some(6))] {
            for reporting in [Reporting::All, Reporting::FirstRace, Reporting::OrderRaces] {
                let collected = analyze_within(&t, k, d, reporting);
                let spilled =
                    cprace::race::cp::analyze_spilled(&t, k, d, reporting, Keep::Spill).unwrap();
                assert!(spilled.is_spilled() && spilled.races.is_empty());
                let mut back = Vec::new();
                spilled
                    .each_race(|r| {
                        back.push(*r);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(back, collected.races, "seed {} {reporting:?}", cfg.seed);
                // Counted only (summary output): the same counts.
                let counted =
                    cprace::race::cp::analyze_spilled(&t, k, d, reporting, Keep::Count).unwrap();
                assert_eq!(counted.race_count(), collected.race_count());
                assert_eq!(counted.tally().unwrap(), collected.tally().unwrap());
                assert!(counted.each_race(|_| Ok(())).is_err());
                let counters = |r: &cprace::report::Report| {
                    let mut s = r.stats.clone();
                    s.remove("seconds");
                    s
                };
                assert_eq!(counters(&spilled), counters(&collected));
                assert_eq!(spilled.notes, collected.notes);
            }
        }
    }
}
