//! Running out of memory is exit 2 with a sentence, never an abort.
//! Linux only: the limit is set with `ulimit -v` in a shell.

#![cfg(target_os = "linux")]

use std::process::Command;

/// A trace that needs far more than the limit: `--engine datalog` of HB
/// materialises the HB relation among sync events, and 10,000 volatile
/// writers followed by 10,000 readers of another thread each put 100 million
/// pairs in it (several GB; 6,000 of each already take 1.1 GB).
#[test]
fn allocation_failure_exits_2_with_a_sentence() {
    let dir = std::env::temp_dir().join(format!("cprace-oom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("volatiles.std");
    let mut text = String::new();
    let k = 10_000;
    for i in 0..k {
        text.push_str(&format!("T{i}|vw(v)|1\n"));
    }
    for i in k..2 * k {
        text.push_str(&format!("T{i}|vr(v)|2\n"));
    }
    std::fs::write(&trace, text).unwrap();
    let bin = crate::common::cli::BIN;
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 400000 && exec '{bin}' analyze '{}' --relation hb --engine datalog",
            trace.display()
        ))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        err.starts_with("cprace: error: out of memory"),
        "stderr: {err}"
    );
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    assert!(out.stdout.is_empty(), "no partial result");
}
