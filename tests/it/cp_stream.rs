//! Streaming windowed CP (`cprace::race::cp::stream`) against the whole-trace
//! engine: the same racy events with the same witnesses, on the figures and
//! on generated traces cut into stretches of a few events (so that sections,
//! fork/join and volatile edges cross stretch boundaries everywhere), with
//! windows from 2 to beyond the trace.

use cprace::race::cp::stream::CpStream;
use cprace::race::cp::{PassOptions, Reporting};
use cprace::tools::generate::{Config, trace};
use cprace::trace::{EventId, Trace};

use crate::common::query::config;
use crate::common::traces::figures;

fn pairs(races: &[cprace::report::Race]) -> Vec<(EventId, EventId)> {
    races.iter().map(|r| (r.second.id, r.first.id)).collect()
}

fn streamed(t: &Trace, k: u64, opts: PassOptions, every: usize) -> Vec<(EventId, EventId)> {
    let mut s = CpStream::with_runs_every(k, opts, every);
    for (i, ev) in t.events.iter().enumerate() {
        s.event(i as EventId, ev);
    }
    pairs(&s.finish().races)
}

fn check(name: &str, t: &Trace, k: u64, every: usize) {
    for (first_only, max_distance) in [(false, None), (true, None), (false, Some(k / 2 + 1))] {
        let reporting = if first_only {
            Reporting::FirstRace
        } else {
            Reporting::All
        };
        let whole =
            pairs(&cprace::race::cp::analyze_within(t, Some(k), max_distance, reporting).races);
        let opts = PassOptions {
            max_distance,
            first_only,
            keep_clocks: false,
        };
        let got = streamed(t, k, opts, every);
        assert_eq!(
            got, whole,
            "{name}: K {k}, stretches of {every}, first_only {first_only}, max distance {max_distance:?}"
        );
    }
}

#[test]
fn figures_stream_like_the_whole_trace() {
    for (path, t) in figures() {
        for k in [1, 2, 3, 5, 10, 1000] {
            for every in [1, 2, 3, 7] {
                check(&path.display().to_string(), &t, k, every);
            }
        }
    }
}

#[test]
fn generated_traces_stream_like_the_whole_trace() {
    for seed in 0..60u64 {
        let mut cfg = config(seed);
        cfg.events = 300 + 7 * seed;
        cfg.threads = 2 + (seed % 4) as u32;
        // Long sections in every third trace: open for many windows.
        if seed % 3 == 2 {
            cfg.p_release = 0.02;
        }
        let t = trace(&cfg);
        for k in [1, 2, 5, 17, 60, 500] {
            check(&format!("seed {seed}"), &t, k, 1 + (seed as usize * 7) % 40);
        }
    }
}

/// Atomic accesses (hard edges and rule-(a) summaries crossing stretch
/// boundaries) and byte masks.
#[test]
fn atomics_stream_like_the_whole_trace() {
    for seed in 0..30u64 {
        let mut cfg = config(seed + 500);
        cfg.events = 300 + 7 * seed;
        cfg.threads = 2 + (seed % 4) as u32;
        cfg.p_atomic = 0.3;
        cfg.masks = seed % 2 == 1;
        if seed % 3 == 2 {
            cfg.p_release = 0.02;
        }
        let t = trace(&cfg);
        for k in [1, 5, 17, 500] {
            check(&format!("seed {seed}"), &t, k, 1 + (seed as usize * 7) % 40);
        }
    }
}

#[test]
fn many_threads_and_locks_stream_like_the_whole_trace() {
    for seed in 0..12u64 {
        let cfg = Config {
            events: 3000,
            threads: 6,
            locks: 5,
            vars: 8,
            max_nesting: 3,
            p_release: 0.1 + 0.05 * (seed % 3) as f64,
            fork_join: seed % 2 == 0,
            volatiles: (seed % 3) as u32,
            seed: 1000 + seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        for k in [10, 100, 400] {
            check(
                &format!("seed {}", cfg.seed),
                &t,
                k,
                50 + 13 * seed as usize,
            );
        }
    }
}

#[test]
fn nested_sections_stream_like_the_whole_trace() {
    for seed in 0..100u64 {
        let cfg = Config {
            events: 400,
            threads: 2 + (seed % 3) as u32,
            locks: 2 + (seed % 2) as u32,
            vars: 3,
            max_nesting: 3,
            p_acquire: 0.3,
            p_release: 0.08,
            p_unlocked_access: 0.5,
            fork_join: false,
            seed: 5000 + seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        for k in [8, 30, 90] {
            check(
                &format!("seed {}", cfg.seed),
                &t,
                k,
                1 + (seed as usize % 5),
            );
        }
    }
}

/// A closed section whose edge arrives late: T1's section on L2 (events 6 to
/// 13) ends HB-after T0's acquire of L1 (event 8, through L3), and only when
/// T0 writes `q` (event 14) does rule (a) give the edge 5 -> 8, from which
/// rule (b) gives 2 -> 6, which CP-orders T2's write of `z` (0) before T1's
/// (7). A stream that moved its race pass past event 7 while T0's section
/// was open (its frontier looking only at open sections) reports that pair.
#[test]
fn a_late_edge_into_a_closed_section_is_waited_for() {
    let text = "\
thread,op,target,loc
T2,w,z,a
T2,acq,L2,b
T2,rel,L2,c
T2,acq,L1,d
T2,w,q,e
T2,rel,L1,f
T1,acq,L2,g
T1,w,z,h
T0,acq,L1,i
T0,acq,L3,j
T0,rel,L3,k
T1,acq,L3,l
T1,rel,L3,m
T1,rel,L2,n
T0,w,q,o
T0,rel,L1,p
";
    let t = cprace::trace::load_str(text, None).expect("trace");
    let whole = cprace::race::cp::analyze_within(&t, Some(50), None, Reporting::All);
    assert!(whole.races.is_empty(), "{:?}", whole.races);
    for every in 1..=16 {
        check("late edge", &t, 50, every);
    }
}

/// The profiles of the benchmarks at 1M events, K = 1000 and 10,000, with
/// the default stretches: the same races (`cargo test --release --test it
/// -- --ignored cp_stream::`; a few minutes). Base-edge counts are not
/// compared: besides the edges that matter they count dominated ones, whose
/// number depends on the order of derivation.
#[test]
#[ignore]
fn benchmark_profiles_stream_like_the_whole_trace() {
    for profile in ["bench", "ftpserver"] {
        let mut cfg = Config::profile(profile).expect("profile");
        cfg.events = 1_000_000;
        cfg.seed = 1;
        let t = trace(&cfg);
        for k in [1000, 10_000] {
            let whole = cprace::race::cp::analyze_within(&t, Some(k), None, Reporting::All);
            let mut s = CpStream::new(k, PassOptions::default());
            for (i, ev) in t.events.iter().enumerate() {
                s.event(i as EventId, ev);
            }
            assert_eq!(
                pairs(&s.finish().races),
                pairs(&whole.races),
                "{profile} K {k}"
            );
        }
    }
}
