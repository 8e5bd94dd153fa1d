//! ThreadSanitizer suppressions (`--suppressions FILE`, TSAN_OPTIONS'
//! `suppressions=FILE`): the same file given to a `-fsanitize=thread` build
//! and to cprace drops the same races (tests/record_c/supp_main.c, with a
//! race inside the small shared library supp_lib.c); on STD traces `race:`
//! matches locations and variable names; `deadlock:` drops deadlocks; the
//! summary and JSON count what was dropped; exit codes count only what is
//! left; malformed and missing files are exit 2 naming file and line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::cli::{BIN, cprace};

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/record_c")
        .join(name)
}

fn run(cmd: &mut Command) -> Output {
    // As in record.rs: a stale runtime on the library path must not win;
    // the caller's TSAN_OPTIONS must not leak in.
    cmd.env_remove("LD_LIBRARY_PATH")
        .env_remove("TSAN_OPTIONS")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// `cmd` run with only the environment it was given (TSAN_OPTIONS kept).
fn with_env(cmd: &mut Command) -> Output {
    cmd.env_remove("LD_LIBRARY_PATH").output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Per report block, the pair of functions (sorted) of each access's
/// innermost frame in supp_main.c or supp_lib.c: the races a report shows,
/// in terms both tools print (TSan's interceptor frames, `memset`, have no
/// counterpart in cprace's stacks, whose innermost frame is the caller).
fn races(report: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut block: Vec<String> = Vec::new();
    let mut want_frame = false;
    let mut inside = false;
    for line in report.lines() {
        if line == "==================" {
            if inside && !block.is_empty() {
                block.sort();
                out.insert((block[0].clone(), block.last().unwrap().clone()));
            }
            inside = !inside;
            block.clear();
            continue;
        }
        let l = line.trim_start();
        if line.starts_with("  ") && !line.starts_with("   ") {
            // A section header: only the two accesses' sections count.
            want_frame = ["Read", "Write", "Previous", "Atomic"]
                .iter()
                .any(|w| l.starts_with(w));
            continue;
        }
        if want_frame && l.starts_with('#') {
            let mut parts = l.split_whitespace().skip(1);
            let (Some(function), Some(at)) = (parts.next(), parts.next()) else {
                continue;
            };
            if at.contains("supp_main.c:") || at.contains("supp_lib.c:") {
                block.push(function.to_string());
                want_frame = false;
            }
        }
    }
    out
}

fn pairs(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The library, the TSan build (None when TSan cannot build or run here)
/// and the cprace trace of supp_main.c, in `dir`.
fn build(dir: &Path) -> (Option<PathBuf>, PathBuf) {
    let lib = dir.join("libsupplib.so");
    let out = run(Command::new("cc")
        .args(["-shared", "-fPIC", "-g", "-O1"])
        .arg(source("supp_lib.c"))
        .arg("-o")
        .arg(&lib));
    assert!(out.status.success(), "cc -shared: {}", text(&out).1);
    let link = |cmd: &mut Command| {
        cmd.arg(format!("-L{}", dir.display()))
            .arg("-lsupplib")
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-lpthread");
    };
    let tsan = dir.join("supp-tsan");
    let mut cmd = Command::new("cc");
    cmd.args(["-g", "-O1", "-fsanitize=thread"])
        .arg(source("supp_main.c"))
        .arg("-o")
        .arg(&tsan);
    link(&mut cmd);
    let tsan = if run(&mut cmd).status.success() {
        let (_, err) = text(&run(&mut Command::new(&tsan)));
        if err.contains("WARNING: ThreadSanitizer") && !err.contains("FATAL: ThreadSanitizer") {
            Some(tsan)
        } else {
            eprintln!("SKIPPED: ThreadSanitizer cannot run here: {err}");
            None
        }
    } else {
        eprintln!("SKIPPED: cc -fsanitize=thread cannot build here (libtsan missing?)");
        None
    };
    let prog = dir.join("supp-cprace");
    let mut cmd = Command::new(BIN);
    cmd.args(["cc", "cc", "-g", "-O1"])
        .arg(source("supp_main.c"))
        .arg("-o")
        .arg(&prog);
    link(&mut cmd);
    let out = run(&mut cmd);
    assert!(out.status.success(), "cprace cc: {}", text(&out).1);
    let trace = dir.join("supp.cpt");
    let out = run(Command::new(BIN)
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&prog));
    assert!(out.status.success(), "cprace record: {}", text(&out).1);
    (tsan, trace)
}

#[test]
fn tsan_and_cprace_suppress_the_same_races() {
    let dir = tempfile::tempdir().unwrap();
    let (tsan, trace) = build(dir.path());
    let rules = dir.path().join("supp.txt");
    std::fs::write(
        &rules,
        "# the project's TSan suppressions\nrace:bump_counter\n\ncalled_from_lib:libsupplib.so\n",
    )
    .unwrap();
    let all = pairs(&[
        ("bump_counter", "bump_counter"),
        ("fill_buf", "lib_clear"),
        ("set_flag", "set_flag"),
    ]);
    let left = pairs(&[("set_flag", "set_flag")]);

    let analyze = |extra: &dyn Fn(&mut Command)| {
        let mut cmd = Command::new(BIN);
        cmd.arg("analyze").arg(&trace).args(["--relation", "hb"]);
        extra(&mut cmd);
        // `run` clears TSAN_OPTIONS; `extra` may set it again after.
        cmd.env_remove("LD_LIBRARY_PATH");
        let out = cmd.output().unwrap();
        (out.status.code(), text(&out).0)
    };
    let (code, plain) = analyze(&|c| {
        c.env_remove("TSAN_OPTIONS");
    });
    assert_eq!(code, Some(1));
    assert_eq!(races(&plain), all, "{plain}");
    assert!(!plain.contains("suppressed:"), "{plain}");

    let (code, flagged) = analyze(&|c| {
        c.env_remove("TSAN_OPTIONS")
            .arg("--suppressions")
            .arg(&rules);
    });
    assert_eq!(code, Some(1));
    assert_eq!(races(&flagged), left, "{flagged}");
    let line = flagged
        .lines()
        .find(|l| l.starts_with("suppressed: "))
        .unwrap_or_else(|| panic!("no suppressed line in\n{flagged}"));
    assert!(
        line.contains("race:bump_counter ") && line.contains("called_from_lib:libsupplib.so "),
        "{line}"
    );

    let (code, env) = analyze(&|c| {
        c.env(
            "TSAN_OPTIONS",
            format!(
                "halt_on_error=0:suppressions={},history_size=4",
                rules.display()
            ),
        );
    });
    assert_eq!(code, Some(1));
    assert_eq!(races(&env), left, "{env}");

    // Everything suppressed: exit 0.
    let every = dir.path().join("every.txt");
    std::fs::write(
        &every,
        "race:bump_counter\ncalled_from_lib:libsupplib.so\nrace_top:^set_flag$\n",
    )
    .unwrap();
    let (code, none) = analyze(&|c| {
        c.env_remove("TSAN_OPTIONS")
            .arg("--suppressions")
            .arg(&every);
    });
    assert_eq!(code, Some(0), "{none}");
    assert!(races(&none).is_empty(), "{none}");

    let Some(tsan) = tsan else { return };
    let tsan_run = |options: Option<&Path>| {
        let mut cmd = Command::new(&tsan);
        cmd.env_remove("LD_LIBRARY_PATH").env_remove("TSAN_OPTIONS");
        if let Some(f) = options {
            cmd.env("TSAN_OPTIONS", format!("suppressions={}", f.display()));
        }
        text(&cmd.output().unwrap()).1
    };
    let tsan_all = tsan_run(None);
    assert_eq!(races(&tsan_all), all, "TSan:\n{tsan_all}\ncprace:\n{plain}");
    let tsan_left = tsan_run(Some(&rules));
    assert_eq!(
        races(&tsan_left),
        left,
        "TSan:\n{tsan_left}\ncprace:\n{flagged}"
    );
    let tsan_none = tsan_run(Some(&every));
    assert!(races(&tsan_none).is_empty(), "TSan:\n{tsan_none}");
}

#[test]
fn record_analyze_takes_suppressions() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = build(dir.path());
    let rules = dir.path().join("supp.txt");
    std::fs::write(&rules, "race:bump_counter\ncalled_from_lib:libsupplib.so\n").unwrap();
    let prog = dir.path().join("supp-cprace");
    // `record -o OUT --analyze hb --suppressions RULES -- prog`.
    let record = |out: &str, rules: &Path| {
        run(Command::new(BIN)
            .arg("record")
            .arg("-o")
            .arg(dir.path().join(out))
            .args(["--analyze", "hb", "--suppressions"])
            .arg(rules)
            .arg("--")
            .arg(&prog))
    };
    let out = record("again.cpt", &rules);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        races(&stdout),
        pairs(&[("set_flag", "set_flag")]),
        "{stdout}"
    );
    // A bad file is found before the program runs.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "race:x\nrace_bottom:y\n").unwrap();
    let out = record("never.cpt", &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out)
            .1
            .contains("bad.txt:2: unknown suppression type `race_bottom`"),
        "{}",
        text(&out).1
    );
    assert!(!dir.path().join("never.cpt").exists());
    drop(trace);
}

