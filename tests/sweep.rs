//! `cprace sweep`: the table obeys the laws (CP racy events grow with K, contain
//! HB's at the same K, stay within WCP; `none` is exact CP), the recommendation
//! meets its definition, the output formats have their documented shape, and
//! the plots are a well-formed SVG and a valid PNG showing every series.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::traces::figure_paths as figures;

use cprace::analyze::{Options, Relation, analyze_trace};
use cprace::cp::{Reporting, analyze};
use cprace::generate::{Config, trace};
use cprace::plot;
use cprace::sweep::{self, Sweep, Windows};
use cprace::trace::{Trace, load};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cprace");

fn cprace(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run cprace")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `cprace gen --profile small -n N --seed S` into `dir`.
fn generated(dir: &Path, n: u64, seed: u64) -> PathBuf {
    let path = dir.join(format!("small-{n}-{seed}.csv"));
    let o = cprace(&[
        "gen",
        "--profile",
        "small",
        "-n",
        &n.to_string(),
        "--seed",
        &seed.to_string(),
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "gen failed: {}", stderr(&o));
    path
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
        // HBv adds no edge to HB, README "Semantic decisions"): a window
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
        assert_eq!(r["window"], serde_json::json!(w));
        assert_eq!(r["relation"], "cp");
        let cp = analyze(&t, *w, Reporting::All);
        assert_eq!(r["racy_events"], cp.racy_events().len() as u64);
    }
    assert_eq!(rows[windows.len() - 1]["window"], Value::Null);
    for (r, (label, _)) in rows[windows.len()..].iter().zip(&bounds) {
        assert_eq!(r["window"], *label);
    }
    let hb = rows.iter().find(|r| r["window"] == "hb").expect("hb row");
    assert_eq!(hb["racy_events"], hb_racy(&t, None).len() as u64);
    if let Some(wcp) = rows.iter().find(|r| r["window"] == "wcp") {
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
    assert!(lines[1].starts_with("50,cp,datalog,"));
    assert!(lines[2].starts_with("none,cp,datalog,"));
    assert!(lines[3].starts_with("hb,hb,"));
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
    let o = Command::new(BIN)
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

// ---- the plots ----

/// A minimal XML well-formedness check: balanced, properly nested tags,
/// quoted attributes, escaped text. Returns the elements as (name, attributes,
/// text content).
type Element = (String, Vec<(String, String)>, String);

fn parse_xml(doc: &str) -> Vec<Element> {
    let mut stack: Vec<usize> = Vec::new();
    let mut elements: Vec<Element> = Vec::new();
    let mut rest = doc.trim_start();
    if let Some(r) = rest.strip_prefix("<?xml") {
        rest = &r[r.find("?>").expect("unterminated XML declaration") + 2..];
    }
    let mut roots = 0;
    loop {
        let lt = match rest.find('<') {
            Some(i) => i,
            None => {
                assert!(rest.trim().is_empty(), "text after the root element");
                break;
            }
        };
        let text = &rest[..lt];
        check_text(text);
        if let Some(&top) = stack.last() {
            elements[top].2.push_str(text);
        } else {
            assert!(text.trim().is_empty(), "text outside the root: {text:?}");
        }
        let gt = rest[lt..].find('>').expect("unterminated tag") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().expect("closing tag without opening");
            assert_eq!(elements[open].0, name.trim(), "mismatched closing tag");
            continue;
        }
        let (body, empty) = match tag.strip_suffix('/') {
            Some(b) => (b, true),
            None => (tag, false),
        };
        let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
        let name = &body[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':'),
            "bad tag name {name:?}"
        );
        let attrs = parse_attrs(&body[name_end..]);
        if stack.is_empty() {
            roots += 1;
        }
        elements.push((name.to_string(), attrs, String::new()));
        if !empty {
            stack.push(elements.len() - 1);
        }
    }
    assert!(stack.is_empty(), "unclosed tags");
    assert_eq!(roots, 1, "exactly one root element");
    elements
}

fn check_text(t: &str) {
    assert!(!t.contains('>'), "unescaped > in {t:?}");
    let mut s = t;
    while let Some(i) = s.find('&') {
        let semi = s[i..].find(';').expect("unterminated entity") + i;
        let ent = &s[i + 1..semi];
        assert!(
            ["amp", "lt", "gt", "quot", "apos"].contains(&ent),
            "unknown entity &{ent};"
        );
        s = &s[semi + 1..];
    }
}

fn parse_attrs(mut s: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return v;
        }
        let eq = s.find('=').expect("attribute without =");
        let name = s[..eq].trim();
        assert!(
            !name.is_empty() && !name.contains(char::is_whitespace),
            "bad attribute {name:?}"
        );
        let r = s[eq + 1..].trim_start();
        assert!(r.starts_with('"'), "unquoted attribute {name}");
        let end = r[1..].find('"').expect("unterminated attribute") + 1;
        let value = &r[1..end];
        assert!(!value.contains('<'), "< in attribute {name}");
        check_text(value);
        assert!(
            v.iter().all(|(n, _): &(String, String)| n != name),
            "duplicate attribute {name}"
        );
        v.push((name.to_string(), value.to_string()));
        s = &r[end + 1..];
    }
}

