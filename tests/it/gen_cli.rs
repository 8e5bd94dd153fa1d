//! `cprace gen`: well-formed, reproducible, exactly the size requested, and
//! every knob does what it says.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::cli::output as cprace;
use cprace::tools::generate::{self, Config, TextFormat};
use cprace::trace::{Format, Op, load_str};
use serde_json::Value;

/// `cprace gen ARGS..`'s output (it must succeed).
fn gen_bytes(args: &[&str]) -> Vec<u8> {
    let mut a = vec!["gen"];
    a.extend_from_slice(args);
    let out = cprace(&a);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn gen_text(args: &[&str]) -> String {
    String::from_utf8(gen_bytes(args)).expect("UTF-8")
}

/// `cprace stats --format json` of a generated trace given by `args`.
fn gen_stats(args: &[&str]) -> Value {
    let text = gen_text(args);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t");
    std::fs::write(&p, text).unwrap();
    let out = cprace(&["stats", p.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_profile_and_format_loads_with_exactly_the_events_requested() {
    for p in Config::PROFILES {
        for (fmt, expect) in [("csv", Format::Csv), ("std", Format::Std)] {
            let text = gen_text(&["--profile", p, "-n", "3000", "--format", fmt, "--seed", "5"]);
            assert_eq!(
                cprace::trace::load::detect(text.as_bytes()),
                Some(expect),
                "{p} {fmt}"
            );
            let t = load_str(&text, None).unwrap_or_else(|e| panic!("{p} {fmt}: {e}"));
            assert_eq!(t.len(), 3000, "{p} {fmt}");
            assert_eq!(
                t.stats.unreleased_at_end, 0,
                "{p} {fmt}: every lock is released at the end"
            );
        }
    }
}

#[test]
fn library_generator_is_exact_for_many_small_configs() {
    for seed in 0..500u64 {
        let cfg = Config {
            events: seed % 97,
            threads: 1 + (seed % 7) as u32,
            locks: (seed % 5) as u32,
            max_nesting: (seed % 4) as u32,
            fork_join: seed % 2 == 0,
            p_reentrant: 0.1,
            p_out_of_order_release: 0.3,
            seed,
            ..Config::default()
        };
        let t = generate::trace(&cfg);
        assert_eq!(t.len() as u64, cfg.events, "seed {seed}: {cfg:?}");
        assert_eq!(t.stats.unreleased_at_end, 0, "seed {seed}");
        // The streamed text is the same trace.
        let mut text = Vec::new();
        let n = generate::write(&cfg, TextFormat::Std, &mut text).unwrap();
        assert_eq!(n, cfg.events);
        if n > 0 {
            let l = load_str(std::str::from_utf8(&text).unwrap(), None).unwrap();
            assert_eq!(l.events, t.events, "seed {seed}");
        }
    }
}

#[test]
fn same_seed_same_bytes_and_file_equals_stdout() {
    let args = |seed: &'static str| {
        [
            "--profile",
            "ftpserver",
            "-n",
            "20k",
            "--seed",
            seed,
            "--format",
            "std",
        ]
    };
    let a = gen_text(&args("42"));
    let b = gen_text(&args("42"));
    let c = gen_text(&args("43"));
    assert!(a == b, "same seed, different output");
    assert!(a != c, "different seeds, same output");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.std");
    let mut with_file = vec!["gen"];
    with_file.extend(args("42"));
    with_file.extend(["-o", p.to_str().unwrap()]);
    let out = cprace(&with_file);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(
        std::fs::read_to_string(&p).unwrap() == a,
        "-o output differs from stdout"
    );
}

#[test]
fn event_counts_accept_suffixes() {
    for (arg, n) in [("1k", 1000u64), ("2_500", 2500), ("7", 7)] {
        let v = gen_stats(&["-n", arg, "--profile", "small", "--format", "std"]);
        assert_eq!(v["events"].as_u64(), Some(n), "{arg}");
    }
    // Zero events: a CSV header alone (an empty STD file would not be a trace).
    assert_eq!(gen_text(&["-n", "0"]), "thread,op,target,loc\n");
}

#[test]
fn knobs_shape_the_trace() {
    let v = gen_stats(&[
        "-n",
        "20k",
        "--threads",
        "3",
        "--locks",
        "2",
        "--vars",
        "5",
        "--volatiles",
        "0",
        "--nesting",
        "1",
    ]);
    assert_eq!(v["threads"].as_u64(), Some(3));
    assert_eq!(v["locks"].as_u64(), Some(2));
    assert_eq!(v["variables"].as_u64(), Some(5));
    assert_eq!(v["volatile_accesses"].as_u64(), Some(0));
    assert_eq!(v["max_nesting_depth"].as_u64(), Some(1));
    assert_eq!(
        v["forks"].as_u64(),
        Some(2),
        "fork/join on in the bench profile: T0 forks the others"
    );

    let v = gen_stats(&[
        "-n",
        "20k",
        "--profile",
        "many-threads",
        "--fork-join",
        "false",
        "--nesting",
        "4",
        "--locks",
        "200",
    ]);
    assert_eq!(v["threads"].as_u64(), Some(64));
    assert_eq!(
        (v["forks"].as_u64(), v["joins"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(v["max_nesting_depth"].as_u64().unwrap() >= 3, "{v}");

    let v = gen_stats(&[
        "-n",
        "20k",
        "--profile",
        "small",
        "--reentrant",
        "0",
        "--out-of-nesting",
        "0",
    ]);
    assert_eq!(
        (
            v["reentrant_acquires_filtered"].as_u64(),
            v["out_of_nesting_releases"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let v = gen_stats(&[
        "-n",
        "20k",
        "--profile",
        "small",
        "--reentrant",
        "0.05",
        "--out-of-nesting",
        "0.5",
    ]);
    assert!(
        v["reentrant_acquires_filtered"].as_u64().unwrap() > 0
            && v["out_of_nesting_releases"].as_u64().unwrap() > 0
    );

    let v = gen_stats(&[
        "-n",
        "20k",
        "--volatiles",
        "3",
        "--volatile-share",
        "0.2",
        "--write-share",
        "1",
    ]);
    let vol = v["volatile_accesses"].as_f64().unwrap() / 20_000.0;
    assert!((0.1..0.3).contains(&vol), "volatile share {vol}");
    assert_eq!(
        v["reads"].as_u64(),
        Some(0),
        "--write-share 1 makes every access a write"
    );

    for share in [0.2, 0.5, 0.9] {
        let v = gen_stats(&[
            "-n",
            "50k",
            "--profile",
            "long-cs",
            "--locked-share",
            &share.to_string(),
        ]);
        let got = v["accesses_under_locks"].as_f64().unwrap()
            / (v["reads"].as_f64().unwrap() + v["writes"].as_f64().unwrap());
        assert!(
            (got - share).abs() < 0.05,
            "--locked-share {share}: got {got}"
        );
    }
}

/// Mean number of events from an acquire to its release, both included.
fn mean_cs_length(text: &str) -> f64 {
    let t = load_str(text, None).unwrap();
    let mut open: Vec<Option<usize>> = vec![None; t.num_threads()];
    let mut per_thread_pos = vec![0usize; t.num_threads()];
    let (mut total, mut n) = (0usize, 0usize);
    for e in &t.events {
        let th = e.thread as usize;
        per_thread_pos[th] += 1;
        match e.op {
            Op::Acquire => open[th] = Some(per_thread_pos[th]),
            Op::Release => {
                if let Some(a) = open[th].take() {
                    total += per_thread_pos[th] - a + 1;
                    n += 1;
                }
            }
            _ => {}
        }
    }
    total as f64 / n.max(1) as f64
}

#[test]
fn cs_length_sets_the_mean_critical_section() {
    for len in [5.0, 40.0] {
        let text = gen_text(&[
            "-n",
            "100k",
            "--nesting",
            "1",
            "--cs-length",
            &len.to_string(),
            "--seed",
            "3",
        ]);
        let got = mean_cs_length(&text);
        assert!(
            (got - len).abs() / len < 0.25,
            "--cs-length {len}: mean {got}"
        );
    }
}

#[test]
fn bad_options_are_usage_errors() {
    for args in [
        vec!["gen", "--profile", "nope"],
        vec!["gen", "-n", "10X"],
        vec!["gen", "--vars", "0"],
        vec!["gen", "--threads", "0"],
        vec!["gen", "--locked-share", "1.5"],
        vec!["gen", "--cs-length", "0.5"],
        vec!["gen", "--locations", "0"],
        vec!["gen", "--format", "rapid"],
    ] {
        let out = cprace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            err.contains("expected")
                || err.contains("possible values")
                || err.contains("invalid value"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn closing_the_pipe_early_ends_generation_quietly() {
    let mut child = Command::new(crate::common::cli::BIN)
        .args(["gen", "-n", "1G", "--format", "std"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 4096];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(head.starts_with(b"T0|"));
}

#[test]
fn help_reads_like_a_manual() {
    let out = cprace(&["gen", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for p in Config::PROFILES {
        assert!(help.contains(p), "profile {p} missing from help");
    }
    assert!(
        help.contains("Examples:")
            && help.contains("--locked-share")
            && help.contains("--cs-length")
    );
}

#[test]
fn rapidbin_output_reads_back_as_the_std_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    for profile in ["bench", "arrays", "ftpserver"] {
        let common = [
            "--profile",
            profile,
            "--volatiles",
            "0",
            "-n",
            "4000",
            "--seed",
            "3",
        ];
        let run = |extra: &[&str]| gen_bytes(&[&common[..], extra].concat());
        let (bin, std) = (p("t.bin"), p("t.std"));
        run(&["--format", "rapidbin", "-o", &bin]);
        let text = run(&["--format", "std"]);
        // With its side file, the RapidBin trace is the same trace, names
        // and all.
        let out = cprace(&["convert", &bin, "--to", "std", "-o", &std]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&std).unwrap(), text, "{profile}");
        // Through a pipe (no side file): the same events, numbered names.
        let piped = run(&["--format", "rapidbin"]);
        assert_eq!(piped.len(), 18 + 8 * 4000, "{profile}");
        assert_eq!(std::fs::read(&bin).unwrap(), piped, "{profile}");
    }
}

#[test]
fn rapidbin_output_refuses_what_the_format_cannot_hold() {
    for (args, says) in [
        (&["--profile", "small"][..], "volatile"),
        (
            &["--threads", "2000", "--volatiles", "0"][..],
            "1024 threads",
        ),
        (
            &["--locations", "100000", "--volatiles", "0"][..],
            "locations",
        ),
    ] {
        let mut a = vec!["gen", "-n", "100", "--format", "rapidbin"];
        a.extend_from_slice(args);
        let out = cprace(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: no partial output");
    }
}

#[test]
fn written_files_follow_the_umask_like_any_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference");
    std::fs::File::create(&reference).unwrap();
    let want = std::fs::metadata(&reference).unwrap().permissions().mode() & 0o777;
    let t = dir.path().join("t.std");
    let out = cprace(&["gen", "-n", "100", "-o", t.to_str().unwrap()]);
    assert!(out.status.success());
    let got = std::fs::metadata(&t).unwrap().permissions().mode() & 0o777;
    assert_eq!(got, want, "not a temporary file's 0600");
}
