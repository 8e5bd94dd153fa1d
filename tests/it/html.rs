//! `--format html`: one self-contained page whose data is the report's
//! (checked against `--format json`), and which works in a real headless
//! browser: the index lists every location pair, sorts and filters, a
//! selected race shows its stacks with source, and a witness is drawn with
//! one lane per thread; the console stays free of errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::browser::Browser;
use crate::common::cli::{cprace, output, stderr};
use crate::common::recorded;
use crate::common::traces::generated;

/// `cprace analyze TRACE ARGS --format html` written to `out`.
fn page(trace: &Path, args: &[&str], out: &Path) -> String {
    let mut a = vec!["analyze", trace.to_str().unwrap()];
    a.extend(args);
    a.extend(["--format", "html"]);
    let o = output(&a);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = String::from_utf8(o.stdout).unwrap();
    std::fs::write(out, &html).unwrap();
    html
}

/// The JSON document a page draws.
fn data(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = html.find(open).expect("the data element") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("the data is JSON")
}

/// The thread of each event of a cprace CSV trace.
fn threads_of(trace: &Path) -> Vec<String> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect()
}

/// A generated trace with many location pairs and predicted races.
fn generated_trace(dir: &Path) -> PathBuf {
    generated(dir, 60, 5)
}

#[test]
fn pages_are_self_contained_and_hold_the_reports_races() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(dir.path());
    let html = page(
        &trace,
        &["--relation", "wcp", "--witness"],
        &dir.path().join("r.html"),
    );
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Nothing is fetched: no external script, style, font or image.
    for banned in ["src=", "http://", "https://", "@import", "url("] {
        assert!(
            !html.contains(banned),
            "the page refers outside itself: {banned}"
        );
    }
    let d = data(&html);
    let (_, json, _) = cprace(&[
        "analyze",
        trace.to_str().unwrap(),
        "--relation",
        "wcp",
        "--witness",
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["location_pairs"], json["location_pairs"]);
    assert_eq!(
        d["racy_events"],
        json["racy_events"].as_array().unwrap().len()
    );
    let races = d["races"].as_array().unwrap();
    assert_eq!(races.len() as u64, json["location_pairs"].as_u64().unwrap());
    // Each race the page shows is the first of its location pair in the
    // JSON report, with that race's witness, drawn one lane per thread.
    let threads = threads_of(&trace);
    let all = json["races"].as_array().unwrap();
    let mut seen_pairs = BTreeSet::new();
    let firsts: Vec<&Value> = all
        .iter()
        .filter(|r| {
            let (a, b) = (
                r["first_loc"].as_str().unwrap(),
                r["second_loc"].as_str().unwrap(),
            );
            seen_pairs.insert((a.min(b).to_string(), a.max(b).to_string()))
        })
        .collect();
    assert_eq!(firsts.len(), races.len());
    let mut drawn = 0;
    for (page_race, json_race) in races.iter().zip(&firsts) {
        assert_eq!(page_race["accesses"][0]["event"], json_race["second"]);
        assert_eq!(page_race["accesses"][1]["event"], json_race["first"]);
        assert_eq!(page_race["variable"], json_race["variable"]);
        let w = &page_race["witness"];
        let Some(events) = json_race["witness"].as_array() else {
            assert_eq!(w["found"], false);
            continue;
        };
        drawn += 1;
        assert_eq!(w["found"], true);
        assert_eq!(w["events"].as_u64().unwrap() as usize, events.len());
        let lanes: Vec<&str> = w["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = Vec::new();
        let ids = events.iter().map(|e| e.as_u64().unwrap()).chain([
            json_race["first"].as_u64().unwrap(),
            json_race["second"].as_u64().unwrap(),
        ]);
        for e in ids {
            let t = threads[e as usize].as_str();
            if !want.contains(&t) {
                want.push(t);
            }
        }
        assert_eq!(lanes, want, "lanes of race {}", json_race["second"]);
        let steps = w["steps"].as_array().unwrap();
        let racy: Vec<&Value> = steps.iter().filter(|s| s["racy"] == true).collect();
        assert_eq!(racy.len(), 2);
        assert_eq!(racy[1]["first"], json_race["second"]);
    }
    assert!(drawn > 10, "only {drawn} witnesses drawn");
}

#[test]
fn deadlock_reports_refuse_html() {
    let (code, out, err) = cprace(&["deadlocks", "data/figures/cp-fig9.csv", "--format", "html"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("--format html is the race report's"), "{err}");
}

/// The races of `d` whose `key` field contains `q`.
fn matching(d: &Value, key: &str, q: &str) -> usize {
    d["races"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[key].as_str().unwrap().to_lowercase().contains(q))
        .count()
}

#[test]
fn the_page_works_in_a_headless_browser() {
    let dir = tempfile::tempdir().unwrap();
    let browser = Browser::start();

    // A generated trace: no sources, no stacks, many races.
    let trace = generated_trace(dir.path());
    let first = dir.path().join("generated.html");
    let d = data(&page(&trace, &["--relation", "wcp", "--witness"], &first));
    let n = d["races"].as_array().unwrap().len();
    browser.open(&first);
    assert_eq!(browser.count("#races tbody tr") as usize, n);
    assert_eq!(browser.text("#count"), format!("{n} of {n} races"));
    // The first race is selected at the start.
    assert_eq!(browser.count("#races tbody tr.selected"), 1);
    assert!(browser.text("#detail h2").starts_with("Data race on"));
    // Filtering by file.
    browser.click("#field option[value=file]");
    browser.type_into("#filter", "f2.java");
    let want = matching(&d, "file", "f2.java");
    assert!(want > 0 && want < n);
    assert_eq!(browser.count("#races tbody tr") as usize, want);
    assert_eq!(browser.text("#count"), format!("{want} of {n} races"));
    browser.eval("const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); return 0");
    assert_eq!(browser.count("#races tbody tr") as usize, n);
    // Sorting by variable: the rows come in that order.
    browser.click("th[data-key=variable]");
    let shown = browser.strings("return Array.from(document.querySelectorAll('#races tbody tr td:nth-child(2)'), td => td.textContent)");
    let mut sorted = shown.clone();
    sorted.sort();
    assert_eq!(shown, sorted);
    assert_eq!(browser.text("th[data-key=variable]"), "variable");
    assert_eq!(
        browser.eval(
            "return document.querySelector('th[data-key=variable]').getAttribute('aria-sort')"
        ),
        "ascending"
    );
    // Selecting a race with a witness over three threads draws three lanes.
    let (k, race) = d["races"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find(|(_, r)| {
            r["witness"]["lanes"]
                .as_array()
                .is_some_and(|l| l.len() == 3)
        })
        .expect("a witness over three threads");
    browser.click(&format!("#races tbody tr[data-race=\"{k}\"]"));
    assert_eq!(browser.count("#races tbody tr.selected"), 1);
    assert_eq!(browser.count(".timeline .lane"), 3);
    assert_eq!(browser.count(".timeline .step.racy"), 2);
    let lanes = browser.eval(
        "return Array.from(document.querySelectorAll('.timeline .lane'), l => l.dataset.thread)",
    );
    assert_eq!(lanes, race["witness"]["lanes"]);
    let detail = browser.text("#detail");
    assert!(
        detail.contains(&format!("event {}", race["accesses"][0]["event"])),
        "{detail}"
    );
    assert_eq!(
        browser.eval("return location.hash"),
        Value::from(format!("#race-{}", k + 1))
    );
    let errors = browser.errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // A recorded C program: stacks with the source lines, threads, and a
    // predicted race's witness.
    for cc in recorded::compilers() {
        let rec = recorded::record(dir.path(), "polarcoord", cc);
        let second = dir.path().join(format!("polar-{cc}.html"));
        page(&rec, &["--relation", "wcp", "--witness"], &second);
        browser.open(&second);
        assert_eq!(browser.count("#races tbody tr"), 1);
        browser.click("#races tbody tr[data-race=\"0\"]");
        let detail = browser.text("#detail");
        let incr2 = recorded::line_of("polarcoord", "INCREMENT-2", 0);
        let incr1 = recorded::line_of("polarcoord", "INCREMENT-1", 0);
        for want in [
            "get_angle",
            "get_radius",
            &incr2,
            &incr1,
            "wcp (predicted)",
            "created by main thread",
        ] {
            assert!(detail.contains(want), "{cc}: {want} not in {detail}");
        }
        // Each access's innermost frame opens on its source line.
        let marked = browser.strings("return Array.from(document.querySelectorAll('.access details[open] .snippet span.at'), s => s.textContent)");
        assert_eq!(marked.len(), 2, "{cc}: {marked:?}");
        assert!(
            marked[0].contains("INCREMENT-2") && marked[1].contains("INCREMENT-1"),
            "{cc}: {marked:?}"
        );
        // The witness: main runs, T1 reaches its increment, T2 runs to its
        // own: three lanes, the two increments highlighted.
        assert_eq!(browser.count(".timeline .lane"), 3, "{cc}");
        assert_eq!(browser.count(".timeline .step.racy"), 2, "{cc}");
        let errors = browser.errors();
        assert!(errors.is_empty(), "{cc}: console errors: {errors:?}");
    }
}
