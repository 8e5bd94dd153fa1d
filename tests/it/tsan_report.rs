//! The text report of a recorded program's race carries every field
//! ThreadSanitizer prints (tests/record_c/tsan_*.c): each program is built
//! once with `CC -fsanitize=thread` and once with `cprace cc CC` (gcc, and
//! clang when installed), both are run, and every field of TSan's report
//! (access kinds and sizes, every frame of both stacks, the location's kind,
//! name and size, the allocation stack, the thread creation stack, the
//! mutexes and where they were taken) must appear in cprace's. Where TSan
//! is missing the comparison is skipped with a message; the cprace-only
//! checks (a 12-deep stack with an inlined frame, stack and TLS locations, a
//! predicted race's explanation and witness) always run.

use std::path::Path;
use std::process::Command;

use crate::common::recorded::{analyze, compilers, line_of, record, run, source};

/// `name`.c built with `cprace cc cc`, recorded into a binary trace, and
/// `cprace analyze TRACE ARGS` (text): the report.
fn cprace_report(dir: &Path, name: &str, cc: &str, args: &[&str]) -> String {
    analyze(&record(dir, name, cc), args)
}

/// `name`.c built with `cc -fsanitize=thread` and run: TSan's reports, or
/// None (with a message) where TSan cannot build or run here.
fn tsan_report(dir: &Path, name: &str, cc: &str) -> Option<String> {
    let prog = dir.join(format!("{name}-{cc}-tsan"));
    let built = run(Command::new(cc)
        .args(["-O1", "-g", "-fsanitize=thread"])
        .arg(source(name))
        .arg("-o")
        .arg(&prog)
        .arg("-lpthread"));
    if !built.status.success() {
        eprintln!(
            "SKIPPED: {cc} -fsanitize=thread cannot build here (libtsan missing?): {}",
            String::from_utf8_lossy(&built.stderr)
        );
        return None;
    }
    let out = run(&mut Command::new(&prog));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if stderr.contains("FATAL: ThreadSanitizer") || !stderr.contains("WARNING: ThreadSanitizer") {
        eprintln!("SKIPPED: {cc}'s ThreadSanitizer cannot run here: {stderr}");
        return None;
    }
    Some(stderr)
}

/// A frame of a user's source file: (function, `file.c:LINE`), the column
/// clang's TSan adds left out.
type Frame = (String, String);

/// One section of a report block: its header line and its user frames.
#[derive(Debug)]
struct Section {
    header: String,
    frames: Vec<Frame>,
}

/// The blocks of a report (between `==================` lines), each as
/// its sections; only frames in `name`.c count (TSan's interceptors'
/// frames, `malloc` or `pthread_create`, have no counterpart).
fn blocks(text: &str, name: &str) -> Vec<Vec<Section>> {
    let file = format!("{name}.c:");
    let mut out: Vec<Vec<Section>> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "==================" {
            inside = !inside;
            if inside {
                out.push(Vec::new());
            }
            continue;
        }
        let Some(block) = out.last_mut().filter(|_| inside) else {
            continue;
        };
        if let Some(frame) = line.strip_prefix("    #") {
            let words: Vec<&str> = frame.split_whitespace().collect();
            let (Some(function), Some(at)) = (words.get(1), words.get(2)) else {
                continue;
            };
            let base = at.rsplit('/').next().unwrap();
            let Some(line_no) = base.strip_prefix(&file) else {
                continue;
            };
            let line_no = line_no.split(':').next().unwrap();
            if let Some(s) = block.last_mut() {
                s.frames
                    .push((function.to_string(), format!("{file}{line_no}")));
            }
        } else if line.starts_with("  ") && !line.starts_with("   ") {
            block.push(Section {
                header: line.trim().to_string(),
                frames: Vec::new(),
            });
        }
    }
    out
}