fn attr<'a>(e: &'a Element, name: &str) -> Option<&'a str> {
    e.1.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The series every plot must show: (legend name, points, colour).
fn expected_series(rows: &[Value]) -> Vec<(String, usize, plot::Color)> {
    let n = rows.iter().filter(|r| r["relation"] == "cp").count();
    let mut v = vec![
        (plot::CP_SERIES.to_string(), n, plot::CP_COLOR),
        (plot::TIME_SERIES.to_string(), n, plot::TIME_COLOR),
        (plot::bound_series("hb"), 2, plot::HB_COLOR),
    ];
    if rows.iter().any(|r| r["window"] == "wcp") {
        v.push((plot::bound_series("wcp"), 2, plot::WCP_COLOR));
    }
    v
}

#[test]
fn svg_plot_is_well_formed_with_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 1);
    // A file name that needs escaping ends up in the title.
    let odd = dir.path().join("r&d <1>.csv");
    std::fs::copy(&f, &odd).unwrap();
    let svg = dir.path().join("sweep.SVG");
    let o = cprace(&[
        "sweep",
        odd.to_str().unwrap(),
        "--windows",
        "100,500,1000,5000,none",
        "--format",
        "json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let rows = json_rows(&o);
    let doc = std::fs::read_to_string(&svg).expect("svg written");
    let elements = parse_xml(&doc);
    assert_eq!(elements[0].0, "svg");
    assert_eq!(
        attr(&elements[0], "xmlns"),
        Some("http://www.w3.org/2000/svg")
    );
    let texts: Vec<String> = elements
        .iter()
        .filter(|e| e.0 == "text")
        .map(|e| unescape(&e.2))
        .collect();
    assert!(
        texts.iter().any(|t| t == "cprace sweep: r&d <1>.csv"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "none"), "none is labelled");
    assert!(texts.iter().any(|t| t.contains("log scale")));
    for (name, points, color) in expected_series(&rows) {
        let lines: Vec<&Element> = elements
            .iter()
            .filter(|e| {
                e.0 == "polyline"
                    && attr(e, "data-series").map(unescape).as_deref() == Some(name.as_str())
            })
            .collect();
        assert_eq!(lines.len(), 1, "one polyline for {name}");
        let pts = attr(lines[0], "points").unwrap();
        assert_eq!(pts.split_whitespace().count(), points, "{name}: {pts}");
        for p in pts.split_whitespace() {
            let (x, y) = p.split_once(',').expect("x,y");
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            assert!(
                (0.0..=plot::WIDTH as f64).contains(&x) && (0.0..=plot::HEIGHT as f64).contains(&y),
                "{name}: {p} off the canvas"
            );
        }
        let hex = format!("#{:02x}{:02x}{:02x}", color[0], color[1], color[2]);
        assert_eq!(attr(lines[0], "stroke"), Some(hex.as_str()));
        assert!(texts.contains(&name), "{name} missing from the legend");
    }
    // The racy-events line rises (or stays) left to right: y shrinks.
    let cp = elements
        .iter()
        .find(|e| attr(e, "data-series") == Some(plot::CP_SERIES))
        .unwrap();
    let ys: Vec<f64> = attr(cp, "points")
        .unwrap()
        .split_whitespace()
        .map(|p| p.split_once(',').unwrap().1.parse().unwrap())
        .collect();
    assert!(ys.windows(2).all(|w| w[1] <= w[0] + 1e-9), "{ys:?}");
}

/// Inflate a zlib stream with stored or fixed-Huffman blocks (what cprace
/// writes); dynamic blocks are rejected.
fn inflate(z: &[u8]) -> Vec<u8> {
    assert_eq!(z[0] & 0x0f, 8, "deflate");
    assert_eq!(
        ((z[0] as u16) << 8 | z[1] as u16) % 31,
        0,
        "zlib header check"
    );
    let data = &z[2..z.len() - 4];
    let pos = std::cell::Cell::new(0usize); // in bits
    let bit = |n: u32| -> u32 {
        let mut v = 0;
        for i in 0..n {
            let p = pos.get();
            let b = (data[p / 8] >> (p % 8)) & 1;
            v |= (b as u32) << i;
            pos.set(p + 1);
        }
        v
    };
    let len_base = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ];
    let len_extra = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    let dist_base = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
        2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ];
    let mut out: Vec<u8> = Vec::new();
    loop {
        let last = bit(1);
        match bit(2) {
            0 => {
                let skip = (8 - pos.get() % 8) % 8;
                bit(skip as u32);
                let len = bit(16);
                let nlen = bit(16);
                assert_eq!(len ^ 0xffff, nlen, "stored block length check");
                for _ in 0..len {
                    out.push(bit(8) as u8);
                }
            }
            1 => loop {
                // Fixed Huffman codes arrive most-significant bit first.
                let mut code = 0u32;
                for _ in 0..7 {
                    code = code << 1 | bit(1);
                }
                let sym = if code <= 0x17 {
                    256 + code
                } else {
                    code = code << 1 | bit(1);
                    if (0x30..=0xbf).contains(&code) {
                        code - 0x30
                    } else if (0xc0..=0xc7).contains(&code) {
                        280 + code - 0xc0
                    } else {
                        code = code << 1 | bit(1);
                        assert!((0x190..=0x1ff).contains(&code), "bad code");
                        144 + code - 0x190
                    }
                };
                match sym {
                    0..=255 => out.push(sym as u8),
                    256 => break,
                    257..=285 => {
                        let i = (sym - 257) as usize;
                        let len = len_base[i] + bit(len_extra[i]);
                        let mut dc = 0u32;
                        for _ in 0..5 {
                            dc = dc << 1 | bit(1);
                        }
                        assert!(dc < 30, "bad distance code");
                        let extra = if dc < 4 { 0 } else { dc / 2 - 1 };
                        let dist = dist_base[dc as usize] + bit(extra);
                        assert!(dist as usize <= out.len(), "distance before the start");
                        for _ in 0..len {
                            out.push(out[out.len() - dist as usize]);
                        }
                    }
                    _ => panic!("bad literal/length symbol {sym}"),
                }
            },
            t => panic!("unexpected block type {t}"),
        }
        if last == 1 {
            break;
        }
    }
    let adler = u32::from_be_bytes(z[z.len() - 4..].try_into().unwrap());
    assert_eq!(adler, plot::adler32(&out), "Adler-32 of the inflated data");
    out
}

