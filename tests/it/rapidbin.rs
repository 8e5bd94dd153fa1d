//! RapidBin: round trips through `convert --to rapidbin` lose nothing, the
//! format's limits are refused with file and line, and malformed or truncated
//! binary input exits 2 with a clear error.

use crate::common;

use std::path::Path;

use common::cli::{cprace, output, with_stdin};
use cprace::tools::generate::{Config, trace};
use cprace::trace::rapid_bin::{self, side_path};
use cprace::trace::{Format, Trace, csv_format, load};
use proptest::prelude::*;

fn csv_of(t: &Trace) -> Vec<u8> {
    let mut out = Vec::new();
    csv_format::write(t, &mut out).unwrap();
    out
}

/// Write `t` as RapidBin (and its side file) to `path`, through the library.
fn write_bin(t: &Trace, path: &Path) {
    let mut bytes = Vec::new();
    rapid_bin::write(t, &mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::write(side_path(path), rapid_bin::side_json(t)).unwrap();
}

fn config(seed: u64, events: u64, threads: u32) -> Config {
    Config {
        events,
        threads,
        seed,
        volatiles: 0,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// CSV -> RapidBin (+ side file) -> CSV gives back the same bytes and the
    /// same events; without the side file the ids are still the same.
    #[test]
    fn round_trip_loses_nothing(seed in 0u64..1_000_000, events in 1u64..400, threads in 1u32..9) {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("t.csv");
        std::fs::write(&text, csv_of(&trace(&config(seed, events, threads)))).unwrap();
        let original = load(&text, None).unwrap();
        let bin = dir.path().join("t.bin");
        write_bin(&original, &bin);
        let back = load(&bin, None).unwrap();
        prop_assert_eq!(&back.events, &original.events);
        prop_assert_eq!(csv_of(&back), csv_of(&original));
        prop_assert_eq!(&back.stats, &original.stats);
        // Numbers only: same ids, numbered names.
        std::fs::remove_file(side_path(&bin)).unwrap();
        let bare = load(&bin, Some(Format::RapidBin)).unwrap();
        prop_assert_eq!(&bare.events, &original.events);
        prop_assert!(bare.names.threads.iter().all(|n| n.starts_with('T')));
    }
}

#[test]
fn cli_round_trip_and_same_races() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let src = d("g.std");
    let made = output(&[
        "gen",
        "-n",
        "20k",
        "--volatiles",
        "0",
        "--format",
        "std",
        "-o",
        &src,
    ]);
    assert!(made.status.success());
    let (code, _, err) = cprace(&["convert", &src, "--to", "rapidbin", "-o", &d("g.bin")]);
    assert_eq!(code, 0, "{err}");
    assert!(Path::new(&d("g.bin.names.json")).is_file());
    // 18-byte header, then 8 bytes per event.
    let events = load(Path::new(&src), None).unwrap().len();
    assert_eq!(
        std::fs::metadata(d("g.bin")).unwrap().len(),
        18 + 8 * events as u64
    );
    let (_, want, _) = cprace(&["convert", &src, "--to", "std"]);
    let (_, got, _) = cprace(&["convert", &d("g.bin"), "--to", "std"]);
    assert_eq!(got, want);
    for rel in ["hb", "wcp"] {
        // CSV: every race, and no timings (which differ from run to run).
        let (c1, a, _) = cprace(&["analyze", &src, "--relation", rel, "--format", "csv"]);
        let (c2, b, _) = cprace(&["analyze", &d("g.bin"), "--relation", rel, "--format", "csv"]);
        assert_eq!((c1, a), (c2, b), "{rel}");
    }
    // From standard input there is no side file: numbered names, same shape.
    let bin = std::fs::read(d("g.bin")).unwrap();
    let out = with_stdin(&["stats", "-", "--format", "json"], &bin);
    let (_, plain, _) = cprace(&["stats", &src, "--format", "json"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), plain);
}

#[test]
fn numbered_names_without_side_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.bin");
    // Thread 3 writes V42 at location 7 holding L5, then thread 0 forks 9.
    let word = |t: u64, op: u64, deco: u64, loc: u64| t | op << 10 | deco << 14 | loc << 48;
    let mut bytes = vec![0, 10, 0, 0, 0, 6, 0, 0, 0, 43, 0, 0, 0, 0, 0, 0, 0, 4];
    for w in [
        word(3, 0, 5, 1),
        word(3, 3, 42, 7),
        word(3, 1, 5, 1),
        word(0, 4, 9, 0),
    ] {
        bytes.extend(w.to_be_bytes());
    }
    std::fs::write(&p, bytes).unwrap();
    let (code, out, err) = cprace(&["convert", p.to_str().unwrap(), "--to", "std"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "T3|acq(L5)|1\nT3|w(V42)|7\nT3|rel(L5)|1\nT0|fork(T9)|0\n"
    );
}

/// Run `stats` on `bytes` saved as a file; check exit 2, one error line
/// naming the file and containing `expect`.
fn refused(bytes: &[u8], side: Option<&str>, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.bin");
    std::fs::write(&p, bytes).unwrap();
    if let Some(s) = side {
        std::fs::write(side_path(&p), s).unwrap();
    }
    let p = p.to_string_lossy().into_owned();
    let out = output(&["stats", &p]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&p), "{err}");
    for e in expect {
        assert!(err.contains(e), "expected `{e}` in {err}");
    }
}