/// An access section's kind (`read`, `atomic write`, ...), size and number
/// of mutexes held, from `[Previous ]KIND of size N at ADDR by ...`.
fn access(header: &str) -> Option<(String, u64, usize)> {
    if header.starts_with("Location") {
        return None;
    }
    let (kind, rest) = header.split_once(" of size ")?;
    let kind = kind.trim_start_matches("Previous ").to_lowercase();
    let size = rest.split_whitespace().next()?.parse().ok()?;
    let mutexes = rest
        .split_once("(mutexes: ")
        .map_or(0, |(_, m)| m.split(')').next().unwrap().split(", ").count());
    Some((kind, size, mutexes))
}

fn sections<'a>(block: &'a [Section], prefix: &str) -> Vec<&'a Section> {
    block
        .iter()
        .filter(|s| s.header.starts_with(prefix))
        .collect()
}

/// Every field of TSan's report `tsan` appears in cprace's `ours` (both
/// the reports of program `name`).
fn check_fields(name: &str, tsan: &str, ours: &str) {
    let t_blocks = blocks(tsan, name);
    let o_blocks = blocks(ours, name);
    assert!(!t_blocks.is_empty(), "no TSan report:\n{tsan}");
    let ctx = || format!("TSan:\n{tsan}\ncprace:\n{ours}");
    for t in &t_blocks {
        // The accesses: the two runs may have met them in either order, so
        // TSan's "Previous" may be cprace's first.
        let accesses = |b: &[Section]| {
            let mut v: Vec<((String, u64, usize), Vec<Frame>)> = b
                .iter()
                .filter_map(|s| access(&s.header).map(|a| (a, s.frames.clone())))
                .collect();
            v.sort();
            v
        };
        let want = accesses(t);
        assert_eq!(want.len(), 2, "{}", ctx());
        let o = o_blocks
            .iter()
            .find(|o| accesses(o) == want)
            .unwrap_or_else(|| {
                panic!(
                    "no cprace block with accesses (kind, size, mutexes, frames) {want:?}\n{}",
                    ctx()
                )
            });
        // The location: its description up to the address, and the
        // allocation stack.
        for l in sections(t, "Location is ") {
            let what = l.header.split(" at 0x").next().unwrap();
            let what = what.trim_end_matches('.');
            let mine = sections(o, "Location is ");
            assert!(
                mine.iter()
                    .any(|m| m.header.starts_with(what) && m.frames == l.frames),
                "location `{what}` with frames {:?} missing\n{}",
                l.frames,
                ctx()
            );
        }
        // Mutexes: as many, each taken where TSan says it was created (its
        // first lock).
        let (tm, om) = (sections(t, "Mutex M"), sections(o, "Mutex M"));
        assert_eq!(tm.len(), om.len(), "mutex count\n{}", ctx());
        for (a, b) in tm.iter().zip(&om) {
            let id = |h: &str| h.split_whitespace().nth(1).unwrap().to_string();
            assert_eq!(id(&a.header), id(&b.header), "{}", ctx());
            assert_eq!(a.frames, b.frames, "{}", ctx());
        }
        // Threads: each with its creation stack.
        for th in sections(t, "Thread T") {
            let id = th.header.split_whitespace().nth(1).unwrap();
            assert!(
                sections(o, "Thread ").iter().any(|m| {
                    m.header.split_whitespace().nth(1) == Some(id)
                        && m.header.contains("created by main thread")
                        && m.frames == th.frames
                }),
                "Thread {id} created at {:?} missing\n{}",
                th.frames,
                ctx()
            );
        }
        // SUMMARY: the first access's innermost frame.
        let summary = |text: &str, prefix: &str| -> Option<Frame> {
            let rest = text.lines().find_map(|l| l.strip_prefix(prefix))?;
            let (at, function) = rest.rsplit_once(" in ")?;
            let base = at.rsplit('/').next()?;
            let mut parts = base.split(':');
            Some((
                function.to_string(),
                format!("{}:{}", parts.next()?, parts.next()?),
            ))
        };
        let first_top = |b: &[Section]| {
            b.iter()
                .find(|s| access(&s.header).is_some())
                .and_then(|s| s.frames.first().cloned())
        };
        assert!(summary(tsan, "SUMMARY: ThreadSanitizer: data race ").is_some());
        assert_eq!(
            summary(ours, "SUMMARY: data race "),
            first_top(o),
            "{}",
            ctx()
        );
    }
}

