//! `cprace analyze --relation hb|lockset` end to end: engines, formats, errors.

use crate::common;

use common::cli::cprace;

const TRACE: &str = "T1|w(x)|a.java:1\nT1|fork(T2)|a.java:2\nT2|w(x)|b.java:1\nT1|w(y)|a.java:3\nT2|r(y)|b.java:2\nT1|join(T2)|a.java:4\nT1|r(x)|a.java:5\n";

#[test]
fn every_engine_reports_the_race_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(&p, TRACE).unwrap();
    let p = p.to_str().unwrap();
    for engine in ["vc", "epoch", "lockset"] {
        let (code, out, err) = cprace(&[
            "analyze",
            p,
            "--relation",
            "hb",
            "--engine",
            engine,
            "--format",
            "json",
        ]);
        assert_eq!(code, 1, "{engine}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["relation"], "hb");
        assert_eq!(v["engine"], engine);
        assert_eq!(v["racy_events"], serde_json::json!([4]));
        assert_eq!(v["races"][0]["first"], 3);
        assert_eq!(v["racy_variables"], serde_json::json!(["y"]));
    }
    let (code, out, _) = cprace(&["analyze", p, "--relation", "hb"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("WARNING: data race on `y` (write-read)"),
        "{out}"
    );
    assert!(out.contains("hb vc"), "{out}");
    let (code, out, _) = cprace(&["analyze", p, "--relation", "hb", "--format", "csv"]);
    assert_eq!(code, 1);
    assert!(
        out.lines().nth(1).unwrap().starts_with("3,4,y,write-read"),
        "{out}"
    );
    let (code, out, _) = cprace(&["analyze", p, "--relation", "lockset", "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["engine"], "eraser");
    assert_eq!(v["racy_events"], serde_json::json!([2, 4, 6]));
    assert!(v["notes"][0].as_str().unwrap().contains("UNSOUND"));
}

#[test]
fn race_free_trace_exits_zero_and_windows_apply() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(
        &p,
        "T1|w(x)|\nT1|acq(l)|\nT1|rel(l)|\nT2|acq(l)|\nT2|w(x)|\nT2|rel(l)|\nT3|w(x)|\n",
    )
    .unwrap();
    let p = p.to_str().unwrap();
    let (code, out, _) = cprace(&[
        "analyze",
        p,
        "--relation",
        "hb",
        "--engine",
        "epoch",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["racy_events"], serde_json::json!([6]));
    for engine in ["vc", "epoch", "lockset"] {
        let (code, _, err) = cprace(&[
            "analyze",
            p,
            "--relation",
            "hb",
            "--engine",
            engine,
            "--window",
            "2",
        ]);
        assert_eq!(code, 0, "{engine} with window 2: {err}");
    }
}

#[test]
fn unknown_engine_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(&p, TRACE).unwrap();
    let (code, _, err) = cprace(&[
        "analyze",
        p.to_str().unwrap(),
        "--relation",
        "hb",
        "--engine",
        "eraser",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("vc, epoch, lockset"), "{err}");
    let (code, _, err) = cprace(&[
        "analyze",
        p.to_str().unwrap(),
        "--relation",
        "lockset",
        "--engine",
        "vc",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("eraser"), "{err}");
}
