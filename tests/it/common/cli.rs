//! Running the built `cprace` binary: the one runner every test uses (and
//! its path, for the tests that pipe, limit or time it).

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The built binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_cprace");

/// `cprace ARGS..` with standard input closed, run to the end.
pub fn output(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
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
        stderr(&out),
    )
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `cprace ARGS..` with `input` on its standard input.
pub fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cprace");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}
