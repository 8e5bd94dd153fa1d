//! Compressed traces (gzip, zstd, xz) load exactly like the plain text, from
//! files and standard input, recognised by content whatever the file name;
//! truncated or corrupt streams exit 2 naming the file.

use crate::common;

use std::io::Write;

use common::cli::{output, with_stdin};

#[derive(Clone, Copy, Debug)]
enum Kind {
    Gzip,
    Zstd,
    Xz,
}

const KINDS: [Kind; 3] = [Kind::Gzip, Kind::Zstd, Kind::Xz];

fn compress(kind: Kind, data: &[u8]) -> Vec<u8> {
    match kind {
        Kind::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Kind::Zstd => zstd::encode_all(data, 1).unwrap(),
        Kind::Xz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
    }
}

/// A generated trace in `format` (csv or std), big enough for several blocks.
fn generated(format: &str) -> Vec<u8> {
    let out = output(&["gen", "-n", "60k", "--seed", "5", "--format", format]);
    assert!(out.status.success());
    out.stdout
}

fn write(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, data).unwrap();
    p.to_string_lossy().into_owned()
}

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = output(args);
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn compressed_files_give_the_plain_answers() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["csv", "std"] {
        let text = generated(format);
        let plain = write(&dir, &format!("plain.{format}"), &text);
        let want_stats = stdout_of(&["stats", &plain, "--format", "json"]);
        // CSV: every race, and no timings (which differ from run to run).
        let want_races = stdout_of(&["analyze", &plain, "--relation", "hb", "--format", "csv"]);
        for kind in KINDS {
            // A misleading name: detection looks at the bytes only.
            let p = write(&dir, &format!("{kind:?}.{format}"), &compress(kind, &text));
            assert_eq!(
                stdout_of(&["stats", &p, "--format", "json"]),
                want_stats,
                "{kind:?} {format}"
            );
            let races = stdout_of(&["analyze", &p, "--relation", "hb", "--format", "csv"]);
            assert_eq!(races, want_races, "{kind:?} {format}");
        }
    }
}

#[test]
fn compressed_stdin_gives_the_plain_answers() {
    let text = std::fs::read("data/formats/example.std").unwrap();
    let want = with_stdin(&["stats", "-", "--format", "json"], &text);
    assert!(want.status.success());
    for kind in KINDS {
        let got = with_stdin(&["stats", "-", "--format", "json"], &compress(kind, &text));
        assert!(
            got.status.success(),
            "{kind:?}: {}",
            String::from_utf8_lossy(&got.stderr)
        );
        assert_eq!(got.stdout, want.stdout, "{kind:?}");
    }
}

#[test]
fn compressed_rapid_csv_is_detected_after_decompression() {
    let text = std::fs::read("data/formats/example.rapid.csv").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = write(&dir, "plain", &text);
    let want = stdout_of(&["convert", &plain, "--to", "std"]);
    for kind in KINDS {
        let p = write(&dir, "trace", &compress(kind, &text));
        assert_eq!(stdout_of(&["convert", &p, "--to", "std"]), want, "{kind:?}");
    }
}

/// Check `out` is a clean failure: exit 2, nothing on stdout, one error line
/// containing every string of `expect`.
fn assert_fails(out: &std::process::Output, expect: &[&str], ctx: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{ctx}: {err}");
    assert!(out.stdout.is_empty(), "{ctx}");
    assert_eq!(err.trim_end().lines().count(), 1, "{ctx}: {err}");
    assert!(!err.contains("panicked"), "{ctx}: {err}");
    for e in expect {
        assert!(err.contains(e), "{ctx}: expected `{e}` in {err}");
    }
}

#[test]
fn truncated_streams_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated("std");
    for kind in KINDS {
        let full = compress(kind, &text);
        let name = format!("{kind:?}").to_lowercase();
        for cut in [full.len() / 2, full.len() - 3] {
            let p = write(&dir, "cut.trace", &full[..cut]);
            let out = output(&["analyze", &p, "--relation", "hb"]);
            assert_fails(&out, &[&p, &name, "truncated"], &format!("{kind:?} {cut}"));
        }
        // The same from standard input (small enough to be written whole).
        let small = compress(kind, &text[..8000]);
        let out = with_stdin(&["stats", "-"], &small[..small.len() - 2]);
        assert_fails(&out, &["<stdin>", &name], &format!("{kind:?} stdin"));
    }
}

#[test]
fn corrupt_streams_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated("csv");
    for kind in KINDS {
        let mut bad = compress(kind, &text);
        let mid = bad.len() / 2;
        for b in &mut bad[mid..mid + 32] {
            *b = b.wrapping_add(77);
        }
        let p = write(&dir, "bad.csv", &bad);
        let out = output(&["stats", &p]);
        let name = format!("{kind:?}").to_lowercase();
        assert_fails(&out, &[&p, &name], &format!("{kind:?}"));
        // Only the first bytes of a stream: cut inside its header.
        let magic = &compress(kind, b"")[..6];
        let p = write(&dir, "magic.csv", magic);
        assert_fails(&output(&["stats", &p]), &[&p, &name], &format!("{kind:?}"));
    }
}

/// Bytes after a complete stream that do not start another are trailing
/// data, said as such (with where they start), not a truncated file.
#[test]
fn trailing_data_after_the_stream_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated("std");
    for kind in KINDS {
        let mut data = compress(kind, &text);
        let end = data.len();
        data.extend_from_slice(b"junkjunk\n");
        let p = write(&dir, "trailing.std", &data);
        let out = output(&["stats", &p]);
        let name = format!("{kind:?}").to_lowercase();
        let at = format!("from byte {end} on");
        assert_fails(
            &out,
            &[&p, &name, "trailing data", &at],
            &format!("{kind:?}"),
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("truncated"),
            "{kind:?}"
        );
    }
}