fn compare_with_tsan(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for cc in compilers() {
        let Some(tsan) = tsan_report(dir.path(), name, cc) else {
            continue;
        };
        let ours = cprace_report(dir.path(), name, cc, &["--relation", "hb"]);
        check_fields(name, &tsan, &ours);
        compared += 1;
    }
    if compared == 0 {
        eprintln!("SKIPPED: {name}: no compiler with a working ThreadSanitizer");
    }
}

#[test]
fn global_race_has_every_field_tsan_prints() {
    compare_with_tsan("tsan_global");
}

#[test]
fn heap_race_has_every_field_tsan_prints() {
    compare_with_tsan("tsan_heap");
}

#[test]
fn race_under_two_mutexes_has_every_field_tsan_prints() {
    compare_with_tsan("tsan_mutexes");
}

#[test]
fn race_under_an_rwlock_read_side_has_every_field_tsan_prints() {
    compare_with_tsan("tsan_rwlock");
}

/// What cprace itself must say, TSan or not: kinds, sizes, the location
/// and its allocation line, the creation line, held mutexes.
#[test]
fn heap_and_mutex_fields_without_tsan() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let heap = cprace_report(dir.path(), "tsan_heap", cc, &["--relation", "hb"]);
        let alloc = line_of("tsan_heap", "ALLOC", 0);
        let create = line_of("tsan_heap", "CREATE", 0);
        // The run may meet the write or the read first: either is
        // "Previous", so the kinds are looked for in either case.
        let lower = heap.to_lowercase();
        for want in ["write of size 4 at 0x", "read of size 4 at 0x"] {
            assert!(lower.contains(want), "{cc}: `{want}` missing:\n{heap}");
        }
        for want in [
            "Location is heap block of size 4 at 0x".into(),
            format!("/{alloc} "),
            format!("/{create} "),
            "Thread T1 (tid=".into(),
            "created by main thread T0 at:".into(),
        ] {
            assert!(heap.contains(&want), "{cc}: `{want}` missing:\n{heap}");
        }
        let m = cprace_report(dir.path(), "tsan_mutexes", cc, &["--relation", "hb"]);
        assert!(
            m.contains("(mutexes: write M0, write M1), event "),
            "{cc}:\n{m}"
        );
        for (id, marker) in [(0, "LOCK-OUTER"), (1, "LOCK-INNER")] {
            let block = m
                .split(&format!("  Mutex M{id} ("))
                .nth(1)
                .unwrap_or_else(|| panic!("{cc}: no Mutex M{id}:\n{m}"));
            let first_frame = block.lines().nth(1).unwrap();
            assert!(
                first_frame.contains(&format!("/{} ", line_of("tsan_mutexes", marker, 0))),
                "{cc}: M{id} not acquired at {marker}:\n{m}"
            );
        }
        assert!(
            m.contains("SUMMARY: data race ") && m.contains("SUMMARY: 1 racy event"),
            "{m}"
        );
    }
}

/// A race 12 calls deep under an always-inlined helper: all of f12 ... f1
/// in order, each at its line, under the inlined helper's own frame.
#[test]
fn twelve_deep_stack_with_an_inlined_frame() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let out = cprace_report(dir.path(), "tsan_deep", cc, &["--relation", "hb"]);
        let b = blocks(&out, "tsan_deep");
        assert_eq!(b.len(), 1, "{cc}:\n{out}");
        let stacks: Vec<&Section> = b[0]
            .iter()
            .filter(|s| access(&s.header).is_some())
            .collect();
        assert_eq!(stacks.len(), 2, "{cc}:\n{out}");
        for s in stacks {
            let mut want = vec![("bump".to_string(), line_of("tsan_deep", "RACE-INLINED", 0))];
            want.push(("f12".into(), line_of("tsan_deep", "void f12(", 0)));
            for k in (1..=11).rev() {
                want.push((
                    format!("f{k}"),
                    line_of("tsan_deep", &format!("STEP(f{k},"), 0),
                ));
            }
            assert_eq!(s.frames[..13], want[..], "{cc}: {}\n{out}", s.header);
            let caller = &s.frames[13].0;
            assert!(caller == "main" || caller == "worker", "{cc}:\n{out}");
        }
    }
}

