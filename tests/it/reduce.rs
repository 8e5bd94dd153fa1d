//! Leaving out repeated accesses (`cprace::trace::reduce`, what `record
//! --analyze hb|wcp` analyses) keeps every location pair hb and wcp report,
//! on thousands of generated traces; the C/C++ programs get the same check
//! in `programs.rs`.

use cprace::race::{Options, analyze_trace};
use cprace::relation::Relation;
use cprace::trace::Trace;
use cprace::trace::reduce::reduce;

use crate::common::hb::{generated, generated_atomic};

/// The location pairs `relation` reports on `t`, by location text.
fn pairs(t: &Trace, relation: Relation) -> Vec<(String, String)> {
    let mut opts = Options::new(relation);
    opts.window = None;
    let r = analyze_trace(t, &opts).unwrap();
    r.location_pairs()
        .into_iter()
        .map(|(a, b)| (t.names.loc(a).to_string(), t.names.loc(b).to_string()))
        .collect()
}

/// One line per event with its location, for failure messages.
fn dump_locs(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "{i}: {} {} {} {:#04x} {}\n",
                t.names.thread(e.thread),
                e.op.as_str(),
                t.names.target(e),
                e.mask,
                t.names.loc(e.loc)
            )
        })
        .collect()
}

#[test]
fn reduced_traces_keep_every_hb_and_wcp_location_pair() {
    let mut dropped = 0;
    for seed in 0..3000u64 {
        let events = 20 + seed % 130;
        let t = if seed % 2 == 0 {
            generated(seed, events)
        } else {
            generated_atomic(seed, events)
        };
        let r = reduce(&t);
        dropped += t.len() - r.len();
        for relation in [Relation::Hb, Relation::Wcp] {
            assert_eq!(
                pairs(&t, relation),
                pairs(&r, relation),
                "seed {seed}, {relation}: whole trace\n{}\nreduced\n{}",
                dump_locs(&t),
                dump_locs(&r)
            );
        }
    }
    // The check compares something: many accesses were left out.
    assert!(dropped > 1_000, "only {dropped} accesses left out");
}
