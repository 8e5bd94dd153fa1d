//! `cprace record --from-events` on corrupted event files: every run either
//! fails with exit 2 and an error naming the file and the byte offset, or
//! succeeds with a trace that `cprace analyze` loads; and no run allocates
//! beyond what the files' sizes justify (each conversion runs under a
//! limit on its address space, so an allocation sized by a corrupt count
//! fails the run).
//!
//! The event files are those of real runs (programs of tests/programs built
//! with `cprace cc gcc`/`g++`, run with CPRACE_RECORD_DIR set); the
//! mutations are drawn from a fixed seed, so every run of the test tries the
//! same ones: bits flipped, files cut short, words overwritten with large
//! counts, sizes, lengths and ids, stretches of words duplicated, headers
//! zeroed, and thread files renamed to large thread ids.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::cli::BIN as CPRACE;
use crate::common::recorded::run;

/// Address space each conversion may use. The debug build's threads
/// reserve stacks and malloc arenas, real use is a few MB on these files.
const LIMIT_BYTES: u64 = 512 << 20;
/// Seconds of CPU a conversion may use: a corrupt count that makes `record`
/// loop over it (a range of terabytes) fails the test instead of hanging it.
const CPU_SECONDS: u64 = 20;
/// Mutations per program.
const MUTATIONS: usize = 90;
/// Bytes of trace an accepted mutation may write (the originals write a
/// few KB): more is output driven by a corrupt count.
const MAX_TRACE: u64 = 64 << 20;

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Builds tests/programs/`file` with `cprace cc` and runs it with its
/// event files kept in `dir/NAME.events`; returns that directory.
fn events_of(dir: &Path, file: &str) -> PathBuf {
    let (name, ext) = file.rsplit_once('.').unwrap();
    let prog = dir.join(name);
    let mut cc = Command::new(CPRACE);
    if ext == "cpp" {
        cc.args(["cc", "g++", "-O1", "-g", "-std=gnu++17"]);
    } else {
        cc.args(["cc", "gcc", "-O1", "-g"]);
    }
    let out = run(cc
        .arg(programs().join(file))
        .arg("-o")
        .arg(&prog)
        .arg("-pthread"));
    assert!(
        out.status.success(),
        "cprace cc {file}: {}",
        text(&out.stderr)
    );
    let events = dir.join(format!("{name}.events"));
    std::fs::create_dir(&events).unwrap();
    let out = run(Command::new(&prog).env("CPRACE_RECORD_DIR", &events));
    assert!(
        out.status.code().is_some(),
        "{file} ended by a signal: {}",
        text(&out.stderr)
    );
    // Reading the run puts each thread's tail (the chunk it was writing)
    // at the end of its `.bin`: the files mutated below are then whole.
    let out = run(Command::new(CPRACE)
        .args(["record", "--from-events"])
        .arg(&events)
        .arg("-o")
        .arg(dir.join(format!("{name}.settled.cpt"))));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read_dir(&events).unwrap().all(|e| !e
            .unwrap()
            .path()
            .to_string_lossy()
            .ends_with(".tail")),
        "tails left after reading {}",
        events.display()
    );
    events
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The files of an events directory: (name, bytes).
type Files = Vec<(String, Vec<u8>)>;

fn read_dir(dir: &Path) -> Files {
    let mut files: Files = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn write_dir(dir: &Path, files: &Files) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir(dir).unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap())
}

fn set_word(b: &mut [u8], i: usize, w: u64) {
    b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
}

/// Words of `b` up to its last nonzero one (what the thread committed; the
/// rest of a file is the zero fill of its mapping).
fn used_words(b: &[u8]) -> usize {
    let n = b.len() / 8;
    (0..n).rev().find(|&i| word(b, i) != 0).map_or(0, |i| i + 1)
}

/// Values that a corrupt word may hold where a count, a size, a length, an
/// id or an address belongs.
const LARGE: [u64; 12] = [
    u64::MAX,
    1 << 63,
    1 << 47,
    (1 << 47) - 1,
    1 << 40,
    (1 << 40) - 1,
    1 << 32,
    u32::MAX as u64,
    (1 << 24) - 1,
    1 << 24,
    1 << 30,
    0x7fff_ffff_fff0,
];

