//! Property tests of the HB engines over thousands of generated traces
//! (2-6 threads, 1-4 locks, nesting, fork/join, volatiles, re-entrant locks).

use std::collections::BTreeSet;

use crate::common::hb::{
    atomic_config, config, dump, fasttrack_model, firsts, generated, generated_atomic,
    goldilocks_model, pairs, run,
};
use crate::common::oracle::hb_races as oracle;
use cprace::engine::detector::run_trace;
use cprace::race::hb::GoldilocksDetector;

const WINDOWS: [Option<u64>; 4] = [None, Some(3), Some(10), Some(40)];

fn subset(a: &[u32], b: &[u32]) -> bool {
    let b: BTreeSet<_> = b.iter().collect();
    a.iter().all(|x| b.contains(x))
}

/// vc's racy events and witnesses equal the brute-force transitive closure.
#[test]
fn vc_matches_brute_force_oracle() {
    for seed in 0..1500 {
        let t = generated(seed, 20 + seed % 120);
        for w in WINDOWS {
            let vc = run("vc", w, &t);
            let want = oracle(&t, w);
            assert_eq!(
                pairs(&vc),
                want,
                "seed {seed}, window {w:?}, cfg {:?}\n{}",
                config(seed, 20 + seed % 120),
                dump(&t)
            );
        }
    }
}

/// treeclock reports exactly vc's races (racy events and witnesses), on the
/// small generated traces and on traces with up to 40 threads, with and
/// without fork/join, where the tree clocks grow deep and get re-rooted.
#[test]
fn treeclock_equals_vc() {
    for seed in 0..1500u64 {
        let n = 30 + seed % 300;
        let t = generated(seed, n);
        for w in [None, Some(10)] {
            let vc = run("vc", w, &t);
            let tc = run("treeclock", w, &t);
            assert_eq!(
                vc.races,
                tc.races,
                "seed {seed}, window {w:?}\n{}",
                dump(&t)
            );
        }
    }
    for seed in 0..300u64 {
        let mut cfg = cprace::tools::generate::Config::profile("many-threads").unwrap();
        cfg.seed = seed;
        cfg.events = 200 + seed * 7;
        cfg.threads = 2 + (seed % 40) as u32;
        cfg.locks = 1 + (seed % 5) as u32;
        cfg.vars = 3 + (seed % 20) as u32;
        cfg.fork_join = seed % 2 == 0;
        cfg.p_volatile = 0.05;
        let t = cprace::tools::generate::trace(&cfg);
        let vc = run("vc", None, &t);
        let tc = run("tc", None, &t);
        assert_eq!(vc.races, tc.races, "seed {seed}\n{}", dump(&t));
    }
}

/// epoch (FastTrack2) and lockset (Goldilocks) agree with vc on the racy
/// variables and on the first race per variable (racy event and witness), and
/// only ever report events vc reports.
#[test]
fn epoch_and_goldilocks_agree_with_vc_on_first_races() {
    for seed in 0..2500 {
        let n = 30 + seed % 300;
        let t = generated(seed, n);
        for w in WINDOWS {
            let vc = run("vc", w, &t);
            for engine in ["epoch", "lockset"] {
                let r = run(engine, w, &t);
                let ctx = || {
                    format!(
                        "seed {seed}, engine {engine}, window {w:?}, cfg {:?}\n{}",
                        config(seed, n),
                        dump(&t)
                    )
                };
                assert_eq!(r.racy_variables(), vc.racy_variables(), "{}", ctx());
                assert_eq!(firsts(&r), firsts(&vc), "{}", ctx());
                assert!(subset(&r.racy_events(), &vc.racy_events()), "{}", ctx());
            }
        }
    }
}

