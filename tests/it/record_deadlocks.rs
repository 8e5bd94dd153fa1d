//! Deadlocks of recorded C programs (tests/programs/deadlock_*.c), built by
//! every compiler present: a run that does not deadlock gives the predicted
//! deadlock at its `// DEADLOCK` lines with a witness `verify` accepts; a
//! run that hangs, stopped by `record --timeout`, gives the deadlock that
//! happened, nothing lost; a gate lock leaves nothing to report.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::recorded::compilers;

const CPRACE: &str = env!("CARGO_BIN_EXE_cprace");

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

fn cprace(args: &[&str], dir: &Path) -> Output {
    Command::new(CPRACE)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The lines of `file` marked `// DEADLOCK`, as `NAME:LINE`.
fn deadlock_lines(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(programs().join(file)).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("// DEADLOCK"))
        .map(|(i, _)| format!("{file}:{}", i + 1))
        .collect()
}

/// Build `file` with `cc` (`cprace cc`, -O1 -g) into `DIR/FILE-CC`.
fn build(file: &str, cc: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(format!("{file}-{cc}"));
    let src = programs().join(file);
    let b = cprace(
        &[
            "cc",
            cc,
            "-O1",
            "-g",
            "-pthread",
            src.to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
        ],
        dir,
    );
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    exe
}

/// Build `file` with `cc`, record it into `DIR/FILE-CC.EXT` (extra `record`
/// options first), and return the trace's path and record's stderr.
fn record(file: &str, cc: &str, ext: &str, extra: &[&str], dir: &Path) -> (PathBuf, String) {
    let exe = build(file, cc, dir);
    let trace = dir.join(format!("{file}-{cc}.{ext}"));
    let mut args = vec!["record", "-o", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--", exe.to_str().unwrap()]);
    let r = cprace(&args, dir);
    let err = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(trace.exists(), "{file} ({cc}): no trace\n{err}");
    (trace, err)
}

/// `deadlocks TRACE --witness --format json`: exit code and report.
fn deadlocks(trace: &Path, dir: &Path) -> (i32, Value) {
    let o = cprace(
        &[
            "deadlocks",
            trace.to_str().unwrap(),
            "--witness",
            "--format",
            "json",
        ],
        dir,
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

/// The source lines of a deadlock: every request and the acquire it holds.
fn lines(d: &Value) -> BTreeSet<String> {
    d["links"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| [l["loc"].clone(), l["holder"]["loc"].clone()])
        .map(|l| l.as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_rare_inversion_is_predicted_at_its_lines_with_a_witness_verify_accepts() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let file = "deadlock_inversion.c";
        let (trace, err) = record(file, cc, "std", &[], dir.path());
        assert!(err.contains("exited with status 0"), "{cc}: {err}");
        let (code, v) = deadlocks(&trace, dir.path());
        assert_eq!(code, 1, "{cc}: {v}");
        let found = v["deadlocks"].as_array().unwrap();
        assert_eq!(found.len(), 1, "{cc}: {v}");
        assert_eq!(found[0]["kind"], "predicted", "{cc}: {v}");
        assert_eq!(lines(&found[0]), deadlock_lines(file), "{cc}");
        let report = dir.path().join(format!("{cc}-d.json"));
        std::fs::write(&report, serde_json::to_string(&v).unwrap()).unwrap();
        let ok = cprace(
            &[
                "verify",
                trace.to_str().unwrap(),
                "--witness",
                report.to_str().unwrap(),
            ],
            dir.path(),
        );
        let out = String::from_utf8_lossy(&ok.stdout);
        assert_eq!(ok.status.code(), Some(0), "{cc}: {out}");
        assert!(out.contains("1 valid, 0 invalid"), "{cc}: {out}");
    }
}

#[test]
fn a_hung_program_stopped_by_timeout_gives_the_deadlock_that_happened() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let file = "deadlock_always.c";
        let (trace, err) = record(file, cc, "std", &["--timeout", "2"], dir.path());
        assert!(err.contains("stopped by --timeout"), "{cc}: {err}");
        let text = std::fs::read_to_string(&trace).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.contains("|req(")).count(),
            2,
            "{cc}: both blocked requests are in the trace\n{text}"
        );
        let (code, v) = deadlocks(&trace, dir.path());
        assert_eq!(code, 1, "{cc}: {v}");
        let found = v["deadlocks"].as_array().unwrap();
        assert_eq!(found.len(), 1, "{cc}: {v}");
        assert_eq!(found[0]["kind"], "actual", "{cc}: {v}");
        assert_eq!(lines(&found[0]), deadlock_lines(file), "{cc}");
        // The same through `record --analyze deadlocks`.
        let exe = dir.path().join(format!("{file}-{cc}"));
        let again = dir.path().join("again.std");
        let o = cprace(
            &[
                "record",
                "-o",
                again.to_str().unwrap(),
                "--timeout",
                "2",
                "--analyze",
                "deadlocks",
                "--",
                exe.to_str().unwrap(),
            ],
            dir.path(),
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{cc}: {out}");
        assert!(out.contains("1 actual deadlock"), "{cc}: {out}");
    }
}

