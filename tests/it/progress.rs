//! Progress on standard error: shown on a terminal (a pseudo-terminal made by
//! `script`), never a byte of it when standard error is a file or pipe, or
//! with `--quiet`. `CPRACE_PROGRESS_DELAY_MS=0` removes the one-second delay
//! before the display starts, so short test runs show it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::cli::BIN;

fn generated(dir: &Path) -> PathBuf {
    let path = dir.join("t.std");
    let o = Command::new(BIN)
        .args(["gen", "--profile", "small", "-n", "40k", "--seed", "5"])
        .args(["--format", "std", "-o", path.to_str().unwrap()])
        .output()
        .expect("run cprace");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    path
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CPRACE_PROGRESS_DELAY_MS", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run cprace")
}

/// What a terminal sees of `cprace ARGS >/dev/null` (stderr on a pty).
fn on_terminal(args: &[&str]) -> String {
    let cmd = format!("{BIN} {} >/dev/null", args.join(" "));
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("CPRACE_PROGRESS_DELAY_MS", "0")
        .env("COLUMNS", "200")
        .stdin(Stdio::null())
        .output()
        .expect("`script` (util-linux) runs the command on a pseudo-terminal");
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Bytes only the progress display writes: carriage returns, escape
/// sequences, its wording. (Notes and errors may still go to stderr.)
fn assert_no_progress(what: &str) {
    // A terminal turns each newline of a note into "\r\n"; a lone '\r' is
    // the display redrawing its line.
    let what = what.replace("\r\n", "\n");
    assert!(
        !what.contains('\r') && !what.contains('\x1b') && !what.contains("events read"),
        "{what:?}"
    );
}

fn sweep_args(trace: &Path) -> Vec<String> {
    [
        "sweep",
        trace.to_str().unwrap(),
        "--windows",
        "10,100,1000,none",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_terminal_shows_phases_and_events_read() {
    let dir = tempfile::tempdir().unwrap();
    let t = generated(dir.path());
    let args = sweep_args(&t);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let screen = on_terminal(&args);
    assert!(screen.contains("events read"), "{screen:?}");
    assert!(screen.contains("sweep run "), "{screen:?}");
    // The line is cleared at the end.
    assert!(screen.contains("\x1b[2K"), "{screen:?}");
}

#[test]
fn quiet_on_a_terminal_prints_no_progress() {
    let dir = tempfile::tempdir().unwrap();
    let t = generated(dir.path());
    let mut args = sweep_args(&t);
    args.insert(1, "--quiet".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_no_progress(&on_terminal(&args));
    let a = ["analyze", t.to_str().unwrap(), "--relation", "cp", "-q"];
    assert_no_progress(&on_terminal(&a));
}

#[test]
fn no_terminal_no_progress_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let t = generated(dir.path());
    let args = sweep_args(&t);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args);
    assert!(o.status.code().is_some_and(|c| c <= 1));
    assert_no_progress(&String::from_utf8_lossy(&o.stderr));
    let o = run(&["analyze", t.to_str().unwrap(), "--relation", "cp"]);
    assert!(o.status.code().is_some_and(|c| c <= 1));
    assert_no_progress(&String::from_utf8_lossy(&o.stderr));
}
