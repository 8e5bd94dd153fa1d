//! `cprace deadlocks` as a user runs it: every input format, compressed or
//! not, standard input; text, json, jsonl, csv and sarif; exit codes; bad
//! input; `--witness` checked by `cprace verify`, which rejects tampered
//! witnesses; blocked requests through `convert`.

use std::io::Write;

use crate::common::cli::{cprace, output, with_stdin};
use serde_json::Value;

fn data(name: &str) -> String {
    format!("{}/data/deadlocks/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = cprace(args);
    assert!(code == 0 || code == 1, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

#[test]
fn text_report_follows_thread_sanitizers_layout() {
    let (code, out, err) = cprace(&["deadlocks", &data("two-threads.std")]);
    assert_eq!(code, 1, "{err}");
    for want in [
        "==================\nWARNING: predicted deadlock (sync-preserving; 2 threads, 2 locks)\n",
        "  Cycle in lock order graph: `a` => `b` => `a`\n",
        "  Lock `b` requested here while holding lock `a` in thread T1:\n    event 1 at two.c:11\n",
        "  Lock `a` previously acquired by the same thread here:\n    event 0 at two.c:10\n",
        "  Lock `a` requested here while holding lock `b` in thread T2:\n    event 5 at two.c:21\n",
        "SUMMARY: 0 actual deadlocks, 1 predicted deadlock, 0 lock-order inversions (8 events)\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(
        err.contains("note: a predicted deadlock is reached"),
        "{err}"
    );
    let (code, out, _) = cprace(&["deadlocks", &data("reads-from.std")]);
    assert_eq!(code, 1);
    assert!(
        out.contains("WARNING: lock-order inversion (potential deadlock)"),
        "{out}"
    );
    assert!(
        out.contains("Lock `b` acquired here while holding lock `a` in thread T1:"),
        "{out}"
    );
    let (code, out, _) = cprace(&["deadlocks", &data("actual.std")]);
    assert_eq!(code, 1);
    assert!(out.contains("WARNING: deadlock: the trace ends with 2 threads blocked in a cycle"));
    assert!(out.contains("Lock `b` requested (and never granted) here while holding lock `a` in thread T1:\n    event 2 at hang.c:11"), "{out}");
}

#[test]
fn exit_code_is_0_without_deadlocks_and_2_on_bad_input() {
    let (code, out, _) = cprace(&["deadlocks", &data("gated.std")]);
    assert_eq!(code, 0);
    assert!(out.starts_with(
        "SUMMARY: 0 actual deadlocks, 0 predicted deadlocks, 0 lock-order inversions"
    ));
    let (code, out, _) = cprace(&["deadlocks", &data("gated.std"), "--all"]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "Not a deadlock in any reordering: a gate lock, `g`, is held around its edges."
        ),
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.std");
    std::fs::write(&bad, "T1|acq(a)|f:1\nT1|req(b)|f:2\nT1|rel(a)|f:3\n").unwrap();
    let (code, out, err) = cprace(&["deadlocks", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("bad.std:3: event of thread `T1` after its blocked request of lock `b`"),
        "{err}"
    );
    std::fs::write(&bad, "T1|acq(a)|f:1\nT1|grab(b)|f:2\n").unwrap();
    let (code, out, err) = cprace(&["deadlocks", bad.to_str().unwrap(), "--format", "json"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("bad.std:2: unknown op `grab`"), "{err}");
    let (code, _, err) = cprace(&["deadlocks", &data("gated.std"), "--window", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a window"), "{err}");
}

#[test]
fn json_has_the_documented_shape() {
    let v = json(&["deadlocks", &data("hidden.std"), "--format", "json"]);
    assert_eq!(v["relation"], "deadlock");
    assert_eq!(v["predicted"], 1);
    let d = &v["deadlocks"][0];
    assert_eq!(d["kind"], "predicted");
    assert_eq!(d["threads"], serde_json::json!(["T1", "T2"]));
    assert_eq!(d["locks"], serde_json::json!(["b", "a"]));
    assert_eq!(d["events"], serde_json::json!([1, 9]));
    assert_eq!(d["witness"], Value::Null);
    assert_eq!(d["links"][0]["holder"]["acquire"], 0);
    assert_eq!(d["links"][1]["holder"]["loc"], "hid.c:22");
    let v = json(&[
        "deadlocks",
        &data("hidden.std"),
        "--format",
        "json",
        "--witness",
    ]);
    assert_eq!(
        v["deadlocks"][0]["witness"],
        serde_json::json!([0, 6, 7, 8])
    );
    // A predicted deadlock is listed once, not again as an inversion.
    assert_eq!(v["deadlocks"].as_array().unwrap().len(), 1);
    let v = json(&["deadlocks", &data("join-holding.std"), "--format", "json"]);
    let j = &v["deadlocks"][0]["links"][0]["holder"];
    assert_eq!(j["thread"], "main");
    assert_eq!(j["joins"][0]["event"], 9);
    assert_eq!(
        v["deadlocks"][0]["threads"],
        serde_json::json!(["main", "tid2"])
    );
}

#[test]
fn jsonl_csv_and_summary_have_one_entry_per_deadlock() {
    let file = data("gated.std");
    let (_, out, _) = cprace(&["deadlocks", &file, "--all", "--format", "jsonl"]);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["kind"], "inversion");
    assert!(rows[0]["filtered"].as_str().unwrap().contains("gate lock"));
    let (_, out, _) = cprace(&[
        "deadlocks",
        &data("philosophers-3.std"),
        "--format",
        "csv",
        "--witness",
    ]);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(
            "kind,threads,locks,events,locations,held_acquires,held_locations,joins,witness,filtered"
        )
    );
    assert_eq!(
        lines.next(),
        Some(
            "predicted,P0 P1 P2,f1 f2 f0,1 5 9,phil.c:8 phil.c:8 phil.c:8,0 4 8,phil.c:7 phil.c:7 phil.c:7,,0 4 8,"
        )
    );
    assert_eq!(lines.next(), None);
    let (code, out, _) = cprace(&["deadlocks", &data("actual.std"), "--format", "summary"]);
    assert_eq!(code, 1);
    assert!(out.starts_with(
        "SUMMARY: 1 actual deadlock, 0 predicted deadlocks, 0 lock-order inversions (4 events)\n"
    ));
}

#[test]
fn sarif_validates_against_the_schema() {
    let schema: Value =
        serde_json::from_str(include_str!("../data/sarif-schema-2.1.0.json")).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    for (name, rule) in [
        ("two-threads.std", "deadlock/predicted"),
        ("actual.std", "deadlock/actual"),
        ("reads-from.std", "deadlock/inversion"),
        ("join-holding.std", "deadlock/predicted"),
    ] {
        let doc = json(&["deadlocks", &data(name), "--format", "sarif"]);
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        let r = &doc["runs"][0]["results"][0];
        assert_eq!(r["ruleId"], rule);
        assert!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"].is_u64(),
            "{r}"
        );
    }
}

#[test]
fn every_input_format_compressed_or_not_and_stdin_give_the_same_deadlocks() {
    let file = data("hidden.std");
    let want = json(&["deadlocks", &file, "--format", "json"])["deadlocks"].clone();
    let dir = tempfile::tempdir().unwrap();
    let same = |args: &[&str]| {
        let got = json(args)["deadlocks"].clone();
        assert_eq!(got, want, "{args:?}");
    };
    let csv = dir.path().join("h.csv");
    let bin = dir.path().join("h.bin");
    assert!(
        output(&["convert", &file, "--to", "csv", "-o", csv.to_str().unwrap()])
            .status
            .success()
    );
    assert!(
        output(&[
            "convert",
            &file,
            "--to",
            "rapidbin",
            "-o",
            bin.to_str().unwrap()
        ])
        .status
        .success()
    );
    same(&["deadlocks", csv.to_str().unwrap(), "--format", "json"]);
    same(&["deadlocks", bin.to_str().unwrap(), "--format", "json"]);
    let text = std::fs::read(&file).unwrap();
    let gz = dir.path().join("h.std.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&text).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    same(&["deadlocks", gz.to_str().unwrap(), "--format", "json"]);
    let zst = dir.path().join("h.std.zst");
    std::fs::write(&zst, zstd::encode_all(&text[..], 1).unwrap()).unwrap();
    same(&["deadlocks", zst.to_str().unwrap(), "--format", "json"]);
    let xz = dir.path().join("h.std.xz");
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(&text).unwrap();
    std::fs::write(&xz, e.finish().unwrap()).unwrap();
    same(&["deadlocks", xz.to_str().unwrap(), "--format", "json"]);
    let out = with_stdin(&["deadlocks", "-", "--format", "json"], &text);
    assert_eq!(out.status.code(), Some(1));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["deadlocks"], want);
}

/// Write `doc` (a deadlocks JSON report with its witnesses edited by
/// `edit`) and run `cprace verify` on it.
fn verify_edited(trace: &str, edit: impl Fn(&mut Vec<u64>)) -> (i32, String) {
    let mut doc = json(&["deadlocks", trace, "--format", "json", "--witness"]);
    for d in doc["deadlocks"].as_array_mut().unwrap() {
        let mut w: Vec<u64> = d["witness"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        edit(&mut w);
        d["witness"] = serde_json::json!(w);
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let (code, out, err) = cprace(&["verify", trace, "--witness", f.to_str().unwrap()]);
    assert_ne!(code, 2, "{err}");
    (code, out)
}

#[test]
fn verify_accepts_deadlock_witnesses_and_rejects_tampered_ones() {
    for name in [
        "two-threads.std",
        "philosophers-3.std",
        "hidden.std",
        "join-holding.std",
        "actual.std",
        "self.std",
    ] {
        let (code, out) = verify_edited(&data(name), |_| {});
        assert_eq!(code, 0, "{name}: {out}");
        assert!(out.contains("): valid ("), "{name}: {out}");
        assert!(
            out.ends_with("SUMMARY: 1 valid, 0 invalid, 0 without a witness\n"),
            "{out}"
        );
    }
    let hidden = data("hidden.std");
    // Swapped: T2 releases m before taking it.
    let (code, out) = verify_edited(&hidden, |w| w.swap(1, 2));
    assert_eq!(code, 1);
    assert!(
        out.contains("INVALID: witness entry 1 (event 7): not the next event of its thread"),
        "{out}"
    );
    // Dropped: without T2's acquire of b, T1's request of b is granted.
    let (code, out) = verify_edited(&hidden, |w| {
        w.pop();
    });
    assert_eq!(code, 1);
    assert!(
        out.contains("INVALID: thread T1 is not deadlocked after the witness: lock `b` is free"),
        "{out}"
    );
    // An extra event: T1 runs its request, and T2 cannot take b.
    let (code, out) = verify_edited(&hidden, |w| w.insert(1, 1));
    assert_eq!(code, 1);
    assert!(
        out.contains("INVALID: witness entry 4 (event 8): acquires a lock held by thread T1"),
        "{out}"
    );
}

#[test]
fn verify_rejects_a_witness_that_moves_an_event_across_its_lock() {
    // T2 reads x, which T1 wrote inside its section on m; both sections on m
    // are in the witness, T1's first.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.std");
    std::fs::write(
        &p,
        "T1|acq(m)|\nT1|w(x)|\nT1|rel(m)|\nT1|acq(a)|\nT1|acq(b)|\nT1|rel(b)|\nT1|rel(a)|\n\
         T2|acq(m)|\nT2|r(x)|\nT2|rel(m)|\nT2|acq(b)|\nT2|acq(a)|\nT2|rel(a)|\nT2|rel(b)|\n",
    )
    .unwrap();
    let p = p.to_str().unwrap();
    let doc = json(&["deadlocks", p, "--format", "json", "--witness"]);
    assert_eq!(
        doc["deadlocks"][0]["witness"],
        serde_json::json!([0, 1, 2, 3, 7, 8, 9, 10])
    );
    assert_eq!(verify_edited(p, |_| {}).0, 0);
    // T2's acquire of m moved into T1's section on m.
    let (code, out) = verify_edited(p, |w| {
        let e = w.remove(4);
        w.insert(2, e);
    });
    assert_eq!(code, 1);
    assert!(
        out.contains("INVALID: witness entry 2 (event 7): acquires a lock held by thread T1"),
        "{out}"
    );
    // T1's section on m left out: T2's read sees no write.
    let (code, out) = verify_edited(p, |w| {
        w.retain(|&e| e > 3);
    });
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "INVALID: witness entry 1 (event 8): reads the initial value instead of event 1"
        ),
        "{out}"
    );
}

#[test]
fn convert_leaves_blocked_requests_out_of_rapid_formats_with_a_note() {
    let file = data("actual.std");
    let dir = tempfile::tempdir().unwrap();
    let out_std = dir.path().join("r.std");
    let o = output(&[
        "convert",
        &file,
        "--to",
        "std",
        "--rapid",
        "-o",
        out_std.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("left out 2 blocked lock requests (`req`)")
            && err.contains("every other event keeps its id"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&out_std).unwrap(),
        "T1|acq(a)|1\nT2|acq(b)|2\n"
    );
    let bin = dir.path().join("r.bin");
    let o = output(&[
        "convert",
        &file,
        "--to",
        "rapidbin",
        "-o",
        bin.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let (_, stats, _) = cprace(&["stats", bin.to_str().unwrap()]);
    assert!(stats.starts_with("events: 2\n"), "{stats}");
    // The text formats keep them.
    let (_, csv, _) = cprace(&["convert", &file, "--to", "csv"]);
    assert!(
        csv.ends_with("T1,req,b,hang.c:11\nT2,req,a,hang.c:21\n"),
        "{csv}"
    );
    let back = dir.path().join("back.csv");
    std::fs::write(&back, csv).unwrap();
    let (code, out, _) = cprace(&["deadlocks", back.to_str().unwrap(), "--format", "summary"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("SUMMARY: 1 actual deadlock"));
}

#[test]
fn race_analyses_ignore_blocked_requests() {
    let dir = tempfile::tempdir().unwrap();
    let with = dir.path().join("with.std");
    let without = dir.path().join("without.std");
    let base = "T1|acq(a)|\nT1|w(x)|\nT2|w(x)|\nT2|acq(b)|\n";
    std::fs::write(&without, base).unwrap();
    std::fs::write(&with, format!("{base}T1|req(b)|\nT2|req(a)|\n")).unwrap();
    for relation in ["hb", "wcp", "cp", "shb", "syncp", "lockset", "po"] {
        let run = |p: &std::path::Path| {
            let (code, out, err) = cprace(&[
                "analyze",
                p.to_str().unwrap(),
                "--relation",
                relation,
                "--format",
                "json",
                "--witness",
            ]);
            assert!(code < 2, "{relation}: {err}");
            let v: Value = serde_json::from_str(&out).unwrap();
            (v["races"].clone(), v["racy_events"].clone())
        };
        assert_eq!(run(&with), run(&without), "{relation}");
    }
}

#[test]
fn generated_shapes_give_the_deadlocks_they_describe() {
    let out = output(&[
        "gen",
        "--profile",
        "small",
        "--deadlocks",
        "all",
        "-n",
        "400",
        "--seed",
        "3",
        "--lock-order",
        "ordered",
    ]);
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.csv");
    std::fs::write(&p, &out.stdout).unwrap();
    let v = json(&[
        "deadlocks",
        p.to_str().unwrap(),
        "--all",
        "--format",
        "json",
        "--witness",
    ]);
    let mut got: Vec<String> = v["deadlocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let n = d["locks"].as_array().unwrap().len();
            let why = d.get("filtered").and_then(|f| f.as_str()).unwrap_or("");
            format!(
                "{} {n} {}",
                d["kind"].as_str().unwrap(),
                why.split(',').next().unwrap()
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "inversion 2 a gate lock",
            "inversion 2 fork and join order its edges",
            "inversion 2 its edges cannot come from distinct threads",
            "predicted 1 ",
            "predicted 2 ",
            "predicted 2 ",
            "predicted 5 ",
        ],
        "{v:#}"
    );
    let f = dir.path().join("d.json");
    std::fs::write(&f, v.to_string()).unwrap();
    let (code, out, _) = cprace(&[
        "verify",
        p.to_str().unwrap(),
        "--witness",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with("SUMMARY: 4 valid, 0 invalid, 3 without a witness\n"),
        "{out}"
    );
    // Repeated, the same shapes: still one report per cycle of locks.
    let (code, out, err) = cprace(&[
        "gen",
        "--deadlocks",
        "philosophers",
        "--philosophers",
        "7",
        "--deadlock-every",
        "1k",
        "-n",
        "20k",
        "--lock-order",
        "ordered",
    ]);
    assert_eq!(code, 0, "{err}");
    let p = dir.path().join("r.csv");
    std::fs::write(&p, out).unwrap();
    let v = json(&["deadlocks", p.to_str().unwrap(), "--format", "json"]);
    let d = v["deadlocks"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{v:#}");
    assert_eq!(d[0]["locks"].as_array().unwrap().len(), 7);
}