/// One mutation of the thread files of `files`, described.
fn mutate(files: &mut Files, rng: &mut Rng) -> String {
    let threads: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].0.ends_with(".bin"))
        .collect();
    let f = threads[rng.below(threads.len())];
    let name = files[f].0.clone();
    let b = &mut files[f].1;
    let used = used_words(b).max(1);
    let at = rng.below(used);
    match rng.below(9) {
        0 | 1 => {
            let bit = rng.below(64);
            let w = word(b, at);
            set_word(b, at, w ^ 1 << bit);
            format!("{name}: bit {bit} of word {at} flipped")
        }
        2 => {
            let cut = rng.below(used * 8 + 1);
            b.truncate(cut);
            format!("{name}: cut to {cut} bytes")
        }
        3 => {
            // A large value in the low bits, the word's tag kept: a large
            // node id, seq, address, kind, flags or payload count.
            let v = LARGE[rng.below(LARGE.len())];
            let w = word(b, at);
            set_word(b, at, (w & 0xf << 60) | (v & !(0xf << 60)));
            format!("{name}: word {at} = tag {} | {v:#x}", w >> 60)
        }
        4 | 5 => {
            // A whole payload word (a size, a thread id, a length, a pc).
            let v = LARGE[rng.below(LARGE.len())];
            set_word(b, at, v);
            format!("{name}: word {at} = {v:#x}")
        }
        6 => {
            // A stretch of words repeated in place (stack nodes defined
            // twice, events doubled, a record split).
            let len = 1 + rng.below(16);
            let from = rng.below(used);
            let end = (from + len).min(used);
            let copy = b[from * 8..end * 8].to_vec();
            let to = rng.below(used + 1) * 8;
            let tail = b.split_off(to);
            b.extend_from_slice(&copy);
            b.extend_from_slice(&tail);
            format!("{name}: words {from}..{end} copied to byte {to}")
        }
        7 => {
            let n = 1 + rng.below(8);
            for i in 0..n.min(b.len() / 8) {
                set_word(b, i, 0);
            }
            format!("{name}: first {n} words zeroed")
        }
        _ => {
            // The file renamed to a large thread id (or beyond the largest).
            let tid = [(1u64 << 24) - 1, 1 << 24, 1 << 40, 4_000_000][rng.below(4)];
            files[f].0 = format!("t{tid}.bin");
            format!("{name} renamed to t{tid}.bin")
        }
    }
}

/// `cprace ARGS` under the address-space and CPU limits.
fn limited(args: &[&str]) -> Output {
    run(Command::new("prlimit")
        .arg(format!("--as={LIMIT_BYTES}"))
        .arg(format!("--cpu={CPU_SECONDS}"))
        .arg("--")
        .arg(CPRACE)
        .args(args))
}

