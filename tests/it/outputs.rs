//! Writing results safely: conversion never destroys data, output paths are
//! checked before the work, a closed pipe ends quietly, `--lenient` skips and
//! counts, `convert --rapid` writes what RAPID reads.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::cli::{cprace, with_stdin};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_failed_conversion_keeps_the_existing_output_and_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    // Line 4 first uses a variable STD cannot hold; line 5 a thread STD
    // cannot hold either (later, so not the one reported).
    let input = write(
        &dir,
        "t.csv",
        "thread,op,target,loc\nT1,w,x,a:1\n# a comment\nT1,w,\"y|z\",a:2\n\"T(2)\",w,x,\n",
    );
    let out = write(&dir, "out.std", "precious\n");
    let (code, stdout, err) = cprace(&["convert", &input, "--to", "std", "-o", &out]);
    assert_eq!(code, 2, "{err}");
    assert!(stdout.is_empty());
    assert!(
        err.contains(&format!(
            "{input}:4: variable name `y|z` cannot be written in STD"
        )),
        "{err}"
    );
    assert!(err.contains("(event 1)"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary left behind"
    );

    // Control characters are escaped in the message, never printed raw.
    let input = write(
        &dir,
        "u.csv",
        "thread,op,target,loc\n\"T\u{1b}[2J|\",w,x,\n",
    );
    let (code, _, err) = cprace(&["convert", &input, "--to", "std", "-o", &out]);
    assert_eq!(code, 2);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(
        err.contains(&format!("{input}:2: thread name `T\\u{{1b}}[2J|`")),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");

    // A good conversion replaces the file.
    let good = write(&dir, "g.csv", "thread,op,target,loc\nT1,w,x,a:1\n");
    let (code, _, err) = cprace(&["convert", &good, "--to", "std", "-o", &out]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "T1|w(x)|a:1\n");
}

#[test]
fn output_paths_are_checked_before_the_work() {
    // The trace does not exist: a path check that ran after loading would
    // report the trace instead.
    let missing = "/nonexistent-cprace-trace.std";
    for args in [
        &["sweep", missing, "--plot", "/nonexistent-cprace-dir/p.svg"][..],
        &[
            "convert",
            missing,
            "--to",
            "csv",
            "-o",
            "/nonexistent-cprace-dir/t.csv",
        ],
        &["gen", "-n", "10", "-o", "/nonexistent-cprace-dir/t.csv"],
    ] {
        let (code, _, err) = cprace(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.contains("/nonexistent-cprace-dir") && err.contains("does not exist"),
            "{args:?}: {err}"
        );
    }
}

/// Run `cprace args`, read one line of its output, close the pipe, and
/// return its exit code and stderr.
fn close_after_one_line(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(crate::common::cli::BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    // stdout is dropped here: the pipe is closed.
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let (code, _, err) = cprace(&[
        "gen",
        "--profile",
        "small",
        "-n",
        "30k",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let t = trace.to_str().unwrap();
    for args in [
        &["query", t, "--relation", "hb"][..],
        &["query", t, "--facts"],
        &["analyze", t, "--relation", "po", "--format", "csv"],
        &["analyze", t, "--relation", "hb", "--format", "jsonl"],
        &["analyze", t, "--relation", "po", "--all"],
        &["convert", t, "--to", "std"],
        &["gen", "-n", "10M"],
    ] {
        let (code, err) = close_after_one_line(args);
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(
            code == Some(0) || code == Some(1),
            "{args:?}: exit {code:?}"
        );
    }
}

#[test]
fn lenient_skips_counts_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("T1|fork(T2)|m:1\nT2|w(x)|a:1\nT1|join(T2)|m:2\n");
    // Line 4: T2 reused after its join (as RoadRunner traces sometimes hold).
    text.push_str("T2|w(x)|a:2\n");
    text.push_str("T1|w(x)|m:3\n");
    for i in 0..7 {
        text.push_str(&format!("T1|nonsense{i}\n"));
    }
    text.push_str("T1|r(x)|m:4\n");
    let p = write(&dir, "t.std", &text);
    let (code, _, err) = cprace(&["stats", &p]);
    assert_eq!(code, 2);
    assert!(err.contains(":4:"), "{err}");
    let (code, out, err) = cprace(&["stats", &p, "--lenient", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["events"], 5);
    assert!(
        err.contains("--lenient skipped 8 malformed or ill-formed lines; the first 5:"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{p}:4: event of thread `T2` after it was joined")),
        "{err}"
    );
    assert!(
        err.contains(&format!("{p}:6:")) && !err.contains(&format!("{p}:11:")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 6, "{err}");
    // From standard input too, for every command that reads a trace.
    let o = with_stdin(
        &[
            "analyze",
            "-",
            "--relation",
            "hb",
            "--lenient",
            "--format",
            "json",
        ],
        text.as_bytes(),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"], 5);
    assert!(String::from_utf8_lossy(&o.stderr).contains("<stdin>:4:"));
    // A clean trace: nothing said.
    let ok = write(&dir, "ok.std", "T1|w(x)|a:1\n");
    let (code, _, err) = cprace(&["stats", &ok, "--lenient"]);
    assert_eq!(code, 0);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn rapid_std_has_integer_locations_and_a_side_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "t.csv",
        "thread,op,target,loc\nT0,w,x,f0.java:7\nT1,acq,l,\nT1,r,x,\"g,1.java:3\"\nT1,rel,l,\nT0,r,x,f0.java:7\n",
    );
    let out = dir.path().join("r.std");
    let o = out.to_str().unwrap();
    let (code, _, err) = cprace(&["convert", &p, "--to", "std", "--rapid", "-o", o]);
    assert_eq!(code, 0, "{err}");
    let std = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        std,
        "T0|w(x)|1\nT1|acq(l)|0\nT1|r(x)|2\nT1|rel(l)|0\nT0|r(x)|1\n"
    );
    for line in std.lines() {
        let loc = line.rsplit('|').next().unwrap();
        assert!(loc.parse::<u32>().is_ok(), "{line}");
    }
    let table = std::fs::read_to_string(dir.path().join("r.std.locations.csv")).unwrap();
    assert_eq!(table, "id,location\n1,f0.java:7\n2,\"g,1.java:3\"\n");
    // Same events either way.
    let (_, a, _) = cprace(&["analyze", &p, "--relation", "hb", "--format", "json"]);
    let (_, b, _) = cprace(&["analyze", o, "--relation", "hb", "--format", "json"]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&a).unwrap(),
        serde_json::from_str(&b).unwrap(),
    );
    assert_eq!(a["racy_events"], b["racy_events"]);
    // --rapid needs -o and --to std.
    let (code, _, _) = cprace(&["convert", &p, "--to", "std", "--rapid"]);
    assert_eq!(code, 2);
    let (code, _, _) = cprace(&["convert", &p, "--to", "csv", "--rapid", "-o", o]);
    assert_eq!(code, 2);
}

/// When --lenient skips every line, the error (empty input) still comes
/// after the warning that counts the skipped lines and names the first few.
#[test]
fn lenient_warns_even_when_every_line_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=82).map(|i| format!("garbage line {i}\n")).collect();
    let p = write(&dir, "g.std", &text);
    // (--lenient before the command's name, as it may also be given.)
    let (code, out, err) = cprace(&["--lenient", "stats", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("--lenient skipped 82 malformed or ill-formed lines; the first 5:"),
        "{err}"
    );
    assert!(err.contains(&format!("  {p}:1: ")), "{err}");
    assert!(
        err.contains(&format!("{p}: empty input"))
            && err.contains("after --lenient skipped 82 lines"),
        "{err}"
    );
}
