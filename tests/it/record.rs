//! `cprace cc` + `cprace record` on real C programs (tests/record_c/), built
//! with gcc and analyzed with hb, cp and wcp. Everything is written inside a
//! temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::cli::BIN as CPRACE;
use crate::common::recorded::{self, line_of, run, source};

/// Builds `name`.c with `cprace cc gcc` in `dir`; returns the program.
fn build(dir: &Path, name: &str) -> PathBuf {
    recorded::build(dir, name, "gcc")
}

/// Records `prog` into `dir/name.std`; returns the trace and record's output.
fn record(dir: &Path, prog: &Path) -> (PathBuf, Output) {
    let trace = dir.join(format!(
        "{}.std",
        prog.file_name().unwrap().to_string_lossy()
    ));
    let out = run(Command::new(CPRACE)
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(prog));
    (trace, out)
}

/// (variable, first_loc, second_loc) of every race `relation` reports.
fn races(trace: &Path, relation: &str) -> Vec<(String, String, String)> {
    let out = run(Command::new(CPRACE).arg("analyze").arg(trace).args([
        "--relation",
        relation,
        "--format",
        "json",
    ]));
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "analyze --relation {relation} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut r: Vec<_> = v["races"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap().to_string();
            (s("variable"), s("first_loc"), s("second_loc"))
        })
        .collect();
    r.sort();
    r.dedup();
    r
}

fn recorded(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), name);
    let (trace, out) = record(dir.path(), &prog);
    assert!(
        out.status.success(),
        "record {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, trace)
}

#[test]
fn polarcoord_cp_predicts_the_race_hb_misses() {
    let (_dir, trace) = recorded("polarcoord");
    assert_eq!(
        races(&trace, "hb"),
        vec![],
        "HB orders the increments in this run"
    );
    let expected = vec![(
        "count".to_string(),
        line_of("polarcoord", "INCREMENT-1", 0),
        line_of("polarcoord", "INCREMENT-2", 0),
    )];
    assert_eq!(races(&trace, "cp"), expected);
    assert_eq!(races(&trace, "wcp"), expected);
}

/// gcc's ThreadSanitizer on the same program and schedule reports nothing;
/// skipped (with a message) where libtsan is not installed.
#[test]
fn polarcoord_tsan_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("polar-tsan");
    let built = run(Command::new("gcc")
        .args(["-O1", "-g", "-fsanitize=thread"])
        .arg(source("polarcoord"))
        .arg("-o")
        .arg(&prog)
        .arg("-lpthread"));
    if !built.status.success() {
        eprintln!(
            "SKIPPED: gcc -fsanitize=thread cannot build here (libtsan missing?): {}",
            String::from_utf8_lossy(&built.stderr)
        );
        return;
    }
    let out = run(&mut Command::new(&prog));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("FATAL: ThreadSanitizer") {
        eprintln!("SKIPPED: ThreadSanitizer cannot run here: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("WARNING: ThreadSanitizer"), "{stderr}");
    // The same program's unsynchronized counter is reported by TSan, so the
    // silence above is not a TSan that reports nothing at all.
    let prog = dir.path().join("counter-tsan");
    run(Command::new("gcc")
        .args(["-O1", "-g", "-fsanitize=thread"])
        .arg(source("counter"))
        .arg("-o")
        .arg(&prog)
        .arg("-lpthread"));
    let out = run(&mut Command::new(&prog));
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING: ThreadSanitizer: data race"));
}

#[test]
fn unsynchronized_counter_is_reported_by_hb_at_its_line() {
    let (_dir, trace) = recorded("counter");
    let at = line_of("counter", "RACE", 0);
    assert_eq!(
        races(&trace, "hb"),
        vec![("counter".into(), at.clone(), at)]
    );
}

#[test]
fn hundreds_of_call_paths_are_recorded_without_hanging() {
    // 512 call sites of one function make 512 call-tree nodes per thread;
    // the runtime's table of them once grew to a size its probe could not
    // walk and the program spun forever in its first function entries.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "call_paths");
    let trace = dir.path().join("call_paths.cpt");
    let out = run(Command::new(CPRACE)
        .args(["record", "--timeout", "120", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&prog));
    assert!(
        out.status.success(),
        "record call_paths: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let at = line_of("call_paths", "RACE", 0);
    assert_eq!(
        races(&trace, "hb"),
        vec![("counter".into(), at.clone(), at)]
    );
}

fn race_free(name: &str) {
    let (_dir, trace) = recorded(name);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.lines().count() > 10, "{name}: too few events:\n{text}");
    for rel in ["hb", "cp", "wcp"] {
        assert_eq!(races(&trace, rel), vec![], "{name} under {rel}");
    }
}

#[test]
fn condition_variable_queue_is_race_free() {
    race_free("condvar_queue");
}

#[test]
fn semaphore_hand_off_is_race_free() {
    race_free("semaphore");
}

#[test]
fn barrier_phases_are_race_free() {
    race_free("barrier");
}

#[test]
fn atomic_counters_are_race_free() {
    race_free("atomics");
}

#[test]
fn locks_rwlocks_and_once_are_race_free() {
    race_free("locks");
}

#[test]
fn heap_blocks_reused_across_threads_are_race_free() {
    race_free("heap_reuse");
}

#[test]
fn record_passes_the_exit_status_through_and_counts_events() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "exit_status");
    let (trace, out) = record(dir.path(), &prog);
    assert_eq!(out.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = std::fs::read_to_string(&trace).unwrap().lines().count();
    assert!(
        stderr.contains(&format!("cprace record: {lines} events")),
        "{stderr}"
    );
    assert!(stderr.contains("exited with status 7"), "{stderr}");
}

#[test]
fn record_analyze_chains_into_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "polarcoord");
    let out = run(Command::new(CPRACE)
        .args(["record", "-o"])
        .arg(dir.path().join("t.std"))
        .args(["--analyze", "cp", "--"])
        .arg(&prog));
    assert_eq!(out.status.code(), Some(1), "races found");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("data race on `count`"), "{stdout}");
    assert!(
        stdout.contains(&line_of("polarcoord", "INCREMENT-2", 0)),
        "{stdout}"
    );
}

