//! `cprace stats` on small traces with known counts, text and JSON, and the
//! validation semantics it reports (re-entrant acquires filtered, releases out
//! of nesting order and critical sections open at the end accepted).

use crate::common;

use common::cli::{cprace, with_stdin};
use serde_json::{Value, json};

fn stats(text: &str, name: &str, format: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    cprace(&["stats", p.to_str().unwrap(), "--format", format])
}

fn stats_json(text: &str, name: &str) -> Value {
    let (code, out, err) = stats(text, name, "json");
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Every counter, in output order.
const KEYS: [&str; 18] = [
    "events",
    "threads",
    "locks",
    "variables",
    "locations",
    "acquires",
    "releases",
    "reads",
    "writes",
    "forks",
    "joins",
    "volatile_accesses",
    "accesses_under_locks",
    "reads_from_other_threads",
    "max_nesting_depth",
    "reentrant_acquires_filtered",
    "out_of_nesting_releases",
    "unreleased_at_end",
];

// Main forks W, both use lock m (W re-entrantly), W nests n inside m and
// releases m first (out of nesting order), volatile handshake, join, and main
// ends holding lock k.
const TRACE: &str = "\
thread,op,target,loc
main,fork,W,M.java:1
main,acq,m,M.java:2
main,w,x,M.java:3
main,rel,m,M.java:4
W,acq,m,W.java:1
W,acq,m,W.java:2
W,acq,n,W.java:3
W,r,x,W.java:4
W,rel,m,W.java:5
W,rel,m,W.java:6
W,w,y,W.java:7
W,rel,n,W.java:8
W,vw,v,W.java:9
main,vr,v,
main,join,W,M.java:5
main,acq,k,M.java:6
main,r,y,M.java:7
";

fn expected() -> Value {
    json!({
        "events": 17,
        "threads": 2,
        "locks": 3,
        "variables": 3,
        "locations": 16,
        "acquires": 4,
        "releases": 3,
        "reads": 2,
        "writes": 2,
        "forks": 1,
        "joins": 1,
        "volatile_accesses": 2,
        "accesses_under_locks": 4,
        "reads_from_other_threads": 2,
        "max_nesting_depth": 2,
        "reentrant_acquires_filtered": 1,
        "out_of_nesting_releases": 1,
        "unreleased_at_end": 1,
    })
}

#[test]
fn json_counts_are_exact_and_ordered() {
    let v = stats_json(TRACE, "t.csv");
    assert_eq!(v, expected());
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, KEYS);
}

#[test]
fn text_lists_every_counter_with_warnings() {
    let (code, out, err) = stats(TRACE, "t.csv", "text");
    assert_eq!(code, 0, "{err}");
    let exp = expected();
    let lines: Vec<&str> = out.lines().collect();
    for (i, k) in KEYS.iter().enumerate() {
        assert_eq!(lines[i], format!("{k}: {}", exp[k]), "{out}");
    }
    assert!(
        out.contains("warning: 1 release is out of nesting order"),
        "{out}"
    );
    assert!(
        out.contains("note: 1 critical section is still open at the end"),
        "{out}"
    );
    assert!(
        out.contains(
            "note: 1 re-entrant acquire (of a lock already held) and its release is ignored"
        ),
        "{out}"
    );
    assert!(err.is_empty());
}

#[test]
fn same_counts_from_std_and_rapid_csv() {
    let mut std_text = String::new();
    let mut rapid = String::from("main,W\n");
    for line in TRACE.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        std_text += &format!("{}|{}({})|{}\n", f[0], f[1], f[2], f[3]);
        let cell = format!("{}({})", f[1], f[2]);
        rapid += &if f[0] == "main" {
            format!("{cell},\n")
        } else {
            format!(",{cell}\n")
        };
    }
    assert_eq!(stats_json(&std_text, "t.std"), expected());
    let mut no_locs = expected();
    no_locs["locations"] = json!(0);
    assert_eq!(stats_json(&rapid, "t.rapid.csv"), no_locs);
}

#[test]
fn clean_trace_has_no_warnings() {
    let t = "T0|acq(l)|1\nT0|w(x)|2\nT0|rel(l)|3\nT1|acq(l)|4\nT1|r(x)|5\nT1|rel(l)|6\nT1|r(x)|7\n";
    let (code, out, _) = stats(t, "c.std", "text");
    assert_eq!(code, 0);
    assert!(!out.contains("warning") && !out.contains("note"), "{out}");
    let v = stats_json(t, "c.std");
    assert_eq!(
        (
            v["events"].as_u64(),
            v["accesses_under_locks"].as_u64(),
            v["reads"].as_u64(),
            v["max_nesting_depth"].as_u64(),
            v["reads_from_other_threads"].as_u64()
        ),
        (Some(7), Some(2), Some(2), Some(1), Some(2))
    );
}

#[test]
fn empty_trace_is_all_zeros() {
    let v = stats_json("thread,op,target,loc\n", "e.csv");
    for k in KEYS {
        assert_eq!(v[k], json!(0), "{k}");
    }
}

#[test]
fn stats_reads_standard_input() {
    let out = with_stdin(&["stats", "-", "--format", "json"], TRACE.as_bytes());
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, expected());
}
