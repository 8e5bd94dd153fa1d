//! The CP `datalog` engine against the brute-force Definition-2 oracle, on
//! hand-made traces and thousands of generated ones, exact and windowed.

mod common;

use common::oracle;
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
    (0..1500u64).map(|seed| Config {
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
    for cfg in configs() {
        let t = trace(&cfg);
        for k in [None, Some(1), Some(3), Some(6), Some(15)] {
            let got = engine_racy(&t, k);
            let want = oracle_racy(&t, k);
            assert_eq!(got, want, "seed {} window {k:?}\n{}", cfg.seed, dump(&t));
        }
    }
}

fn dump(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "{i}: {} {} {}\n",
                t.names.thread(e.thread),
                e.op.as_str(),
                t.names.target(e)
            )
        })
        .collect()
}