const STD: &str =
    "T0|w(x)|Main.java:3\nT1|w(x)|Worker.java:7\nT1|w(y)|Worker.java:8\nT0|r(y)|Main.java:9\n";

#[test]
fn std_traces_match_locations_and_variables() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.std");
    std::fs::write(&trace, STD).unwrap();
    let t = trace.to_str().unwrap();
    let supp = |rules: &str| {
        let f = dir.path().join("s.txt");
        std::fs::write(&f, rules).unwrap();
        f.to_str().unwrap().to_string()
    };
    let (code, out, err) = cprace(&["analyze", t, "--relation", "hb"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("SUMMARY: 2 racy events"), "{out}");

    let s = supp("race:Worker.java:8\n");
    let (code, out, _) = cprace(&["analyze", t, "--relation", "hb", "--suppressions", &s]);
    assert_eq!(code, 1);
    assert!(
        out.contains("SUMMARY: 1 racy event, 1 racy variable"),
        "{out}"
    );
    assert!(
        out.contains("\nsuppressed: 1 race (race:Worker.java:8 1)\n"),
        "{out}"
    );
    assert!(out.contains("data race on `x`"), "{out}");

    // Variable names, anchors; everything suppressed is exit 0.
    let s = supp("race:^x$\nrace:y\n");
    let (code, out, _) = cprace(&["analyze", t, "--relation", "hb", "--suppressions", &s]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("suppressed: 2 races (race:^x$ 1, race:y 1)"),
        "{out}"
    );
    // `^x$` is not `x` inside a longer name; unmatched types are no error.
    let s = supp("race:^Main$\nthread:x\nmutex:y\nsignal:z\n");
    let (code, out, _) = cprace(&["analyze", t, "--relation", "hb", "--suppressions", &s]);
    assert_eq!(code, 1);
    assert!(out.contains("SUMMARY: 2 racy events"), "{out}");
    assert!(out.contains("\nsuppressed: 0 races\n"), "{out}");

    // JSON and the summary format count them.
    let s = supp("race_top:Main.java:9\n");
    let (_, out, _) = cprace(&[
        "analyze",
        t,
        "--relation",
        "hb",
        "--suppressions",
        &s,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["suppressed"], 1);
    assert_eq!(v["races"].as_array().unwrap().len(), 1);
    let (_, out, _) = cprace(&["analyze", t, "--relation", "hb", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("suppressed").is_none());
    for format in ["summary", "csv", "jsonl"] {
        let (code, out, err) = cprace(&[
            "analyze",
            t,
            "--relation",
            "cp",
            "--suppressions",
            &s,
            "--format",
            format,
        ]);
        assert_eq!(code, 1, "{format}: {err}");
        if format == "summary" {
            assert!(
                out.contains("SUMMARY: 1 racy event")
                    && out.contains("\nsuppressed: 1 race (race_top:Main.java:9 1)\n"),
                "{out}"
            );
        } else {
            assert!(!out.contains("Main.java:9"), "{format}: {out}");
            assert!(out.contains("Worker.java:7"), "{format}: {out}");
        }
    }
}

#[test]
fn the_flag_wins_over_tsan_options() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.std");
    std::fs::write(&trace, STD).unwrap();
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "race:*\n").unwrap();
    let out = with_env(
        Command::new(BIN)
            .args(["analyze", "--relation", "hb"])
            .arg(&trace)
            .arg("--suppressions")
            .arg(&good)
            .env("TSAN_OPTIONS", "suppressions=/nonexistent/supp.txt"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    let out = with_env(
        Command::new(BIN)
            .args(["analyze", "--relation", "hb"])
            .arg(&trace)
            .env("TSAN_OPTIONS", "suppressions=/nonexistent/supp.txt"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out).1;
    assert!(
        err.contains("/nonexistent/supp.txt: cannot read the suppressions file")
            && err.contains("(named by TSAN_OPTIONS)"),
        "{err}"
    );
}

#[test]
fn malformed_and_missing_files_are_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.std");
    std::fs::write(&trace, STD).unwrap();
    let t = trace.to_str().unwrap();
    for (rules, want) in [
        (
            "race:a\nrace_tops:b\n",
            ":2: unknown suppression type `race_tops`",
        ),
        ("# c\n\nfoo\n", ":3: expected TYPE:PATTERN (missing `:`)"),
        ("deadlock:\n", ":1: empty pattern after `deadlock:`"),
    ] {
        let f = dir.path().join("bad.txt");
        std::fs::write(&f, rules).unwrap();
        let f = f.to_str().unwrap();
        for cmd in ["analyze", "deadlocks"] {
            let mut args = vec![cmd, t, "--suppressions", f];
            if cmd == "analyze" {
                args.extend(["--relation", "hb"]);
            }
            let (code, out, err) = cprace(&args);
            assert_eq!(code, 2, "{cmd} {rules:?}: {err}");
            assert!(out.is_empty(), "{out}");
            assert!(
                err.contains(&format!("{f}{want}")),
                "{cmd} {rules:?}: {err}"
            );
        }
    }
    let (code, _, err) = cprace(&[
        "analyze",
        t,
        "--relation",
        "hb",
        "--suppressions",
        "nope.txt",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("nope.txt: cannot read the suppressions file"),
        "{err}"
    );
}

#[test]
fn deadlock_rules_drop_deadlocks() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!(
        "{}/data/deadlocks/two-threads.std",
        env!("CARGO_MANIFEST_DIR")
    );
    let f = dir.path().join("d.txt");
    let f = f.to_str().unwrap();
    // A `race:` rule never drops a deadlock.
    std::fs::write(f, "race:two.c\n").unwrap();
    let (code, out, _) = cprace(&["deadlocks", &data, "--suppressions", f]);
    assert_eq!(code, 1);
    assert!(out.contains("1 predicted deadlock"), "{out}");
    assert!(out.contains("\nsuppressed: 0 deadlocks\n"), "{out}");
    // By location, then by lock name.
    for rule in ["deadlock:two.c:21", "deadlock:^a$"] {
        std::fs::write(f, format!("{rule}\n")).unwrap();
        let (code, out, err) = cprace(&["deadlocks", &data, "--suppressions", f]);
        assert_eq!(code, 0, "{rule}: {err}");
        assert!(out.contains("0 predicted deadlocks"), "{out}");
        assert!(
            out.contains(&format!("suppressed: 1 deadlock ({rule} 1)")),
            "{out}"
        );
        let (_, out, _) = cprace(&["deadlocks", &data, "--suppressions", f, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["suppressed"], 1, "{out}");
        assert_eq!(v["deadlocks"].as_array().unwrap().len(), 0);
    }
}
