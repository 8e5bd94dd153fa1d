//! `cprace analyze --relation wcp` end to end: engines, JSON stats, limits.

use std::io::Write;

use crate::common::cli::cprace;

/// `cprace analyze PATH --relation wcp --format json EXTRA..`: the exit code
/// and the report, or on failure (exit 2) the error message.
fn analyze(path: &std::path::Path, extra: &[&str]) -> Result<(i32, serde_json::Value), String> {
    let mut args = vec![
        "analyze",
        path.to_str().unwrap(),
        "--relation",
        "wcp",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    match cprace(&args) {
        (2, _, err) => Err(err),
        (code, out, _) => Ok((code, serde_json::from_str(&out).unwrap())),
    }
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

// Figure 2b of wcp-2017 in STD format: a race CP misses.
const FIG_2B: &str = "t1|w(y)|A.java:1\nt1|acq(l)|A.java:2\nt1|w(x)|A.java:3\nt1|rel(l)|A.java:4\n\
                      t2|acq(l)|B.java:1\nt2|r(y)|B.java:2\nt2|r(x)|B.java:3\nt2|rel(l)|B.java:4\n";

#[test]
fn both_engines_report_figure_2b() {
    let f = file(FIG_2B);
    for engine in [None, Some("vc"), Some("reference")] {
        let extra: Vec<&str> = engine.map(|e| vec!["--engine", e]).unwrap_or_default();
        let (code, v) = analyze(f.path(), &extra).unwrap();
        assert_eq!(code, 1);
        assert_eq!(v["relation"], "wcp");
        assert_eq!(v["engine"], engine.unwrap_or("vc"));
        assert_eq!(v["racy_events"], serde_json::json!([5]));
        assert_eq!(v["races"][0]["first"], 0);
        assert_eq!(v["races"][0]["first_loc"], "A.java:1");
    }
}

#[test]
fn vc_reports_the_queue_statistic() {
    let f = file(FIG_2B);
    let (_, v) = analyze(f.path(), &[]).unwrap();
    // Two threads, two critical sections: each acquire and release enqueues one
    // entry for the other thread; t2's release dequeues t1's pair, so at most 3
    // entries are queued (t1's pair plus t2's acquire) out of 8 events.
    assert_eq!(v["stats"]["max_queue_length"], 3);
    assert_eq!(v["stats"]["max_queue_fraction"], 3.0 / 8.0);
}

#[test]
fn reference_refuses_long_traces() {
    let mut text = String::new();
    for i in 0..2001 {
        text.push_str(&format!("t{}|w(x)|\n", i % 2));
    }
    let f = file(&text);
    let err = analyze(f.path(), &["--engine", "reference"]).unwrap_err();
    let msg = err;
    assert!(msg.contains("2000") && msg.contains("--engine vc"), "{msg}");
    let (code, v) = analyze(f.path(), &[]).unwrap();
    assert_eq!(code, 1);
    assert_eq!(v["racy_events"].as_array().unwrap().len(), 2000);
}

#[test]
fn unknown_engine_is_a_usage_error() {
    let f = file(FIG_2B);
    let err = analyze(f.path(), &["--engine", "datalog"]).unwrap_err();
    assert!(err.contains("has no engine"), "{err}");
    assert!(err.contains("vc, reference"), "{err}");
}
