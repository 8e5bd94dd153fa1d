//! Quick fuzzing of the loaders: random byte strings and mutated valid traces,
//! through detection and each format. Loading must return a Result (never
//! panic), and what loads must be internally consistent.

use std::panic::{AssertUnwindSafe, catch_unwind};

use cprace::tools::generate::{Config, Rng, trace};
use cprace::trace::load::stream_reader;
use cprace::trace::model::TargetKind;
use cprace::trace::{Format, Trace, csv_format, load_str, rapid_csv, std_format};

/// Iterations scale: `CPRACE_FUZZ_SCALE=50 cargo test --test it fuzz_load::` fuzzes longer.
fn scale() -> u64 {
    std::env::var("CPRACE_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

const FORMATS: [Option<Format>; 4] = [
    None,
    Some(Format::Csv),
    Some(Format::Std),
    Some(Format::RapidCsv),
];

/// Load `input` every way; panic (with `what`) on a loader panic or an
/// inconsistent result.
fn check(input: &[u8], what: &str) {
    for fmt in FORMATS {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut events = Vec::new();
            let res = stream_reader("fuzz", input, fmt, |id, ev| {
                assert_eq!(id as usize, events.len());
                events.push(*ev);
            });
            (res, events)
        }));
        let (res, events) = match r {
            Ok(x) => x,
            Err(_) => panic!(
                "loader panicked on {what}, format {fmt:?}, input {:?}",
                String::from_utf8_lossy(input)
            ),
        };
        match res {
            Ok((names, _, _)) => {
                for (i, e) in events.iter().enumerate() {
                    let table = match e.op.target_kind() {
                        TargetKind::Variable => names.vars.len(),
                        TargetKind::Lock => names.locks.len(),
                        TargetKind::Thread => names.threads.len(),
                    };
                    assert!(
                        (e.thread as usize) < names.threads.len()
                            && (e.target as usize) < table
                            && (e.loc as usize) < names.locs.len(),
                        "{what}, format {fmt:?}: event {i} has ids out of range"
                    );
                }
            }
            Err(e) => {
                let lines = input.split(|&b| b == b'\n').count() as u64;
                assert!(
                    e.line <= lines,
                    "{what}, format {fmt:?}: error line {} beyond {lines} lines: {e}",
                    e.line
                );
                assert!(!e.problem.is_empty() && e.file == "fuzz", "{what}: {e}");
            }
        }
        if let Ok(s) = std::str::from_utf8(input) {
            let direct = catch_unwind(|| load_str(s, fmt).map(|t| t.events.len()));
            assert!(
                direct.is_ok(),
                "load_str panicked on {what}, format {fmt:?}"
            );
        }
    }
}

const PIECES: &[&[u8]] = &[
    b"T0",
    b"T1",
    b"x",
    b"m",
    b"|",
    b"(",
    b")",
    b",",
    b"\"",
    b"\n",
    b"\r\n",
    b"#",
    b" ",
    b"r",
    b"w",
    b"acq",
    b"rel",
    b"fork",
    b"join",
    b"vr",
    b"vw",
    b"thread,op,target,loc\n",
    b"\xff",
    b"\0",
    b"\xEF\xBB\xBF",
    b"\xc3",
    b"loc",
    b"1",
];

#[test]
fn random_inputs_never_panic() {
    for seed in 0..4000 * scale() {
        let mut rng = Rng::new(seed);
        let mut input = Vec::new();
        let n = rng.below(60);
        for _ in 0..n {
            if rng.chance(0.15) {
                input.push(rng.next_u64() as u8);
            } else {
                input.extend_from_slice(PIECES[rng.below(PIECES.len() as u64) as usize]);
            }
        }
        check(&input, &format!("random input seed {seed}"));
    }
}

fn texts(t: &Trace) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for w in [csv_format::write, std_format::write, rapid_csv::write] {
        let mut buf = Vec::new();
        w(t, &mut buf).expect("generated names are writable");
        out.push(buf);
    }
    out
}

/// Apply a few random edits: flip a byte, insert a piece, delete or
/// duplicate a span, swap two lines.
fn mutate(rng: &mut Rng, text: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = text.len().max(1) as u64;
        let at = rng.below(len) as usize;
        match rng.below(5) {
            0 if !text.is_empty() => text[at] = rng.next_u64() as u8,
            1 => {
                let p = PIECES[rng.below(PIECES.len() as u64) as usize];
                let at = at.min(text.len());
                text.splice(at..at, p.iter().copied());
            }
            2 if !text.is_empty() => {
                let end = (at + 1 + rng.below(20) as usize).min(text.len());
                text.drain(at..end);
            }
            3 if !text.is_empty() => {
                let end = (at + 1 + rng.below(40) as usize).min(text.len());
                let span: Vec<u8> = text[at..end].to_vec();
                text.splice(at..at, span);
            }
            _ => {
                let mut lines: Vec<Vec<u8>> =
                    text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if lines.len() > 2 {
                    let a = rng.below(lines.len() as u64) as usize;
                    let b = rng.below(lines.len() as u64) as usize;
                    lines.swap(a, b);
                }
                *text = lines.join(&b'\n');
            }
        }
    }
}

#[test]
fn mutated_traces_never_panic() {
    for seed in 0..1500 * scale() {
        let cfg = Config {
            events: 10 + seed % 30,
            threads: 2 + (seed % 3) as u32,
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        let mut rng = Rng::new(seed ^ 0xABCD);
        for (k, text) in texts(&t).into_iter().enumerate() {
            // The unmutated text loads in its own format.
            let fmt = [Format::Csv, Format::Std, Format::RapidCsv][k];
            let direct = stream_reader("fuzz", &text[..], Some(fmt), |_, _| {});
            assert!(
                direct.is_ok(),
                "seed {seed}: {fmt:?} writer output does not load: {:?}",
                direct.err()
            );
            let mut m = text.clone();
            mutate(&mut rng, &mut m);
            check(&m, &format!("seed {seed}, mutated {fmt:?}"));
        }
    }
}