#[test]
fn a_gate_lock_and_an_ordered_table_report_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        for file in ["deadlock_gate_lock.c", "deadlock_philosophers3_ordered.c"] {
            let (trace, _) = record(file, cc, "std", &[], dir.path());
            let (code, v) = deadlocks(&trace, dir.path());
            assert_eq!(code, 0, "{file} ({cc}): {v}");
        }
    }
}

#[test]
fn three_philosophers_are_predicted() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let file = "deadlock_philosophers3.c";
        let (trace, _) = record(file, cc, "std", &[], dir.path());
        let (code, v) = deadlocks(&trace, dir.path());
        assert_eq!(code, 1, "{cc}: {v}");
        let found = v["deadlocks"].as_array().unwrap();
        assert!(
            found
                .iter()
                .any(|d| d["kind"] == "predicted" && d["locks"].as_array().unwrap().len() == 3),
            "{cc}: {v}"
        );
    }
}

#[test]
fn a_binary_recording_gives_each_site_its_call_stack() {
    let dir = tempfile::tempdir().unwrap();
    let file = "deadlock_inversion.c";
    let (trace, err) = record(file, "gcc", "cpt", &[], dir.path());
    assert!(err.contains("exited with status 0"), "{err}");
    // Streamed (stacks read in a second pass) and loaded (--witness).
    for extra in [&[][..], &["--witness"][..]] {
        let mut args = vec!["deadlocks", trace.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = cprace(&args, dir.path());
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{text}");
        for (f, line) in [("ab", 15), ("ab", 16), ("ba", 25), ("ba", 26)] {
            let want = format!("#0 {f} ");
            assert!(
                text.lines()
                    .any(|l| l.contains(&want) && l.contains(&format!("{file}:{line} "))),
                "no frame `{want}... {file}:{line}` in\n{text}"
            );
        }
        assert!(
            !text.contains("libcprace_rt"),
            "runtime frames shown:\n{text}"
        );
        args.extend(["--format", "json"]);
        let o = cprace(&args, dir.path());
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        for l in v["deadlocks"][0]["links"].as_array().unwrap() {
            assert!(l["stack"].as_array().is_some_and(|s| !s.is_empty()), "{l}");
            assert!(
                l["holder"]["stack"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty()),
                "{l}"
            );
        }
    }
}

#[test]
fn race_reports_of_a_binary_recording_show_call_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, err) = record("heap_block_race.c", "gcc", "cpt", &[], dir.path());
    assert!(err.contains("exited with status 0"), "{err}");
    for extra in [&[][..], &["--all"][..]] {
        let mut args = vec!["analyze", trace.to_str().unwrap(), "--relation", "hb"];
        args.extend_from_slice(extra);
        let o = cprace(&args, dir.path());
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{text}");
        for (f, line) in [("writer", 10), ("main", 18)] {
            assert!(
                text.lines()
                    .any(|l| l.trim_start().starts_with(&format!("#0 {f} "))
                        && l.contains(&format!("heap_block_race.c:{line} "))),
                "no `#0 {f} ...:{line}` frame in\n{text}"
            );
        }
        assert!(
            !text.contains("libc.so"),
            "frames below main shown:\n{text}"
        );
    }
}
