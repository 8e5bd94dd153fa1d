//! Issue 11's volatile traces (data/volatile): a volatile read or write
//! followed, in another thread, by a write of the same variable must keep its
//! order in CP and WCP (docs/src/semantic-decisions.md "Semantic decisions"), or they report races no
//! correct reordering has. Every engine, at every window, and the brute-force
//! oracles agree with the hand-derived sidecars; HB keeps the Java memory model.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::cli::cprace;
use common::oracle;
use common::traces::dump;
use cprace::race::cp::Reporting;
use cprace::race::{Options, analyze_trace};
use cprace::relation::{Engine, Relation};
use cprace::trace::{Op, Trace, load};

/// The traces with their expected racy events per relation.
fn traces() -> Vec<(PathBuf, Trace, BTreeMap<String, Vec<u32>>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/volatile");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("data/volatile exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "std"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 4, "the four traces of data/volatile");
    paths
        .into_iter()
        .map(|p| {
            let t = load(&p, None).unwrap_or_else(|e| panic!("{e}"));
            let text = std::fs::read_to_string(p.with_extension("expected")).expect("sidecar");
            let mut want = BTreeMap::new();
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains(':'))
            {
                let (rel, ids) = line.split_once(':').unwrap();
                let ids = ids.split_whitespace().map(|s| s.parse().unwrap()).collect();
                want.insert(rel.trim().to_string(), ids);
            }
            for rel in ["hb", "cp", "wcp"] {
                assert!(want.contains_key(rel), "{}: no `{rel}:` line", p.display());
            }
            (p, t, want)
        })
        .collect()
}

fn run(t: &Trace, relation: Relation, engine: &str, window: Option<u64>) -> Vec<u32> {
    let mut opts = Options::new(relation);
    opts.engine = Some(<Engine as clap::ValueEnum>::from_str(engine, false).unwrap());
    opts.window = window;
    analyze_trace(t, &opts)
        .unwrap_or_else(|e| panic!("{} {engine}: {e}", relation.name()))
        .racy_events()
}

#[test]
fn every_engine_at_every_window_matches_the_sidecars() {
    for (p, t, want) in traces() {
        let name = p.display();
        for engine in ["vc", "epoch", "lockset", "datalog", "reference"] {
            assert_eq!(
                run(&t, Relation::Hb, engine, None),
                want["hb"],
                "hb {engine} {name}"
            );
        }
        for window in [
            None,
            Some(10),
            Some(cprace::race::cp::DEFAULT_WINDOW),
            Some(1),
            Some(3),
        ] {
            for engine in ["datalog", "reference", "compare"] {
                assert_eq!(
                    run(&t, Relation::Cp, engine, window),
                    want["cp"],
                    "cp {engine} K={window:?} {name}"
                );
            }
            for reporting in [Reporting::FirstRace, Reporting::OrderRaces] {
                assert_eq!(
                    cprace::race::cp::analyze(&t, window, reporting).racy_events(),
                    want["cp"],
                    "cp {reporting:?} K={window:?} {name}"
                );
            }
        }
        for engine in ["vc", "reference"] {
            assert_eq!(
                run(&t, Relation::Wcp, engine, None),
                want["wcp"],
                "wcp {engine} {name}"
            );
        }
    }
}

#[test]
fn oracles_match_the_sidecars() {
    for (p, t, want) in traces() {
        let name = p.display();
        assert_eq!(
            oracle::racy(&t, &oracle::hb_matrix(&t), None),
            want["hb"],
            "hb {name}"
        );
        for k in [None, Some(10), Some(3)] {
            assert_eq!(
                oracle::racy(&t, &oracle::cp_matrix(&t, k), k),
                want["cp"],
                "cp K={k:?} {name}"
            );
        }
    }
}

/// The traces are about the volatile accesses: without them (every other
/// event kept) CP and WCP do report the race, so the sidecars' empty sets
/// come from the volatile edges and nothing else.
#[test]
fn without_the_volatile_accesses_cp_and_wcp_race() {
    for (p, t, _) in traces() {
        let mut stripped = t.clone();
        stripped
            .events
            .retain(|e| !matches!(e.op, Op::VolatileRead | Op::VolatileWrite));
        let name = format!("{} without volatiles:\n{}", p.display(), dump(&stripped));
        for window in [None, Some(10)] {
            assert_eq!(
                run(&stripped, Relation::Cp, "datalog", window).len(),
                1,
                "cp K={window:?} {name}"
            );
        }
        assert_eq!(
            run(&stripped, Relation::Wcp, "vc", None).len(),
            1,
            "wcp {name}"
        );
        assert!(
            run(&stripped, Relation::Hb, "vc", None).is_empty(),
            "hb {name}"
        );
    }
}

/// The command line (the path users take), default windows included.
#[test]
fn cli_reports_no_race() {
    for (p, _, _) in traces() {
        let f = p.display().to_string();
        for args in [
            &["--relation", "cp"][..],
            &["--relation", "cp", "--window", "10"],
            &["--relation", "cp", "--window", "none"],
            &["--relation", "cp", "--first-race"],
            &["--relation", "wcp"],
            &["--relation", "wcp", "--engine", "reference"],
            &["--relation", "hb"],
        ] {
            let mut all = vec!["analyze", f.as_str()];
            all.extend_from_slice(args);
            let (code, out, err) = cprace(&all);
            assert_eq!(code, 0, "{all:?}: {out}{err}");
        }
    }
}
