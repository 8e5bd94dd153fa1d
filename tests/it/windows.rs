//! Window values end to end: any K up to
//! 2^64 - 1 means what the definition says, a K of at least the trace length
//! is no window in analyze, compare, sweep and query, and `--max-distance`
//! limits reported pairs for every relation (`--window` its alias off cp).

use crate::common;

use common::cli::cprace;
use serde_json::Value;

const HUGE: [&str; 3] = ["9223372036854775808", "18446744073709551615", "4294967296"];

/// A generated trace of `n` events with races near and far, in a temp dir.
fn generated(dir: &std::path::Path, n: u64, seed: u64) -> String {
    generated_with(dir, n, seed, &[])
}

/// [`generated`] with more `cprace gen` options.
fn generated_with(dir: &std::path::Path, n: u64, seed: u64, extra: &[&str]) -> String {
    let path = dir.join(format!("t{seed}.std"));
    let (n, seed) = (n.to_string(), seed.to_string());
    let mut args = vec![
        "gen",
        "-n",
        &n,
        "--seed",
        &seed,
        "--threads",
        "4",
        "--locks",
        "3",
        "--vars",
        "6",
        "--format",
        "std",
        "-o",
        path.to_str().unwrap(),
    ];
    args.extend(extra);
    let (code, _, err) = cprace(&args);
    assert_eq!(code, 0, "gen: {err}");
    path.to_str().unwrap().to_string()
}

fn json(args: &[&str]) -> (i32, Value) {
    let (code, out, err) = cprace(args);
    assert!(code == 0 || code == 1, "{args:?} exit {code}: {err}");
    (code, serde_json::from_str(&out).expect("json output"))
}

#[test]
fn huge_windows_are_none_in_analyze_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [1, 2] {
        let f = generated(dir.path(), 900, seed);
        for engine in ["datalog", "reference", "compare"] {
            let base = ["analyze", &f, "--relation", "cp", "--engine", engine];
            let run = |w: &str| {
                let mut a = base.to_vec();
                a.extend(["--window", w, "--format", "json"]);
                json(&a)
            };
            let (code, none) = run("none");
            for k in HUGE {
                let (c, j) = run(k);
                assert_eq!(c, code, "seed {seed} {engine} K={k}");
                assert_eq!(j["races"], none["races"], "seed {seed} {engine} K={k}");
                assert_eq!(j["window"].as_u64().unwrap().to_string(), k);
            }
        }
    }
}

#[test]
fn huge_windows_are_none_in_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 4);
    let windows = format!("10,100,{},none", HUGE.join(","));
    let (_, rows) = json(&["sweep", &f, "--windows", &windows, "--format", "json"]);
    let rows = rows.as_array().unwrap();
    let count = |w: Value| {
        rows.iter()
            .find(|r| r["row"] == "window" && r["window"] == w)
            .unwrap_or_else(|| panic!("row {w}"))["racy_events"]
            .as_u64()
            .unwrap()
    };
    let none = count(Value::Null);
    for k in HUGE {
        let k: u64 = k.parse().unwrap();
        assert_eq!(count(k.into()), none, "K={k}");
    }
    // Rows rise from HB to exact CP.
    let hb = rows
        .iter()
        .find(|r| r["row"] == "bound" && r["relation"] == "hb")
        .expect("the hb bound row")["racy_events"]
        .as_u64()
        .unwrap();
    assert!(hb <= count(10.into()) && count(10.into()) <= count(100.into()));
    assert!(count(100.into()) <= none);
}

#[test]
fn huge_windows_are_none_in_query() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 800, 5);
    for relation in ["cp", "hb", "wcp"] {
        let dump = |w: &str| {
            let (code, out, err) = cprace(&["query", &f, "--relation", relation, "--window", w]);
            assert_eq!(code, 0, "{err}");
            out
        };
        let none = dump("none");
        assert!(none.lines().count() > 10, "{relation}: a real dump");
        for k in HUGE {
            assert_eq!(dump(k), none, "{relation} K={k}");
        }
    }
    // Explained pairs, near and far.
    for (a, b) in [(3, 40), (10, 700), (0, 799), (100, 650)] {
        let pair = format!("{a},{b}");
        let ask = |w: &str| {
            let (_, j) = json(&[
                "query",
                &f,
                "--relation",
                "cp",
                "--pair",
                &pair,
                "--window",
                w,
                "--format",
                "json",
            ]);
            (j["ordered"].clone(), j["hb_ordered"].clone())
        };
        let none = ask("none");
        for k in HUGE {
            assert_eq!(ask(k), none, "pair {pair} K={k}");
        }
    }
}

#[test]
fn max_distance_limits_reports_for_every_relation() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 2000, 6);
    for (relation, engines) in [
        ("hb", vec!["vc", "epoch", "lockset", "datalog"]),
        ("wcp", vec!["vc"]),
        ("lockset", vec!["eraser"]),
        ("po", vec!["stream"]),
        ("cp", vec!["datalog"]),
    ] {
        for engine in engines {
            let run = |extra: &[&str]| {
                let mut a = vec![
                    "analyze",
                    &f,
                    "--relation",
                    relation,
                    "--engine",
                    engine,
                    "--format",
                    "json",
                ];
                a.extend(extra);
                json(&a).1
            };
            let all = run(&[]);
            let near = run(&["--max-distance", "50"]);
            assert_eq!(near["max_distance"], 50, "{relation}/{engine}");
            let racy = |j: &Value| -> Vec<u64> {
                j["racy_events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect()
            };
            let (a, n) = (racy(&all), racy(&near));
            // epoch and lockset may miss races after a variable's first one,
            // differently with and without a distance.
            let exact = !matches!(engine, "epoch" | "lockset");
            assert!(
                !n.is_empty() && (!exact || (n.len() < a.len() && n.iter().all(|e| a.contains(e)))),
                "{relation}/{engine}: distance 50 reports a proper subset"
            );
            for r in near["races"].as_array().unwrap() {
                let d = r["second"].as_u64().unwrap() - r["first"].as_u64().unwrap();
                assert!(d < 50, "{relation}/{engine}: pair {d} apart reported");
            }
            if relation != "cp" {
                // --window is an alias of --max-distance off cp.
                let alias = run(&["--window", "50"]);
                assert_eq!(alias["races"], near["races"], "{relation}/{engine}");
                assert_eq!(alias["window"], Value::Null);
                assert_eq!(alias["max_distance"], 50);
                let (code, _, err) = cprace(&[
                    "analyze",
                    &f,
                    "--relation",
                    relation,
                    "--window",
                    "5",
                    "--max-distance",
                    "5",
                ]);
                assert_eq!(code, 2, "{relation}: both given");
                assert!(err.contains("alias"), "{err}");
            }
        }
    }
}

#[test]
fn cp_default_window_never_hides_an_hb_race_without_volatiles() {
    let dir = tempfile::tempdir().unwrap();
    // Long traces: most racy pairs lie more than the default K = 1000 apart.
    // Without volatiles HBv = HB (with them CP may rightly order what HB
    // does not; docs/src/semantic-decisions.md "Semantic decisions").
    for seed in [7, 8] {
        let f = generated_with(dir.path(), 20_000, seed, &["--volatiles", "0"]);
        let racy = |relation: &str| -> Vec<u64> {
            json(&["analyze", &f, "--relation", relation, "--format", "json"]).1["racy_events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect()
        };
        let (hb, cp) = (racy("hb"), racy("cp"));
        assert!(!hb.is_empty());
        assert!(
            hb.iter().all(|e| cp.binary_search(e).is_ok()),
            "seed {seed}"
        );
    }
}
