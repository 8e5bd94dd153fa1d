//! `cprace sweep`: the table obeys the laws (CP racy events grow with K, contain
//! HB's at the same K, stay within WCP; `none` is exact CP), the recommendation
//! meets its definition and the output formats have their documented shape
//! (the figures are tested in tests/it/plot.rs).

use crate::common;

use std::process::{Command, Output};

use common::cli::{output as cprace, stderr};
use common::traces::figure_paths as figures;
use common::traces::generated;

use cprace::race::cp::{Reporting, analyze};
use cprace::race::{Options, analyze_trace};
use cprace::relation::Relation;
use cprace::tools::generate::{Config, trace};
use cprace::tools::sweep::{self, Sweep, Windows};
use cprace::trace::{Trace, load};
use serde_json::Value;

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 stdout")
}

fn hb_racy(t: &Trace, k: Option<u64>) -> Vec<u32> {
    let opts = Options {
        window: k,
        ..Options::new(Relation::Hb)
    };
    analyze_trace(t, &opts).expect("hb").racy_events()
}

/// Every law the table must respect, checked against independent runs of
/// the engines. `what` names the trace in failure messages.
fn check_laws(t: &Trace, s: &Sweep, windows: &[Option<u64>], what: &str) {
    let rows: Vec<&sweep::Row> = s.window_rows().collect();
    assert_eq!(
        rows.iter().map(|r| r.window).collect::<Vec<_>>(),
        windows,
        "{what}: one CP row per window, in order"
    );
    let mut prev: Option<&sweep::Row> = None;
    for r in &rows {
        let w = sweep::window_name(r.window);
        // Each row is exactly windowed CP at its K ...
        let cp = analyze(t, r.window, Reporting::All);
        assert_eq!(
            r.racy_events,
            cp.racy_events().len() as u64,
            "{what} K={w}: racy events"
        );
        assert_eq!(
            r.racy_variables,
            cp.racy_variables().len() as u64,
            "{what} K={w}: racy variables"
        );
        assert_eq!(
            r.location_pairs,
            cp.location_pairs().len() as u64,
            "{what} K={w}: location pairs"
        );
        // ... containing every racy event of exact HBv (and of exact HB when
        // HBv adds no edge to HB, docs/src/semantic-decisions.md "Semantic decisions"): a window
        // bounds CP's reasoning, never the report.
        let hb = hb_racy(t, None);
        let cp_racy = cp.racy_events();
        assert!(
            common::laws::subset(&common::laws::hbv_racy(t, None), &cp_racy),
            "{what} K={w}: an HBv racy event is not CP racy"
        );
        assert_eq!(r.hb_racy_events, hb.len() as u64, "{what} K={w}: HB racy");
        let new_vs_hb = cp_racy
            .iter()
            .filter(|e| hb.binary_search(e).is_err())
            .count();
        assert_eq!(r.new_vs_hb, new_vs_hb as u64, "{what} K={w}: new vs HB");
        if common::laws::hbv_is_hb(t) {
            assert!(
                common::laws::subset(&hb, &cp_racy),
                "{what} K={w}: an HB racy event is not CP racy (HB = HBv here)"
            );
            assert!(r.racy_events >= r.hb_racy_events, "{what} K={w}: below HB");
        }
        // Monotone in K.
        if let Some(p) = prev {
            assert!(
                r.racy_events >= p.racy_events,
                "{what}: racy events shrink from K={} ({}) to K={w} ({})",
                sweep::window_name(p.window),
                p.racy_events,
                r.racy_events
            );
        }
        prev = Some(r);
    }
    // `none` is exact CP.
    if let Some(none) = rows.iter().find(|r| r.window.is_none()) {
        let exact = analyze(t, None, Reporting::All).racy_events().len() as u64;
        assert_eq!(none.racy_events, exact, "{what}: none row is not exact CP");
    }
    // The HB row is exact HB, a lower bound of exact CP.
    let hb = s.bound("hb").expect("hb row");
    assert_eq!(
        hb.racy_events,
        hb_racy(t, None).len() as u64,
        "{what}: hb row"
    );
    assert_eq!(hb.window, None);
    assert_eq!(hb.new_vs_hb, 0);
    if let Some(none) = rows.iter().find(|r| r.window.is_none())
        && common::laws::hbv_is_hb(t)
    {
        assert!(
            hb.racy_events <= none.racy_events,
            "{what}: exact HB above exact CP"
        );
    }
    // WCP, once built in, bounds every CP row from above.
    if let Some(wcp) = s.bound("wcp") {
        for r in &rows {
            assert!(
                r.racy_events <= wcp.racy_events,
                "{what} K={}: CP above WCP",
                sweep::window_name(r.window)
            );
        }
        if common::laws::hbv_is_hb(t) {
            assert!(wcp.racy_events >= hb.racy_events, "{what}: WCP below HB");
        }
    }
    check_recommendation(s, what);
}

