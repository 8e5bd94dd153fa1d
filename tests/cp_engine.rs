//! The CP `datalog` engine against the brute-force Definition-2 oracle, on
//! hand-made traces and thousands of generated ones, exact and windowed.

mod common;

use common::oracle;
use common::traces::dump;
use cprace::cp::{Reporting, analyze};
use cprace::generate::{Config, trace};
use cprace::trace::{Format, Trace, load_str};

fn csv(text: &str) -> Trace {
    load_str(&format!("thread,op,target,loc\n{text}"), Some(Format::Csv)).expect("valid trace")
}

fn engine_racy(t: &Trace, k: Option<u64>) -> Vec<u32> {
    analyze(t, k, Reporting::All).racy_events()
}

fn oracle_racy(t: &Trace, k: Option<u64>) -> Vec<u32> {
    oracle::racy(t, &oracle::cp_matrix(t, k), k)
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
fn window_cuts_far_pairs_and_orders_conservatively() {
    let t = csv(
        "T1,w,count,a\nT1,acq,this,b\nT1,r,radius,c\nT1,rel,this,d\nT2,acq,this,e\nT2,r,angle,f\nT2,rel,this,g\nT2,w,count,h\n",
    );
    // Pair (0, 7) is 7 apart: outside K = 7, inside K = 8.
    assert_eq!(engine_racy(&t, Some(7)), Vec::<u32>::new());
    assert_eq!(engine_racy(&t, Some(8)), vec![7]);
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

#[test]
fn datalog_matches_definition_on_generated_traces() {
    for cfg in configs().take(1500) {
        let t = trace(&cfg);
        for k in [None, Some(1), Some(3), Some(6), Some(15)] {
            let got = engine_racy(&t, k);
            let want = oracle_racy(&t, k);
            assert_eq!(got, want, "seed {} window {k:?}\n{}", cfg.seed, dump(&t));
        }
    }
}

#[test]
fn datalog_matches_crepe_reference_on_generated_traces() {
    for cfg in configs() {
        let t = trace(&cfg);
        for k in [None, Some(2), Some(5), Some(12)] {
            let fast = analyze(&t, k, Reporting::All);
            let reference = cprace::reference::cp::analyze(&t, k).expect("small trace");
            if let Err(diff) = cprace::reference::compare(&fast, &reference) {
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
            let got = cprace::cp::hb_closure::analyze(&t, k).racy_events();
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
                let racy = oracle::racy(&t, &cp, k);
                let Some(&j) = racy.iter().find(|&&j| want.last().is_none_or(|&l| j > l)) else {
                    break;
                };
                let i = oracle::witness(&t, &cp, k, j as usize).expect("racy has a witness");
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