/// A thread writing main's stack variable, and main reading the thread's
/// TLS variable: "Location is stack of main thread" and "TLS of thread T1";
/// the thread's name (pthread_setname_np) follows its number.
#[test]
fn stack_and_tls_locations() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let out = cprace_report(dir.path(), "tsan_stack", cc, &["--relation", "hb"]);
        let b = blocks(&out, "tsan_stack");
        let find = |marker: &str| {
            let at = line_of("tsan_stack", marker, 0);
            b.iter()
                .find(|b| {
                    b.iter()
                        .any(|s| s.frames.first().is_some_and(|f| f.1 == at))
                })
                .unwrap_or_else(|| panic!("{cc}: no race at {at}:\n{out}"))
        };
        let location = |b: &Vec<Section>| {
            sections(b, "Location is ")
                .first()
                .map(|s| s.header.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            location(find("RACE-STACK")),
            "Location is stack of main thread T0.",
            "{cc}:\n{out}"
        );
        assert_eq!(
            location(find("RACE-TLS")),
            "Location is TLS of thread T1.",
            "{cc}:\n{out}"
        );
        // The name the thread gave itself, and its kernel id (a number
        // other than the process's).
        let line = out
            .lines()
            .find(|l| l.starts_with("  Thread T1 'worker' (tid="))
            .unwrap_or_else(|| panic!("{cc}: no named thread line:\n{out}"));
        let tid: u32 = line["  Thread T1 'worker' (tid=".len()..]
            .split(',')
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{cc}: {line}"));
        assert!(tid > 0, "{line}");
        assert!(
            line.ends_with(", running) created by main thread T0 at:"),
            "{cc}: {line}"
        );
    }
}

/// PolarCoord (CP paper, Figure 2): HB orders the increments in the run;
/// cp's report says so, names the release -> acquire of `lock` at their
/// lines, and with --witness tells the reordering thread by thread.
#[test]
fn predicted_race_names_what_ordered_it_and_its_witness() {
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let out = cprace_report(
            dir.path(),
            "polarcoord",
            cc,
            &["--relation", "cp", "--witness"],
        );
        let unlock = line_of("polarcoord", "pthread_mutex_unlock(&lock)", 0);
        let lock = line_of("polarcoord", "pthread_mutex_lock(&lock)", 1);
        for want in [
            "Predicted (not observed unordered in this run)".to_string(),
            format!("1. thread T1 releases mutex `lock` at {unlock} in get_radius (event "),
            format!("then thread T2 acquires it at {lock} in get_angle (event "),
            "  witness: [".into(),
            "1. main thread T0 runs to ".into(),
            format!(
                "then thread T1 at {} in get_radius and thread T2 at {} in get_angle are both enabled",
                line_of("polarcoord", "INCREMENT-1", 0),
                line_of("polarcoord", "INCREMENT-2", 0)
            ),
            "Location is global 'count' of size 8 at 0x".into(),
        ] {
            assert!(out.contains(&want), "{cc}: `{want}` missing:\n{out}");
        }
        // A race HB reports too is said to be observed.
        let out = cprace_report(dir.path(), "tsan_heap", cc, &["--relation", "wcp"]);
        assert!(
            out.contains("Observed: happens-before leaves the accesses unordered"),
            "{cc}:\n{out}"
        );
        assert!(!out.contains("Predicted"), "{cc}:\n{out}");
    }
}