/// Exactly one CP row is recommended: every later row has its count, and the
/// row before it (if any) has a different one.
fn check_recommendation(s: &Sweep, what: &str) {
    let rows: Vec<&sweep::Row> = s.window_rows().collect();
    let picked: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].recommended).collect();
    assert_eq!(picked.len(), 1, "{what}: exactly one recommended row");
    assert!(
        s.rows
            .iter()
            .filter(|r| r.recommended)
            .all(|r| r.is_window_row())
    );
    let i = picked[0];
    assert!(
        rows[i..]
            .iter()
            .all(|r| r.racy_events == rows[i].racy_events),
        "{what}: racy events still change after the recommended K"
    );
    if i > 0 {
        assert_ne!(
            rows[i - 1].racy_events,
            rows[i].racy_events,
            "{what}: a smaller K would do"
        );
    }
    let sentence = s.recommendation.as_deref().expect("sentence");
    let k = sweep::window_name(rows[i].window);
    assert!(
        sentence.starts_with(&format!("recommended K = {k}:")),
        "{what}: {sentence}"
    );
    assert!(
        sentence.contains(&rows[i].racy_events.to_string()),
        "{what}: evidence: {sentence}"
    );
}

#[test]
fn laws_hold_on_generated_traces() {
    let windows = [Some(2), Some(5), Some(10), Some(25), Some(60), None];
    for seed in 0..120u64 {
        let cfg = Config {
            events: 30 + seed % 90,
            threads: 2 + (seed % 4) as u32,
            locks: 1 + (seed % 3) as u32,
            vars: 2 + (seed % 4) as u32,
            volatiles: (seed % 2) as u32,
            max_nesting: 1 + (seed % 3) as u32,
            fork_join: seed % 3 == 0,
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        let s = sweep::run(&t, &windows, &mut |_| {}).expect("sweep");
        check_laws(
            &t,
            &s,
            &windows,
            &format!("seed {seed} ({} events)", t.len()),
        );
    }
}

#[test]
fn laws_hold_on_paper_figures() {
    for f in figures() {
        let t = load(&f, None).expect("figure loads");
        let windows = Windows::Auto.resolve(t.len() as u64);
        let windows: Vec<Option<u64>> = [Some(2), Some(3), Some(5)]
            .into_iter()
            .chain(windows)
            .collect();
        let s = sweep::run(&t, &windows, &mut |_| {}).expect("sweep");
        check_laws(&t, &s, &windows, &f.display().to_string());
    }
}

#[test]
fn progress_counts_every_run() {
    let t = trace(&Config {
        events: 200,
        seed: 3,
        ..Config::default()
    });
    let windows = [Some(10), Some(100), None];
    let mut seen = Vec::new();
    sweep::run(&t, &windows, &mut |p| seen.push(p.clone())).expect("sweep");
    // Exact HB, then CP per window, then the other bounds.
    let extra_bounds = sweep::bounds()
        .iter()
        .filter(|b| b.1 != Relation::Hb)
        .count();
    assert_eq!(seen.len(), 1 + windows.len() + extra_bounds);
    for (i, p) in seen.iter().enumerate() {
        assert_eq!(p.done, i);
        assert_eq!(p.total, seen.len());
        assert_eq!(p.events_done, i as u64 * 200);
        assert_eq!(p.events_total, seen.len() as u64 * 200);
    }
    assert_eq!(seen[0].what, "hb");
    assert_eq!(seen[1].what, "cp K=10");
}

#[test]
fn windows_parse_and_resolve() {
    assert_eq!(Windows::parse("auto"), Ok(Windows::Auto));
    assert_eq!(
        Windows::parse("5000, none,100,1k,100")
            .unwrap()
            .resolve(10_000),
        vec![Some(100), Some(1000), Some(5000), None]
    );
    for bad in ["0", "", "ten", "100,,none", "-5", "1.5"] {
        assert!(Windows::parse(bad).is_err(), "`{bad}` should be rejected");
    }
    assert_eq!(
        sweep::auto_windows(3000),
        vec![Some(10), Some(30), Some(100), Some(300), Some(1000), None]
    );
    assert_eq!(
        sweep::auto_windows(1000),
        vec![Some(10), Some(30), Some(100), Some(300), None]
    );
    assert_eq!(sweep::auto_windows(10), vec![None]);
    assert_eq!(sweep::auto_windows(0), vec![None]);
    // Huge traces stop without overflowing.
    let big = sweep::auto_windows(u64::MAX);
    assert_eq!(big.last(), Some(&None));
    assert!(big.windows(2).all(|w| w[1].is_none() || w[0] < w[1]));
}

#[test]
fn recommendation_sentences() {
    let t = trace(&Config {
        events: 400,
        threads: 4,
        locks: 2,
        vars: 3,
        seed: 13,
        ..Config::default()
    });
    // A single window: recommended, with a caveat.
    let s = sweep::run(&t, &[Some(50)], &mut |_| {}).unwrap();
    assert!(s.rows[0].recommended);
    assert!(
        s.recommendation
            .as_deref()
            .unwrap()
            .contains("the only window swept")
    );
    // Windows 1 (CP is then exactly HB: every pair is 1 or more apart) and
    // none: growth up to the end.
    let s = sweep::run(&t, &[Some(1), None], &mut |_| {}).unwrap();
    assert_eq!(s.rows[0].racy_events, s.bound("hb").unwrap().racy_events);
    assert!(
        s.rows[1].racy_events > s.rows[0].racy_events,
        "seed 13: exact CP should find races HB misses"
    );
    assert!(s.rows[1].recommended);
    let text = s.recommendation.unwrap();
    assert!(
        text.starts_with("recommended K = none: racy events still grow"),
        "{text}"
    );
    // Growth stops: the first K of the final plateau, with the later ones listed.
    let s = sweep::run(&t, &[Some(1), Some(1000), Some(2000), None], &mut |_| {}).unwrap();
    assert!(s.rows[1].recommended);
    assert_eq!(
        s.recommendation.unwrap(),
        format!(
            "recommended K = 1000: racy events {} at K=1000, unchanged at 2000 and none",
            s.rows[1].racy_events
        )
    );
}

#[test]
fn peak_is_unknown_without_the_counting_allocator() {
    // The test harness does not install it; the binary does (see below).
    assert_eq!(cprace::alloc::peak(), None);
    assert_eq!(cprace::alloc::reset_peak(), None);
    let t = trace(&Config {
        events: 100,
        seed: 1,
        ..Config::default()
    });
    let s = sweep::run(&t, &[Some(10)], &mut |_| {}).unwrap();
    assert!(s.rows.iter().all(|r| r.peak_bytes.is_none()));
}

// ---- the binary ----

#[test]
fn text_table_has_every_row_and_the_recommendation() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 1);
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "100,500,1000,5000,none",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "races found exit 1: {}",
        stderr(&o)
    );
    assert_eq!(stderr(&o), "", "quiet when stderr is not a terminal");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("window"), "{out}");
    for (i, k) in ["100", "500", "1000", "5000", "none"].iter().enumerate() {
        assert!(lines[1 + i].starts_with(k), "row {i}: {}", lines[1 + i]);
        assert!(lines[1 + i].contains("cp datalog"));
    }
    assert!(lines.iter().any(|l| l.starts_with("hb ")), "{out}");
    let rec = lines
        .iter()
        .find(|l| l.starts_with("recommended K = "))
        .expect("recommendation");
    assert!(rec.contains("racy events"), "{rec}");
    // Memory and time columns are filled in by the binary.
    assert!(
        lines[1].contains("KiB") || lines[1].contains("MiB"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains(" ms") || lines[1].contains(" s"),
        "{}",
        lines[1]
    );
}

