//! Running the built `cprace` binary.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `cprace ARGS..`, run to the end.
pub fn output(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cprace"))
        .args(args)
        .output()
        .expect("run cprace")
}

/// `cprace ARGS..`: its exit code (-1 when a signal ended it), stdout and
/// stderr.
pub fn cprace(args: &[&str]) -> (i32, String, String) {
    let out = output(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cprace ARGS..` with `input` on its standard input.
pub fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cprace"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cprace");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}
