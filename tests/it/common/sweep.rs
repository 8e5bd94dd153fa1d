//! Running `cprace` for the sweep and plot tests: a generated trace on disk,
//! the binary with no standard input.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `cprace ARGS..` with standard input closed.
pub fn cprace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cprace"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run cprace")
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `cprace gen --profile small -n N --seed S` into `dir`.
pub fn generated(dir: &Path, n: u64, seed: u64) -> PathBuf {
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
