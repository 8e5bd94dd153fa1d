//! `--format json` and `jsonl` of a recorded program's trace carry what the
//! text report prints (ThreadSanitizer's fields) as a race's `details`:
//! both accesses' stacks frame by frame (function, file, line, column,
//! module, offset, inlined frames included), sizes, addresses, kinds and
//! mutexes with their acquire stacks, the location, the threads' creation
//! stacks, and for a predicted race the explanation and witness steps.
//! Every C compiler installed is tried; with none the tests say so.

use serde_json::Value;

use crate::common::recorded::{analyze, compilers, line_no, record};

fn json(trace: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend(args);
    serde_json::from_str(&analyze(trace, &all)).unwrap()
}

/// A stack as (function, line) pairs, top first.
fn frames(stack: &Value) -> Vec<(String, u64)> {
    stack
        .as_array()
        .unwrap_or_else(|| panic!("not a stack: {stack}"))
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The JSON Lines rows of `trace` are the JSON report's races, each with
/// the run's provenance in front.
fn jsonl_matches_json(trace: &std::path::Path, args: &[&str], doc: &Value) {
    let mut all = vec!["--format", "jsonl"];
    all.extend(args);
    let out = analyze(trace, &all);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let races = doc["races"].as_array().unwrap();
    assert_eq!(rows.len(), races.len(), "{out}");
    for (row, race) in rows.iter().zip(races) {
        let mut row = row.as_object().unwrap().clone();
        for k in ["relation", "engine", "window", "max_distance"] {
            assert_eq!(row.remove(k).as_ref(), Some(&doc[k]), "{k}");
        }
        assert_eq!(&Value::Object(row), race);
    }
}

#[test]
fn global_race_under_two_mutexes_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let name = "tsan_mutexes";
    let race = line_no(name, "RACE", 0);
    let seen = line_no(name, "RACE", 1);
    for cc in compilers() {
        let trace = record(dir.path(), name, cc);
        let doc = json(&trace, &["--relation", "hb"]);
        let races = doc["races"].as_array().unwrap();
        assert_eq!(races.len(), 1, "{cc}: {doc:#}");
        let r = &races[0];
        let d = &r["details"];
        assert_eq!(d["first"]["event"], r["first"], "{cc}");
        assert_eq!(d["second"]["event"], r["second"], "{cc}");
        // The thread's write under both mutexes, main's read under none
        // (usually main reads first; the schedule decides).
        let writer_later = d["second"]["thread"] == "thread T1";
        let (first, second) = if writer_later {
            (&d["first"], &d["second"])
        } else {
            (&d["second"], &d["first"])
        };
        assert_eq!(second["kind"], "write", "{cc}: {d:#}");
        assert_eq!(second["size"], 8, "{cc}");
        assert_eq!(second["thread"], "thread T1", "{cc}");
        assert_eq!(frames(&second["stack"])[0], ("writer".into(), race as u64));
        let top = &second["stack"][0];
        assert!(
            top["file"].as_str().unwrap().ends_with("/tsan_mutexes.c"),
            "{top}"
        );
        assert!(top["column"].as_u64().unwrap() > 0, "{cc}: {top}");
        assert_eq!(top["module"], format!("{name}-{cc}"), "{cc}");
        assert!(top["offset"].as_u64().unwrap() > 0, "{cc}");
        assert_eq!(first["kind"], "read", "{cc}");
        assert_eq!(first["thread"], "main thread T0", "{cc}");
        assert_eq!(first["mutexes"], serde_json::json!([]), "{cc}");
        assert_eq!(frames(&first["stack"])[0], ("main".into(), seen as u64));
        let mutexes = second["mutexes"].as_array().unwrap();
        assert_eq!(mutexes.len(), 2, "{cc}: {d:#}");
        for (i, (m, lock, marker)) in mutexes
            .iter()
            .zip([("outer", "LOCK-OUTER"), ("inner", "LOCK-INNER")])
            .map(|(m, (l, k))| (m, l, k))
            .enumerate()
        {
            assert_eq!(m["id"], i, "{cc}: {m}");
            assert_eq!(m["name"], lock, "{cc}: {m}");
            assert_eq!(m["side"], "write", "{cc}: {m}");
            assert!(m["address"].as_str().unwrap().starts_with("0x"), "{m}");
            assert!(m["event"].as_u64().unwrap() < second["event"].as_u64().unwrap());
            assert_eq!(
                frames(&m["stack"])[0],
                ("writer".into(), line_no(name, marker, 0) as u64),
                "{cc}: {m}"
            );
        }
        // The global, at the accesses' address.
        let l = &d["location"];
        assert_eq!(l["kind"], "global", "{cc}: {l}");
        assert_eq!(l["name"], "total", "{cc}");
        assert_eq!(l["size"], 8, "{cc}");
        assert_eq!(l["address"], second["address"], "{cc}");
        assert_eq!(l["module"], format!("{name}-{cc}"), "{cc}");
        // The thread and where main created it.
        let t = &d["threads"].as_array().unwrap()[..];
        assert_eq!(t.len(), 1, "{cc}: {d:#}");
        assert_eq!(t[0]["id"], "T1");
        assert_eq!(t[0]["parent"], "main thread T0");
        assert_eq!(
            frames(&t[0]["stack"])[0],
            ("main".into(), line_no(name, "pthread_create", 0) as u64)
        );
        // The later access's innermost frame.
        let summary = d["summary"].as_str().unwrap();
        let want = if writer_later {
            format!("/tsan_mutexes.c:{race} in writer")
        } else {
            format!("/tsan_mutexes.c:{seen} in main")
        };
        assert!(
            summary.starts_with("data race /") && summary.ends_with(&want),
            "{cc}: {summary}"
        );
        jsonl_matches_json(&trace, &["--relation", "hb"], &doc);
    }
}