fn json_rows(o: &Output) -> Vec<Value> {
    match serde_json::from_str::<Value>(&stdout(o)).expect("JSON output") {
        Value::Array(a) => a,
        v => panic!("expected an array, got {v}"),
    }
}

#[test]
fn json_is_an_array_of_rows_matching_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 1);
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "auto",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let rows = json_rows(&o);
    let t = load(&f, None).unwrap();
    let windows = sweep::auto_windows(3000);
    let bounds = sweep::bounds();
    assert_eq!(rows.len(), windows.len() + bounds.len());
    let keys = [
        "row",
        "window",
        "relation",
        "engine",
        "racy_events",
        "racy_variables",
        "location_pairs",
        "hb_racy_events",
        "new_vs_hb",
        "seconds",
        "peak_bytes",
        "recommended",
    ];
    for r in &rows {
        let obj = r.as_object().expect("row object");
        for k in keys {
            assert!(obj.contains_key(k), "row lacks {k}: {r}");
        }
        assert!(r["racy_events"].is_u64());
        assert!(r["seconds"].as_f64().is_some_and(|s| s >= 0.0));
        // The binary installs the counting allocator: every run allocates.
        assert!(r["peak_bytes"].as_u64().is_some_and(|b| b > 0), "{r}");
        assert!(r["recommended"].is_boolean());
    }
    for (r, w) in rows.iter().zip(&windows) {
        assert_eq!(r["row"], "window");
        assert_eq!(r["window"], serde_json::json!(w));
        assert_eq!(r["relation"], "cp");
        let cp = analyze(&t, *w, Reporting::All);
        assert_eq!(r["racy_events"], cp.racy_events().len() as u64);
    }
    assert_eq!(rows[windows.len() - 1]["window"], Value::Null);
    for (r, (label, _)) in rows[windows.len()..].iter().zip(&bounds) {
        assert_eq!(r["row"], "bound");
        assert_eq!(r["relation"], *label);
        assert_eq!(r["window"], Value::Null, "numbers or null only");
    }
    let bound = |rel: &str| {
        rows.iter()
            .find(|r| r["row"] == "bound" && r["relation"] == rel)
    };
    let hb = bound("hb").expect("hb row");
    assert_eq!(hb["racy_events"], hb_racy(&t, None).len() as u64);
    if let Some(wcp) = bound("wcp") {
        for r in &rows[..windows.len()] {
            assert!(r["racy_events"].as_u64() <= wcp["racy_events"].as_u64());
        }
    }
    // The recommendation: one row in JSON, the sentence on stderr.
    let rec: Vec<&Value> = rows.iter().filter(|r| r["recommended"] == true).collect();
    assert_eq!(rec.len(), 1);
    let err = stderr(&o);
    let k = rec[0]["window"]
        .as_u64()
        .map_or("none".to_string(), |k| k.to_string());
    assert!(
        err.starts_with(&format!("cprace: recommended K = {k}:")),
        "{err}"
    );
}

