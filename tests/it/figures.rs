//! The paper figures shipped in data/figures, each with hand-derived verdicts
//! in a sidecar `.expected` file (`hb: ids`, `cp: ids`, `wcp: ids`).

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::oracle;
use common::traces::figure_paths;
use cprace::race::cp::{Reporting, analyze};
use cprace::trace::{Trace, load};

/// Every figure with its expected racy events per relation.
pub fn figures() -> Vec<(PathBuf, Trace, BTreeMap<String, Vec<u32>>)> {
    let mut out = Vec::new();
    for p in figure_paths() {
        let t = load(&p, None).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(p.with_extension("expected")).expect("sidecar exists");
        let mut want = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(':'))
        {
            let (rel, ids) = line.split_once(':').unwrap();
            let ids: Vec<u32> = ids.split_whitespace().map(|s| s.parse().unwrap()).collect();
            want.insert(rel.trim().to_string(), ids);
        }
        for rel in ["hb", "cp", "wcp"] {
            assert!(want.contains_key(rel), "{}: no `{rel}:` line", p.display());
        }
        out.push((p, t, want));
    }
    out
}

#[test]
fn cp_datalog_matches_figures() {
    for (p, t, want) in figures() {
        assert_eq!(
            analyze(&t, None, Reporting::All).racy_events(),
            want["cp"],
            "{}",
            p.display()
        );
        // A window wider than the trace changes nothing.
        let k = Some(t.len() as u64 + 1);
        assert_eq!(
            analyze(&t, k, Reporting::All).racy_events(),
            want["cp"],
            "{} K={k:?}",
            p.display()
        );
    }
}

#[test]
fn oracles_match_figures() {
    for (p, t, want) in figures() {
        assert_eq!(
            oracle::racy(&t, &oracle::hb_matrix(&t), None),
            want["hb"],
            "hb {}",
            p.display()
        );
        assert_eq!(
            oracle::racy(&t, &oracle::cp_matrix(&t, None), None),
            want["cp"],
            "cp {}",
            p.display()
        );
    }
}

#[test]
fn hb_engines_match_figures() {
    for (p, t, want) in figures() {
        let vc = crate::common::hb::run("vc", None, &t);
        assert_eq!(vc.racy_events(), want["hb"], "hb vc {}", p.display());
        let tc = crate::common::hb::run("treeclock", None, &t);
        assert_eq!(tc.races, vc.races, "hb treeclock {}", p.display());
        for engine in ["epoch", "lockset"] {
            let r = crate::common::hb::run(engine, None, &t);
            assert_eq!(
                r.first_race_per_variable(),
                vc.first_race_per_variable(),
                "hb {engine} {}",
                p.display()
            );
        }
        let closure = cprace::race::hb::datalog::analyze(&t, None);
        assert_eq!(
            closure.racy_events(),
            want["hb"],
            "hb datalog {}",
            p.display()
        );
    }
}

#[test]
fn wcp_engines_match_figures() {
    for (p, t, want) in figures() {
        assert_eq!(
            cprace::race::wcp::vc::analyze(&t, None).racy_events(),
            want["wcp"],
            "wcp vc {}",
            p.display()
        );
        assert_eq!(
            cprace::race::wcp::reference::analyze(&t, None).racy_events(),
            want["wcp"],
            "wcp reference {}",
            p.display()
        );
    }
}