fn header(threads: i16, events: i64) -> Vec<u8> {
    let mut h = threads.to_be_bytes().to_vec();
    h.extend(1i32.to_be_bytes());
    h.extend(1i32.to_be_bytes());
    h.extend(events.to_be_bytes());
    h
}

fn with_events(threads: i16, n: i64, words: &[u64]) -> Vec<u8> {
    let mut b = header(threads, n);
    for w in words {
        b.extend(w.to_be_bytes());
    }
    b
}

#[test]
fn malformed_binary_input_is_refused_clearly() {
    let w = |t: u64, op: u64, deco: u64| t | op << 10 | deco << 14;
    refused(
        &header(2, 1)[..10],
        None,
        &["header is 10 bytes", "expected 18"],
    );
    let mut negative = header(2, 0);
    negative[2..6].copy_from_slice(&(-1i32).to_be_bytes());
    refused(&negative, None, &["negative count", "locks -1"]);
    refused(
        &with_events(2, 3, &[w(0, 3, 1)]),
        None,
        &["ends after 1 events", "truncated"],
    );
    let mut cut = with_events(2, 2, &[w(0, 3, 1), w(1, 2, 1)]);
    cut.truncate(cut.len() - 3);
    refused(&cut, None, &["ends inside event 1", "truncated"]);
    refused(
        &with_events(2, 1, &[w(0, 3, 1), w(1, 3, 1)]),
        None,
        &["event 1", "more events than the header's 1"],
    );
    refused(
        &with_events(2, 1, &[w(0, 9, 1)]),
        None,
        &["event 0", "`branch` (code 9)"],
    );
    refused(
        &with_events(2, 1, &[w(0, 12, 1)]),
        None,
        &["unknown operation code 12"],
    );
    refused(
        &with_events(2, 1, &[w(0, 3, 1) | 1 << 63]),
        None,
        &["sign bit"],
    );
    refused(
        &with_events(2, 1, &[w(0, 1, 4)]),
        None,
        &["event 0", "release of lock `L4`"],
    );
    let side = r#"{"cprace_rapidbin_names":1,"threads":["main"],"locks":[],"variables":["x"],"locations":[""]}"#;
    refused(
        &with_events(2, 2, &[w(0, 3, 0), w(1, 3, 0)]),
        Some(side),
        &["event 1", "thread id 1 is not in the side file"],
    );
    refused(
        &with_events(2, 1, &[w(0, 3, 0)]),
        Some("{not json"),
        &["bad.bin.names.json", "not a RapidBin name table"],
    );
}

#[test]
fn convert_refuses_what_rapidbin_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.bin").to_string_lossy().into_owned();
    let case = |name: &str, text: String, expect: &[&str]| {
        let p = dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(&p, text).unwrap();
        let (code, stdout, err) = cprace(&["convert", &p, "--to", "rapidbin", "-o", &out]);
        assert_eq!(code, 2, "{err}");
        assert!(stdout.is_empty());
        assert!(!Path::new(&out).exists(), "no partial output");
        for e in expect {
            assert!(err.contains(e), "expected `{e}` in {err}");
        }
    };
    case(
        "vol.std",
        "T1|w(x)|a\n\n# a comment\nT1|vw(v)|b\n".into(),
        &["vol.std:4:", "volatile access `vw(v)`"],
    );
    let threads: String = (0..1025).map(|i| format!("T{i}|w(x)|\n")).collect();
    case(
        "threads.std",
        threads,
        &["threads.std:1025:", "thread `T1024`", "at most 1024"],
    );
    let locs: String = (0..32768).map(|i| format!("T1|w(x)|L{i}\n")).collect();
    case(
        "locs.std",
        locs,
        &["locs.std:32768:", "location `L32767`", "at most 32767"],
    );
    let (code, _, err) = cprace(&["convert", "data/formats/example.std", "--to", "rapidbin"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs -o"), "{err}");
}

#[test]
fn an_existing_output_is_replaced_only_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.bin");
    std::fs::write(&out, b"keep").unwrap();
    let bad = dir.path().join("bad.std");
    std::fs::write(&bad, "T1|vw(v)|\n").unwrap();
    let (code, _, _) = cprace(&[
        "convert",
        bad.to_str().unwrap(),
        "--to",
        "rapidbin",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn compressed_rapidbin_is_read() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, csv_of(&trace(&config(7, 300, 4)))).unwrap();
    let t = load(&csv, None).unwrap();
    let mut bin = Vec::new();
    rapid_bin::write(&t, &mut bin).unwrap();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&bin).unwrap();
    let gz = dir.path().join("t.bin.gz");
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    std::fs::write(side_path(&gz), rapid_bin::side_json(&t)).unwrap();
    let back = load(&gz, None).unwrap();
    assert_eq!(back.events, t.events);
    assert_eq!(csv_of(&back), csv_of(&t));
}
