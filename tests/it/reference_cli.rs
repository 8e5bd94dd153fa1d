//! `cprace analyze` with the reference engines: wiring, default window, the
//! size limit.

use crate::common::cli::output;

const POLAR: &str = "T1|r(count)|a\nT1|w(count)|b\nT1|acq(this)|c\nT1|w(radius)|d\nT1|rel(this)|e\n\
T2|acq(this)|f\nT2|r(angle)|g\nT2|rel(this)|h\nT2|r(count)|i\nT2|w(count)|j\n";

fn analyze(text: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.std");
    std::fs::write(&path, text).unwrap();
    let mut all = vec!["analyze", path.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = output(&all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

#[test]
fn cp_reference_defaults_to_window_1000() {
    let (code, j, err) = analyze(POLAR, &["--relation", "cp", "--engine", "reference"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(j["window"], 1000);
    assert_eq!(j["racy_events"], serde_json::json!([8, 9]));
    assert_eq!(j["engine"], "reference");
    assert!(j["stats"]["cp_pairs"].is_number());
    let (code, j, _) = analyze(
        POLAR,
        &[
            "--relation",
            "cp",
            "--engine",
            "reference",
            "--window",
            "none",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(j["window"], serde_json::Value::Null);
    let (_, j, _) = analyze(
        POLAR,
        &["--relation", "cp", "--engine", "reference", "--window", "5"],
    );
    assert_eq!(j["racy_events"], serde_json::json!([]));
}

#[test]
fn hb_reference_has_no_default_window() {
    let (code, j, err) = analyze(POLAR, &["--relation", "hb", "--engine", "reference"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["window"], serde_json::Value::Null);
    assert_eq!(j["racy_events"], serde_json::json!([]));
}

#[test]
fn reference_refuses_long_traces() {
    let text: String = (0..2001).map(|i| format!("T{}|w(x)|\n", i % 2)).collect();
    let (code, _, err) = analyze(&text, &["--relation", "cp", "--engine", "reference"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("at most 2000 events") && err.contains("--engine datalog"),
        "{err}"
    );
}
