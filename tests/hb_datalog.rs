//! The HB rule file `rules/hb.dl` (the reference definition the CP work builds
//! on) agrees with the `vc` engine and the brute-force closure on small traces.

mod hb_common;

use std::collections::BTreeMap;

use cprace::facts::{Facts, Relations};
use cprace::trace::{EventId, Trace};
use hb_common::{dump, generated, hb, hb_closure, pairs, run, tr};

mod rules {
    include!(concat!(env!("OUT_DIR"), "/hb_rules.rs"));
}

struct Derived {
    hb: Vec<(u32, u32)>,
    race_pairs: Vec<(u32, u32)>,
}

fn datalog(t: &Trace) -> Derived {
    use rules::*;
    let r = Relations::new(t, &Facts::new(t));
    let mut rt = Crepe::new();
    rt.extend(
        r.thread_for_event
            .iter()
            .map(|&(a, b)| ThreadForEvent(a, b)),
    );
    rt.extend(r.acq_event.iter().map(|&(a, b)| AcqEvent(a, b)));
    rt.extend(r.rel_event.iter().map(|&(a, b)| RelEvent(a, b)));
    rt.extend(r.read_event.iter().map(|&(a, b)| ReadEvent(a, b)));
    rt.extend(r.write_event.iter().map(|&(a, b)| WriteEvent(a, b)));
    rt.extend(
        r.volatile_read_event
            .iter()
            .map(|&(a, b)| VolatileReadEvent(a, b)),
    );
    rt.extend(
        r.volatile_write_event
            .iter()
            .map(|&(a, b)| VolatileWriteEvent(a, b)),
    );
    rt.extend(r.fork_join_edge.iter().map(|&(a, b)| ForkJoinEdge(a, b)));
    let (hb, races) = rt.run();
    let mut hb: Vec<(u32, u32)> = hb.into_iter().map(|Hb(a, b)| (a, b)).collect();
    let mut race_pairs: Vec<(u32, u32)> = races.into_iter().map(|RacePair(a, b)| (a, b)).collect();
    hb.sort_unstable();
    race_pairs.sort_unstable();
    Derived { hb, race_pairs }
}

/// Racy events and their witnesses (the latest unordered access in the window).
fn witnesses(d: &Derived, window: Option<u64>) -> Vec<(EventId, EventId)> {
    let mut best: BTreeMap<u32, u32> = BTreeMap::new();
    for &(e1, e2) in &d.race_pairs {
        if window.is_none_or(|k| ((e2 - e1) as u64) < k) {
            let b = best.entry(e2).or_insert(e1);
            *b = (*b).max(e1);
        }
    }
    best.into_iter().collect()
}

#[test]
fn rules_agree_with_vc_and_the_closure() {
    for seed in 0..250 {
        let n = 15 + seed % 50;
        let t = generated(seed, n);
        let d = datalog(&t);
        let pred = hb_closure(&t);
        let mut want = Vec::new();
        for j in 0..t.len() {
            for i in 0..j {
                if hb(&pred, i, j) {
                    want.push((i as u32, j as u32));
                }
            }
        }
        want.sort_unstable();
        assert_eq!(
            d.hb,
            want,
            "seed {seed}: HB relation differs from the closure\n{}",
            dump(&t)
        );
        for w in [None, Some(5)] {
            assert_eq!(
                witnesses(&d, w),
                pairs(&run("vc", w, &t)),
                "seed {seed}, window {w:?}\n{}",
                dump(&t)
            );
        }
    }
}

#[test]
fn rules_on_hand_written_edges() {
    // Child without events: no fork or join edge through it.
    let t = tr("T1 w x\nT1 fork T2\nT3 join T2\nT3 r x");
    assert_eq!(witnesses(&datalog(&t), None), [(3, 0)]);
    // Volatile write -> later read orders; read -> write does not.
    let t = tr("T1 w x\nT1 vw v\nT2 vr v\nT2 r x\nT2 vr u\nT1 w y\nT1 vw u\nT2 w y");
    assert_eq!(witnesses(&datalog(&t), None), [(7, 5)]);
}