/// `record --analyze` reads a program's events while it runs (threads
/// that block, sleep, start and end meanwhile): its report is the one read
/// from the same run's event files afterwards, for every relation.
#[test]
fn record_analyze_while_the_program_runs_reports_what_its_files_do() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "live_mix");
    for relation in ["hb", "wcp", "cp"] {
        let events = dir.path().join(format!("events-{relation}"));
        let live = run(Command::new(CPRACE)
            .args(["record", "--analyze", relation, "--keep-events"])
            .arg(&events)
            .arg("--")
            .arg(&prog));
        let stderr = String::from_utf8_lossy(&live.stderr);
        assert_eq!(live.status.code(), Some(1), "{relation}: {stderr}");
        assert!(
            stderr.contains("`") && stderr.contains("exited with status 0"),
            "{stderr}"
        );
        let after = run(Command::new(CPRACE)
            .args(["record", "--analyze", relation, "--from-events"])
            .arg(&events));
        assert_eq!(after.status.code(), Some(1), "{relation}");
        // The report without the program's own line and the timings.
        let report = |o: &Output| -> Vec<String> {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.contains("seconds") && !l.starts_with(|c: char| c.is_ascii_digit()))
                .map(String::from)
                .collect()
        };
        let (live, after) = (report(&live), report(&after));
        assert!(
            live.iter().any(|l| l.contains("data race on `stats`")),
            "{relation}: {live:?}"
        );
        assert_eq!(live, after, "{relation}");
    }
    // The event files need a directory of their own.
    let out = run(Command::new(CPRACE)
        .args(["record", "--analyze", "hb", "--keep-events"])
        .arg(dir.path())
        .arg("--")
        .arg(&prog));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
}

#[test]
fn record_analyze_without_output_keeps_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "counter");
    let work = tempfile::tempdir().unwrap();
    for relation in ["hb", "wcp", "cp"] {
        let out = run(Command::new(CPRACE)
            .current_dir(work.path())
            .args(["record", "--analyze", relation, "--"])
            .arg(&prog));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{relation}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("data race on `counter`")
                && stdout.contains(&line_of("counter", "RACE", 0)),
            "{relation}: {stdout}"
        );
        assert!(stderr.contains(") recorded; `"), "{relation}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    // A trace format needs a trace to write.
    let out = run(Command::new(CPRACE)
        .args(["record", "--format", "std", "--analyze", "hb", "--"])
        .arg(&prog));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--output"));
}