/// epoch and lockset implement their algorithms exactly, also after the
/// first race on a variable: each report equals a brute-force model of the
/// algorithm's tracked state whose orderings come from the HB closure.
#[test]
fn engines_match_brute_force_models_of_their_algorithms() {
    for seed in 0..1500 {
        let n = 20 + seed % 150;
        let t = generated(seed, n);
        for w in WINDOWS {
            let ctx = || {
                format!(
                    "seed {seed}, window {w:?}, cfg {:?}\n{}",
                    config(seed, n),
                    dump(&t)
                )
            };
            assert_eq!(
                pairs(&run("epoch", w, &t)),
                fasttrack_model(&t, w),
                "epoch: {}",
                ctx()
            );
            assert_eq!(
                pairs(&run("lockset", w, &t)),
                goldilocks_model(&t, w),
                "lockset: {}",
                ctx()
            );
        }
    }
}

/// Plain and atomic accesses of the same variables, half of the traces with
/// byte masks: vc equals the brute-force oracle, treeclock, datalog and the
/// rule file equal vc, epoch and lockset keep their guarantee (racy
/// variables, first race per variable, a subset of the racy events) and
/// match the brute-force models of their per-shape state, Goldilocks'
/// collection changes nothing, and Eraser covers vc.
#[test]
fn engines_on_atomics_and_byte_masks() {
    // Races with an atomic side, between partial shapes, and first races
    // per variable the epoch state keeps in another shape than the plain
    // whole-variable one: the checks are not vacuous.
    let (mut atomic, mut partial) = (0, 0);
    for seed in 0..1000 {
        let n = 20 + seed % 150;
        let t = generated_atomic(seed, n);
        let ctx = |w: Option<u64>| {
            format!(
                "seed {seed}, window {w:?}, cfg {:?}\n{}",
                atomic_config(seed, n),
                dump(&t)
            )
        };
        for w in WINDOWS {
            let vc = run("vc", w, &t);
            assert_eq!(pairs(&vc), oracle(&t, w), "vc: {}", ctx(w));
            for r in &vc.races {
                let ev = |id: u32| t.events[id as usize];
                atomic += usize::from(r.first.op.is_atomic() || r.second.op.is_atomic());
                partial +=
                    usize::from(ev(r.first.id).bytes() != 0xff && ev(r.second.id).bytes() != 0xff);
            }
            assert_eq!(run("treeclock", w, &t).races, vc.races, "tc: {}", ctx(w));
            for engine in ["epoch", "lockset"] {
                let r = run(engine, w, &t);
                assert_eq!(
                    r.racy_variables(),
                    vc.racy_variables(),
                    "{engine}: {}",
                    ctx(w)
                );
                assert_eq!(firsts(&r), firsts(&vc), "{engine}: {}", ctx(w));
                assert!(
                    subset(&r.racy_events(), &vc.racy_events()),
                    "{engine}: {}",
                    ctx(w)
                );
            }
            assert_eq!(
                pairs(&run("epoch", w, &t)),
                fasttrack_model(&t, w),
                "epoch: {}",
                ctx(w)
            );
            let lockset = run("lockset", w, &t);
            assert_eq!(
                pairs(&lockset),
                goldilocks_model(&t, w),
                "lockset: {}",
                ctx(w)
            );
            let gc = run_trace(GoldilocksDetector::with_gc_limit(w, 2), &t);
            assert_eq!(pairs(&gc), pairs(&lockset), "collection: {}", ctx(w));
            let er = run("eraser", w, &t);
            assert!(
                subset(&vc.racy_events(), &er.racy_events()),
                "eraser: {}",
                ctx(w)
            );
            if seed % 4 == 0 {
                for other in [
                    cprace::race::hb::datalog::analyze(&t, w),
                    cprace::race::hb::reference::analyze(&t, w).expect("small trace"),
                ] {
                    if let Err(d) = cprace::engine::reference::compare(&vc, &other) {
                        panic!("{}: {d}\n{}", other.engine, ctx(w));
                    }
                }
            }
        }
    }
    assert!(atomic > 2000 && partial > 2000, "{atomic} {partial}");
}