/// What is wrong with converting `events` (after `what` was done to it).
fn check(events: &Path, out: &Path, what: &str) -> Option<String> {
    let _ = std::fs::remove_file(out);
    let rec = limited(&[
        "record",
        "--from-events",
        events.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&rec.stderr);
    match rec.status.code() {
        Some(2) => {
            // The file (a path inside the directory) and where in it: a
            // byte offset, or for a file name that is no thread's, the name.
            let names_file = err.contains(&format!("{}/", events.display()));
            let names_offset = err.contains(" at byte ") || err.contains(".bin is not");
            if err.contains("out of memory") || !names_file || !names_offset {
                return Some(format!("{what}: exit 2 without file and offset: {err}"));
            }
            if out.exists() {
                return Some(format!("{what}: exit 2 left a trace behind"));
            }
            None
        }
        Some(0) => {
            let size = std::fs::metadata(out).map_or(0, |m| m.len());
            if size > MAX_TRACE {
                return Some(format!("{what}: a {size}-byte trace"));
            }
            let an = limited(&[
                "analyze",
                out.to_str().unwrap(),
                "--relation",
                "hb",
                "--format",
                "summary",
            ]);
            match an.status.code() {
                Some(0 | 1) => None,
                c => Some(format!(
                    "{what}: exit 0, but analyze exits {c:?}: {}",
                    text(&an.stderr)
                )),
            }
        }
        c => Some(format!("{what}: record exits {c:?}: {err}")),
    }
}

/// The mutated directories of `events` that fail, with why.
fn failures(events: &Path, seed: u64, mutations: usize) -> Vec<String> {
    let original = read_dir(events);
    let work = events.with_extension("mutated");
    let mut rng = Rng(seed);
    let mut bad = Vec::new();
    for i in 0..mutations {
        // STD text and cprace's binary format, in turn.
        let out = events.with_extension(if i % 2 == 0 { "std" } else { "cpt" });
        let mut files = original.clone();
        let what = format!("mutation {i} of {}: {}", events.display(), {
            mutate(&mut files, &mut rng)
        });
        write_dir(&work, &files);
        if let Some(why) = check(&work, &out, &what) {
            bad.push(why);
        }
    }
    bad
}

#[test]
fn corrupt_event_files_fail_cleanly_or_give_a_loadable_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    // Locks and a condition variable from std::thread; heap blocks, frees
    // and ranges; atomics beside plain accesses.
    let programs = [
        "condvar_norace.cpp",
        "memcpy_race.c",
        "realloc_race.c",
        "mixed_atomic_race.c",
    ];
    for (k, file) in programs.iter().enumerate() {
        let events = events_of(dir.path(), file);
        // The unmutated files convert and load.
        assert_eq!(check(&events, &dir.path().join("original.std"), file), None);
        bad.extend(failures(
            &events,
            0x9e37_79b9_7f4a_7c15 ^ k as u64,
            MUTATIONS,
        ));
    }
    assert!(
        bad.is_empty(),
        "{} of {} mutations failed:\n{}",
        bad.len(),
        MUTATIONS * programs.len(),
        bad.join("\n")
    );
}

/// The word index of the size word of the first long event of `kind` in
/// `b` (its fourth payload word).
fn size_word_of(b: &[u8], kind: u8) -> Option<usize> {
    let mut i = 0;
    while i < used_words(b) {
        let w = word(b, i);
        match w >> 60 {
            13 | 14 => {
                let count = ((w >> 24) & 0xf) as usize;
                if w as u8 == kind {
                    return Some(i + 4);
                }
                i += 1 + count;
            }
            12 => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// `events` with the size word of its first event of `kind` set to `size`.
fn with_size(events: &Path, kind: u8, size: u64) -> PathBuf {
    let mut files = read_dir(events);
    let (f, at) = files
        .iter()
        .enumerate()
        .find_map(|(f, (name, b))| {
            let at = name.ends_with(".bin").then(|| size_word_of(b, kind))??;
            Some((f, at))
        })
        .unwrap_or_else(|| panic!("no event of kind {kind} in {}", events.display()));
    set_word(&mut files[f].1, at, size);
    let dir = events.with_extension(format!("size{kind}"));
    write_dir(&dir, &files);
    dir
}

/// A range event's size word made 16 MiB (once accepted, it lowered to two
/// million accesses, and larger ones ran out of memory): refused, naming
/// the file and offset, since the runtime splits ranges into events of at
/// most 4 KiB.
#[test]
fn a_range_longer_than_the_runtime_writes_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let events = events_of(dir.path(), "memcpy_race.c");
    for size in [1 << 24, 1 << 40] {
        let bad = with_size(&events, 8, size);
        let out = limited(&[
            "record",
            "--from-events",
            bad.to_str().unwrap(),
            "-o",
            dir.path().join("o.std").to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{}/t", bad.display()))
                && err.contains(" at byte ")
                && err.contains(&format!("a range of {size} bytes")),
            "{err}"
        );
    }
}

/// A free's size word made 1 TiB (it once lowered to 2^37 writes and ran
/// out of memory): the free writes only the block the recording saw
/// allocated there, so the trace is the original's.
#[test]
fn a_free_writes_at_most_the_block_allocated_there() {
    let dir = tempfile::tempdir().unwrap();
    let events = events_of(dir.path(), "realloc_race.c");
    let bad = with_size(&events, 7, 1 << 40);
    let convert = |from: &Path, to: &str| {
        let to = dir.path().join(to);
        let out = limited(&[
            "record",
            "--from-events",
            from.to_str().unwrap(),
            "-o",
            to.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        std::fs::read_to_string(to).unwrap()
    };
    assert_eq!(convert(&bad, "bad.std"), convert(&events, "good.std"));
}