#[test]
fn heap_race_names_its_block_and_allocation_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let name = "tsan_heap";
    for cc in compilers() {
        let trace = record(dir.path(), name, cc);
        let doc = json(&trace, &["--relation", "hb"]);
        for r in doc["races"].as_array().unwrap() {
            let d = &r["details"];
            let l = &d["location"];
            assert_eq!(l["kind"], "heap", "{cc}: {d:#}");
            assert_eq!(l["size"], 4, "{cc}");
            assert_eq!(l["thread"], "main thread T0", "{cc}");
            assert_eq!(
                frames(&l["stack"]),
                [("main".to_string(), line_no(name, "ALLOC", 0) as u64)],
                "{cc}"
            );
            assert!(l.get("freed").is_none(), "{cc}: {l}");
            let t = &d["threads"][0];
            assert_eq!(t["id"], "T1", "{cc}");
            assert_eq!(
                frames(&t["stack"]),
                [("main".to_string(), line_no(name, "CREATE", 0) as u64)],
                "{cc}"
            );
            for a in [&d["first"], &d["second"]] {
                assert_eq!(a["size"], 4, "{cc}: {a}");
                let want = if a["thread"] == "thread T1" {
                    ("writer".to_string(), line_no(name, "RACE", 0) as u64)
                } else {
                    ("main".to_string(), line_no(name, "RACE", 1) as u64)
                };
                assert_eq!(frames(&a["stack"])[0], want, "{cc}: {a}");
            }
        }
        jsonl_matches_json(&trace, &["--relation", "hb"], &doc);
    }
}

/// The 12-deep stack, the always-inlined helper as its own frame (marked
/// inlined, at the same code address as its caller f12), in order.
#[test]
fn deep_stack_with_an_inlined_frame_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let name = "tsan_deep";
    for cc in compilers() {
        let trace = record(dir.path(), name, cc);
        let doc = json(&trace, &["--relation", "hb"]);
        let d = &doc["races"][0]["details"];
        for a in [&d["first"], &d["second"]] {
            let mut want = vec![
                ("bump".to_string(), line_no(name, "RACE-INLINED", 0) as u64),
                ("f12".into(), line_no(name, "void f12(", 0) as u64),
            ];
            for k in (1..=11).rev() {
                want.push((
                    format!("f{k}"),
                    line_no(name, &format!("STEP(f{k},"), 0) as u64,
                ));
            }
            let got = frames(&a["stack"]);
            assert_eq!(got[..13], want[..], "{cc}: {a}");
            assert!(["main", "worker"].contains(&got[13].0.as_str()), "{cc}");
            let s = &a["stack"];
            assert_eq!(s[0]["inlined"], true, "{cc}: {s}");
            assert_eq!(s[1]["inlined"], false, "{cc}");
            assert_eq!(s[0]["offset"], s[1]["offset"], "{cc}");
        }
    }
}

/// PolarCoord under cp with --witness: the race HB ordered says what
/// ordered it and how the witness reorders the run, in source terms.
#[test]
fn predicted_race_explanation_and_witness_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let name = "polarcoord";
    for cc in compilers() {
        let trace = record(dir.path(), name, cc);
        let args = ["--relation", "cp", "--witness"];
        let doc = json(&trace, &args);
        let r = doc["races"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["witness"].is_array())
            .unwrap_or_else(|| panic!("{cc}: no race with a witness: {doc:#}"));
        let d = &r["details"];
        let explanation: Vec<&str> = d["explanation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert!(
            explanation[0].starts_with("Predicted (not observed"),
            "{cc}"
        );
        let unlock = line_no(name, "pthread_mutex_unlock(&lock)", 0);
        assert!(
            explanation[1].starts_with(&format!(
                "1. thread T1 releases mutex `lock` at polarcoord.c:{unlock} in get_radius"
            )),
            "{cc}: {explanation:?}"
        );
        let steps = d["witness_steps"].as_array().unwrap();
        assert!(
            steps[0]
                .as_str()
                .unwrap()
                .starts_with("1. main thread T0 runs to "),
            "{cc}: {steps:?}"
        );
        let last = steps.last().unwrap().as_str().unwrap();
        assert!(
            last.starts_with("then thread T1 at polarcoord.c:")
                && last.ends_with("are both enabled: either may run first"),
            "{cc}: {last}"
        );
        assert_eq!(d["location"]["name"], "count", "{cc}");
        jsonl_matches_without_witness(&trace, &doc);
    }
}

/// Without --witness, JSON Lines and JSON carry the same races and
/// details: the explanation as with it, no witness steps.
fn jsonl_matches_without_witness(trace: &std::path::Path, doc: &Value) {
    let plain = json(trace, &["--relation", "cp"]);
    jsonl_matches_json(trace, &["--relation", "cp"], &plain);
    for (a, b) in plain["races"]
        .as_array()
        .unwrap()
        .iter()
        .zip(doc["races"].as_array().unwrap())
    {
        assert_eq!(a["details"]["explanation"], b["details"]["explanation"]);
        assert!(a["details"].get("witness_steps").is_none());
    }
}

/// Traces without call stacks keep the JSON they always had: no `details`.
#[test]
fn traces_without_stacks_have_no_details() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(&p, "T1|w(x)|a.c:1\nT2|w(x)|a.c:2\n").unwrap();
    for format in ["json", "jsonl"] {
        let out = analyze(&p, &["--relation", "hb", "--format", format]);
        assert!(!out.contains("details"), "{out}");
    }
}