#[test]
fn csv_has_a_header_and_one_line_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 2);
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "50,none",
        "--format",
        "csv",
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], sweep::CSV_HEADER.join(","));
    assert_eq!(lines.len(), 1 + 2 + sweep::bounds().len());
    assert!(lines[1].starts_with("window,50,cp,datalog,"));
    assert!(lines[2].starts_with("window,,cp,datalog,"));
    assert!(lines[3].starts_with("bound,,hb,"));
    for l in &lines[1..] {
        assert_eq!(l.split(',').count(), sweep::CSV_HEADER.len(), "{l}");
    }
    assert_eq!(lines.iter().filter(|l| l.ends_with(",true")).count(), 1);
}

#[test]
fn usage_errors_exit_2_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 200, 1);
    let f = f.to_str().unwrap();
    let jpg = dir.path().join("plot.jpg");
    let cases: Vec<Vec<&str>> = vec![
        vec!["sweep", f, "--plot", jpg.to_str().unwrap()],
        vec!["sweep", f, "--plot", "plot"],
        vec!["sweep", f, "--windows", "0,100"],
        vec!["sweep", f, "--windows", "lots"],
        vec!["sweep", f, "--format", "xml"],
        vec!["sweep", "/nonexistent/trace.csv"],
    ];
    for args in cases {
        let o = cprace(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert!(!stderr(&o).is_empty(), "{args:?}");
    }
    assert!(!jpg.exists());
    let o = cprace(&["sweep", "--help"]);
    let help = stdout(&o);
    assert!(
        help.contains("Examples:") && help.contains("--windows auto"),
        "{help}"
    );
}

#[test]
fn reads_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 500, 4);
    let o = Command::new(crate::common::cli::BIN)
        .args(["sweep", "-", "--windows", "10,none", "--format", "json"])
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    let from_stdin = json_rows(&o);
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "10,none",
        "--format",
        "json",
    ]);
    let from_file = json_rows(&o);
    let counts = |rows: &[Value]| {
        rows.iter()
            .map(|r| r["racy_events"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&from_stdin), counts(&from_file));
}