/// Goldilocks with a tiny update-list limit (garbage collection and
/// materialized locksets on almost every sync event) gives the same report as
/// without collection.
#[test]
fn goldilocks_collection_changes_nothing() {
    for seed in 0..800 {
        let n = 30 + seed % 250;
        let t = generated(seed, n);
        for w in [None, Some(10)] {
            let plain = run("lockset", w, &t);
            for limit in [1, 3, 8] {
                let gc = run_trace(GoldilocksDetector::with_gc_limit(w, limit), &t);
                assert_eq!(
                    pairs(&gc),
                    pairs(&plain),
                    "seed {seed}, limit {limit}, window {w:?}\n{}",
                    dump(&t)
                );
            }
        }
    }
}

/// Eraser reports every HB-racy event (hence every HB-racy variable).
#[test]
fn eraser_covers_hb() {
    for seed in 0..2500 {
        let n = 30 + seed % 300;
        let t = generated(seed, n);
        for w in WINDOWS {
            let vc = run("vc", w, &t);
            let er = run("eraser", w, &t);
            let ctx = || {
                format!(
                    "seed {seed}, window {w:?}, cfg {:?}\n{}",
                    config(seed, n),
                    dump(&t)
                )
            };
            assert!(subset(&vc.racy_events(), &er.racy_events()), "{}", ctx());
            assert!(
                vc.racy_variables().is_subset(&er.racy_variables()),
                "{}",
                ctx()
            );
        }
    }
}

/// vc with window K reports a subset of the unwindowed racy events, growing with K.
#[test]
fn vc_window_is_monotone() {
    for seed in 0..1500 {
        let n = 30 + seed % 300;
        let t = generated(seed, n);
        let mut prev: Vec<u32> = Vec::new();
        let all = run("vc", None, &t).racy_events();
        for k in [1u64, 2, 3, 5, 8, 13, 21, 50, 100, 1000] {
            let r = run("vc", Some(k), &t).racy_events();
            assert!(
                subset(&prev, &r),
                "seed {seed}: K={k} lost racy events of a smaller window"
            );
            assert!(
                subset(&r, &all),
                "seed {seed}: K={k} reports events the whole trace does not"
            );
            prev = r;
        }
        let big = run("vc", Some(n * 4), &t).racy_events();
        assert_eq!(
            big, all,
            "seed {seed}: a window longer than the trace changes the result"
        );
    }
}

/// Volatile-heavy traces (up to 8 volatile variables, up to 60% of the
/// accesses volatile): a thread releasing into several volatile variables
/// without acquiring in between shares one clock among them, another
/// thread's write turns a variable's clock into a join, and a thread reads
/// back what it published. vc equals the brute-force oracle, treeclock
/// equals vc, epoch equals its model.
#[test]
fn volatile_clocks_shared_between_variables() {
    let mut published = 0;
    for seed in 0..1000u64 {
        let n = 30 + seed % 150;
        let cfg = cprace::tools::generate::Config {
            volatiles: 2 + (seed % 7) as u32,
            p_volatile: [0.2, 0.4, 0.6][(seed % 3) as usize],
            ..config(seed, n)
        };
        let t = cprace::tools::generate::trace(&cfg);
        // Two volatile writes of one thread to different variables with
        // no volatile read of another variable between them: the shape
        // the shared clock serves.
        let mut last: std::collections::HashMap<u32, u32> = Default::default();
        for ev in &t.events {
            if ev.op == cprace::trace::Op::VolatileWrite {
                if last.get(&ev.thread).is_some_and(|&v| v != ev.target) {
                    published += 1;
                }
                last.insert(ev.thread, ev.target);
            } else if ev.op != cprace::trace::Op::Read && ev.op != cprace::trace::Op::Write {
                last.remove(&ev.thread);
            }
        }
        for w in [None, Some(10)] {
            let ctx = || format!("seed {seed}, window {w:?}\n{}", dump(&t));
            let vc = run("vc", w, &t);
            assert_eq!(pairs(&vc), oracle(&t, w), "vc: {}", ctx());
            assert_eq!(
                vc.races,
                run("treeclock", w, &t).races,
                "treeclock: {}",
                ctx()
            );
            assert_eq!(
                pairs(&run("epoch", w, &t)),
                fasttrack_model(&t, w),
                "epoch: {}",
                ctx()
            );
        }
    }
    assert!(published > 1000, "only {published} shared-clock writes");
}