#[test]
fn checksums_match_known_values() {
    assert_eq!(plot::crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(plot::crc32(b"IEND"), 0xae42_6082);
    assert_eq!(plot::adler32(b"Wikipedia"), 0x11e6_0398);
    assert_eq!(plot::adler32(b""), 1);
}

#[test]
fn deflate_round_trips() {
    let mut cases: Vec<Vec<u8>> = vec![
        vec![],
        vec![7],
        b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec(),
    ];
    // Pseudo-random bytes with runs, and a raster-like buffer with repeated rows.
    let mut x = 12345u32;
    let mut noisy = Vec::new();
    for _ in 0..20000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let b = (x >> 16) as u8;
        let run = 1 + (x >> 28) as usize;
        noisy.extend(std::iter::repeat_n(b, run));
    }
    cases.push(noisy);
    let row: Vec<u8> = (0..3001).map(|i| (i % 7) as u8 * 30).collect();
    cases.push(row.repeat(40));
    for c in cases {
        assert_eq!(
            inflate(&plot::zlib(&c, &[1, 3, 3001])),
            c,
            "length {}",
            c.len()
        );
    }
}

#[test]
fn png_plot_is_valid_and_shows_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 5);
    let png = dir.path().join("sweep.png");
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--format",
        "json",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let rows = json_rows(&o);
    let bytes = std::fs::read(&png).expect("png written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "signature");
    let mut pos = 8;
    let mut chunks: Vec<([u8; 4], &[u8])> = Vec::new();
    while pos < bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let kind: [u8; 4] = bytes[pos + 4..pos + 8].try_into().unwrap();
        let body = &bytes[pos + 8..pos + 8 + len];
        let crc = u32::from_be_bytes(bytes[pos + 8 + len..pos + 12 + len].try_into().unwrap());
        assert_eq!(
            crc,
            plot::crc32(&bytes[pos + 4..pos + 8 + len]),
            "CRC of {}",
            String::from_utf8_lossy(&kind)
        );
        chunks.push((kind, body));
        pos += 12 + len;
    }
    assert_eq!(pos, bytes.len());
    assert_eq!(&chunks[0].0, b"IHDR");
    assert_eq!(&chunks.last().unwrap().0, b"IEND");
    let ihdr = chunks[0].1;
    let w = u32::from_be_bytes(ihdr[0..4].try_into().unwrap());
    let h = u32::from_be_bytes(ihdr[4..8].try_into().unwrap());
    assert_eq!((w, h), (plot::WIDTH, plot::HEIGHT));
    assert_eq!(&ihdr[8..13], &[8, 2, 0, 0, 0], "8-bit RGB, no interlace");
    let idat: Vec<u8> = chunks
        .iter()
        .filter(|c| &c.0 == b"IDAT")
        .flat_map(|c| c.1.iter().copied())
        .collect();
    let raw = inflate(&idat);
    let (w, h) = (w as usize, h as usize);
    assert_eq!(raw.len(), w * h * 3 + h, "inflated size");
    let mut pixels = std::collections::HashSet::new();
    for row in raw.chunks(w * 3 + 1) {
        assert_eq!(row[0], 0, "filter type None");
        for p in row[1..].chunks(3) {
            pixels.insert([p[0], p[1], p[2]]);
        }
    }
    for (name, _, color) in expected_series(&rows) {
        assert!(
            pixels.contains(&color),
            "no pixel of {name}'s colour {color:?}"
        );
    }
    // The same scene as the SVG: check the raster has the white background
    // and dark text too.
    assert!(pixels.contains(&[255, 255, 255]));
    assert!(pixels.len() >= 6);
}

#[test]
fn plot_rasterizes_series_where_the_scene_puts_them() {
    let t = trace(&Config {
        events: 500,
        seed: 9,
        ..Config::default()
    });
    let s = sweep::run(&t, &[Some(10), Some(100), None], &mut |_| {}).unwrap();
    let scene = plot::chart(&s, "test");
    let canvas = scene.rasterize();
    for shape in &scene.shapes {
        if let plot::Shape::Line {
            points,
            color,
            series: Some(name),
            dashed: false,
            ..
        } = shape
        {
            for &(x, y) in points {
                // Markers sit under each vertex; the top-most line may cover them.
                let c = canvas.get(x.round() as u32, y.round() as u32);
                assert!(
                    c == *color || c == plot::CP_COLOR,
                    "{name}: {c:?} at ({x}, {y})"
                );
            }
        }
    }
}
