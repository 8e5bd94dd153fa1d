//! C programs of tests/record_c built with `cprace cc CC` for every
//! compiler installed and recorded into cprace's binary trace (`.cpt`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CPRACE: &str = env!("CARGO_BIN_EXE_cprace");

/// tests/record_c/`name`.c.
pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/record_c")
        .join(format!("{name}.c"))
}

/// The 1-based line of `name`.c holding `marker` (the `nth`, from 0).
pub fn line_no(name: &str, marker: &str, nth: usize) -> u32 {
    let text = std::fs::read_to_string(source(name)).unwrap();
    let n = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .nth(nth)
        .unwrap_or_else(|| panic!("{marker} not in {name}.c"))
        .0;
    n as u32 + 1
}

/// The line of `name`.c holding `marker` (the `nth`, from 0), as `name.c:LINE`.
pub fn line_of(name: &str, marker: &str, nth: usize) -> String {
    format!("{name}.c:{}", line_no(name, marker, nth))
}

/// `cmd`'s output (a stale runtime on the library path must not win).
pub fn run(cmd: &mut Command) -> Output {
    cmd.env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// The C compilers installed (gcc, clang); a test over none says so.
pub fn compilers() -> Vec<&'static str> {
    let works = |c: &str| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let found: Vec<&'static str> = ["gcc", "clang"].into_iter().filter(|c| works(c)).collect();
    if found.is_empty() {
        eprintln!("SKIPPED: no C compiler (gcc, clang) installed");
    }
    found
}

/// `name`.c built with `cprace cc CC -O1 -g` in `dir`: the program.
pub fn build(dir: &Path, name: &str, cc: &str) -> PathBuf {
    let prog = dir.join(format!("{name}-{cc}"));
    let out = run(Command::new(CPRACE)
        .args(["cc", cc, "-O1", "-g"])
        .arg(source(name))
        .arg("-o")
        .arg(&prog)
        .arg("-lpthread"));
    assert!(
        out.status.success(),
        "cprace cc {cc} {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    prog
}

/// `name`.c built with `cprace cc CC -O1 -g` in `dir` and recorded: the
/// trace's path.
pub fn record(dir: &Path, name: &str, cc: &str) -> PathBuf {
    let prog = build(dir, name, cc);
    let trace = dir.join(format!("{name}-{cc}.cpt"));
    let out = run(Command::new(CPRACE)
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&prog));
    assert!(
        out.status.success(),
        "record {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

/// `cprace analyze TRACE ARGS`: its standard output, the run expected to
/// find races (exit 1).
pub fn analyze(trace: &Path, args: &[&str]) -> String {
    let out = run(Command::new(CPRACE).arg("analyze").arg(trace).args(args));
    assert_eq!(
        out.status.code(),
        Some(1),
        "analyze {} {args:?}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