#[test]
fn uninstrumented_program_is_an_error_and_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.std");
    let out = run(Command::new(CPRACE)
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--", "true"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("build it with `cprace cc`"));
    assert!(!trace.exists());
    // Analysed as it is written (no -o): the recording's error, not the
    // analysis's of an empty pipe; the same for a program that cannot run.
    for (prog, says) in [
        ("true", "build it with `cprace cc`"),
        ("./no-such-program", "cannot run `./no-such-program`"),
    ] {
        let out = run(Command::new(CPRACE).current_dir(dir.path()).args([
            "record",
            "--analyze",
            "hb",
            "--",
            prog,
        ]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn cc_compiles_objects_and_links_them_in_separate_steps() {
    // The `make` pattern: `-c` per file, then a link of objects.
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("counter.o");
    let prog = dir.path().join("counter");
    let out = run(Command::new(CPRACE)
        .args(["cc", "gcc", "-O1", "-g", "-c"])
        .arg(source("counter"))
        .arg("-o")
        .arg(&obj));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(Command::new(CPRACE)
        .args(["cc", "gcc"])
        .arg(&obj)
        .arg("-o")
        .arg(&prog)
        .arg("-pthread"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (trace, out) = record(dir.path(), &prog);
    assert!(out.status.success());
    assert_eq!(races(&trace, "hb").len(), 1);
}

/// `cprace record --from-events` of one run of `name` into `t.std`, `t.bin`
/// and `t.zst`: returns the directory and record's stderr per format.
fn one_run_three_formats(name: &str) -> (tempfile::TempDir, Vec<String>) {
    one_run_formats(name, &["t.std", "t.bin", "t.zst"])
}

/// One run of `name`, its events written to each output of `outputs` (in
/// `dir`); record's standard error for each.
fn one_run_formats(name: &str, outputs: &[&str]) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), name);
    let events = dir.path().join("events");
    std::fs::create_dir(&events).unwrap();
    let out = run(Command::new(&prog).env("CPRACE_RECORD_DIR", &events));
    assert!(out.status.success());
    let stderr = outputs
        .iter()
        .map(|t| {
            let out = run(Command::new(CPRACE)
                .args(["record", "--from-events"])
                .arg(&events)
                .arg("-o")
                .arg(dir.path().join(t)));
            let e = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "record -o {t}: {e}");
            e
        })
        .collect();
    (dir, stderr)
}

/// `trace` as STD text (through `cprace convert`, which reads every format).
fn as_std(trace: &Path) -> String {
    let out = run(Command::new(CPRACE)
        .arg("convert")
        .arg(trace)
        .args(["--to", "std"]));
    assert!(
        out.status.success(),
        "convert {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn starts_with_zstd_magic(p: &Path) -> bool {
    std::fs::read(p)
        .unwrap()
        .starts_with(&[0x28, 0xB5, 0x2F, 0xFD])
}

#[test]
fn rapidbin_and_zstd_outputs_hold_the_same_trace_as_std() {
    let (dir, _) = one_run_three_formats("counter");
    let d = dir.path();
    let std = std::fs::read_to_string(d.join("t.std")).unwrap();
    assert!(std.contains(&format!("|w(counter)|{}", line_of("counter", "RACE", 0))));
    assert!(
        !starts_with_zstd_magic(&d.join("t.bin")),
        "RapidBin expected"
    );
    assert!(d.join("t.bin.names.json").exists());
    assert!(starts_with_zstd_magic(&d.join("t.zst")));
    assert_eq!(as_std(&d.join("t.bin")), std);
    assert_eq!(as_std(&d.join("t.zst")), std);
    assert_eq!(races(&d.join("t.bin"), "hb"), races(&d.join("t.std"), "hb"));
}

/// Converting a recording to a format without byte masks names each access
/// after its first byte, as `record` writes those formats itself: two
/// threads writing different fields of one 8-byte cell stay apart, no race.
/// Converted under the cell's name, they raced in the STD, CSV and RapidBin
/// output of `convert`.
#[test]
fn converting_a_recording_names_accesses_by_their_first_byte() {
    let (dir, _) = one_run_formats("fields", &["t.std", "t.cpt"]);
    let d = dir.path();
    let std = std::fs::read_to_string(d.join("t.std")).unwrap();
    for field in ["w(s)", "w(s+4)", "w(s+10)", "w(s+12)"] {
        assert!(std.contains(field), "{field} in\n{std}");
    }
    assert_eq!(as_std(&d.join("t.cpt")), std);
    assert!(races(&d.join("t.cpt"), "hb").is_empty());
    let csv = d.join("t.csv");
    let out = run(Command::new(CPRACE)
        .arg("convert")
        .arg(d.join("t.cpt"))
        .args(["--to", "csv", "-o"])
        .arg(&csv));
    assert!(out.status.success());
    assert!(races(&csv, "hb").is_empty());
}

#[test]
fn rapidbin_falls_back_to_zstd_std_for_volatile_accesses() {
    let (dir, stderr) = one_run_three_formats("atomics");
    let d = dir.path();
    assert!(
        stderr[1].contains("volatile accesses") && stderr[1].contains("zstd-compressed STD"),
        "{}",
        stderr[1]
    );
    assert!(starts_with_zstd_magic(&d.join("t.bin")));
    assert!(!d.join("t.bin.names.json").exists());
    let std = std::fs::read_to_string(d.join("t.std")).unwrap();
    assert!(std.contains("|vw("));
    assert_eq!(as_std(&d.join("t.bin")), std);
}

/// The output path is checked before the program runs: a missing or
/// unwritable directory is an error naming the path given, and the program
/// (here one that leaves a mark) never starts.
#[test]
fn unwritable_output_is_an_error_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("ran");
    let touch = format!("touch {}", mark.display());
    let missing = dir.path().join("nodir/x.std");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("x.std");
    for (out, why) in [
        (missing.to_str().unwrap(), "does not exist"),
        (under_file.to_str().unwrap(), "is not a directory"),
        // Not writable even by root: /proc takes no new files.
        ("/proc/x.std", "cannot create a file in /proc"),
    ] {
        let o = run(Command::new(CPRACE).args(["record", "-o", out, "--", "sh", "-c", &touch]));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out}: {err}");
        assert!(
            err.contains(&format!("cannot write {out}: ")) && err.contains(why),
            "{out}: {err}"
        );
        assert!(!err.contains(".cprace-"), "names a temporary file: {err}");
        assert!(!mark.exists(), "{out}: the program ran");
    }
}

/// `cprace cc` without a compiler explains that the first argument is the
/// compiler, with the command as it should be.
#[test]
fn cc_without_a_compiler_says_the_first_argument_is_the_compiler() {
    for args in [
        &["cc", "-g", "-O1", "prog.c", "-o", "prog", "-lpthread"][..],
        &["cc", "prog.c", "-o", "prog"],
    ] {
        let o = run(Command::new(CPRACE).args(args));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("`{}` is not a compiler", args[1]))
                && err.contains("the first argument of `cprace cc` names the compiler")
                && err.contains(&format!("`cprace cc gcc {}`", args[1..].join(" "))),
            "{args:?}: {err}"
        );
        assert!(!err.contains("cannot run"), "{err}");
    }
    // Its help is about compiling: no trace options.
    let o = run(Command::new(CPRACE).args(["cc", "--help"]));
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{help}");
    assert!(
        help.contains("The first argument is always the compiler"),
        "{help}"
    );
    assert!(!help.contains("--lenient"), "{help}");
    for cmd in ["record", "gen"] {
        let o = run(Command::new(CPRACE).args([cmd, "--help"]));
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("--lenient"),
            "{cmd}"
        );
    }
    // Commands that read a trace still list it, and it still works before
    // the command's name; there it is refused for the others.
    let o = run(Command::new(CPRACE).args(["stats", "--help"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--lenient"));
    let o = run(Command::new(CPRACE).args(["--lenient", "gen", "-n", "10"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--lenient applies only"));
}

/// `record --analyze R` without `-o` hands the lowered events straight to
/// the analysis (no trace encoded and read back): its report, races
/// described from a trace written afterwards, must be the one `analyze`
/// gives on the trace `record -o` writes from the same run, for every
/// relation that streams, on every recorder test program that builds alone.
#[test]
fn analysed_while_lowered_reports_what_its_trace_does() {
    let dir = tempfile::tempdir().unwrap();
    let programs = [
        "atomics",
        "barrier",
        "call_paths",
        "condvar_queue",
        "counter",
        "exit_status",
        "heap_reuse",
        "locks",
        "polarcoord",
        "semaphore",
        "tsan_deep",
        "tsan_global",
        "tsan_heap",
        "tsan_mutexes",
        "tsan_rwlock",
        "tsan_stack",
    ];
    // Seconds differ from run to run.
    let timeless = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.contains("seconds"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut racy = 0;
    for name in programs {
        let prog = build(dir.path(), name);
        let events = dir.path().join(format!("{name}.events"));
        std::fs::create_dir(&events).unwrap();
        run(Command::new(&prog).env("CPRACE_RECORD_DIR", &events));
        let trace = dir.path().join(format!("{name}.cpt"));
        let out = run(Command::new(CPRACE)
            .args(["record", "--from-events"])
            .arg(&events)
            .arg("-o")
            .arg(&trace));
        assert!(out.status.success(), "{name}: {}", timeless(&out.stderr));
        for relation in ["hb", "wcp", "shb", "cp", "lockset"] {
            let fed = run(Command::new(CPRACE)
                .args(["record", "--analyze", relation, "--from-events"])
                .arg(&events));
            let read = run(Command::new(CPRACE)
                .arg("analyze")
                .arg(&trace)
                .args(["--relation", relation]));
            let what = format!("{name} {relation}: {}", timeless(&fed.stderr));
            assert_eq!(fed.status.code(), read.status.code(), "{what}");
            assert!(matches!(fed.status.code(), Some(0 | 1)), "{what}");
            assert_eq!(timeless(&fed.stdout), timeless(&read.stdout), "{what}");
            racy += usize::from(fed.status.code() == Some(1));
        }
    }
    // Reports with races and their descriptions were compared.
    assert!(racy >= 10, "{racy} racy reports");
}
