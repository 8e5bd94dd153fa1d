//! The three formats agree: the same trace written in cprace CSV, STD and RAPID
//! CSV loads to the same events and names and gives the same analysis, and
//! `convert` round trips are lossless.

use crate::common;

use std::path::Path;

use clap::ValueEnum;
use common::cli::output as cprace;
use cprace::race::{Options, analyze_path};
use cprace::relation::Relation;
use cprace::tools::generate::{self, Config, TextFormat};
use cprace::trace::{Event, Format, Op, Trace, csv_format, load, load_str, rapid_csv, std_format};
use serde_json::Value;

fn write_with(t: &Trace, w: fn(&Trace, &mut Vec<u8>) -> cprace::Result<()>) -> String {
    let mut buf = Vec::new();
    w(t, &mut buf).expect("writable names");
    String::from_utf8(buf).expect("UTF-8 output")
}

fn csv(t: &Trace) -> String {
    write_with(t, csv_format::write)
}
fn std_text(t: &Trace) -> String {
    write_with(t, std_format::write)
}
fn rapid(t: &Trace) -> String {
    write_with(t, rapid_csv::write)
}

fn without_locs(events: &[Event]) -> Vec<Event> {
    events.iter().map(|e| Event { loc: 0, ..*e }).collect()
}

fn table(t: &cprace::trace::model::Interner) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

/// `a` and `b` hold the same events and names; locations too unless `locs` is false.
fn assert_same(a: &Trace, b: &Trace, locs: bool, what: &str) {
    if locs {
        assert_eq!(a.events, b.events, "{what}: events differ");
        assert_eq!(
            table(&a.names.locs),
            table(&b.names.locs),
            "{what}: locations differ"
        );
    } else {
        assert_eq!(
            without_locs(&a.events),
            without_locs(&b.events),
            "{what}: events differ"
        );
    }
    assert_eq!(
        table(&a.names.threads),
        table(&b.names.threads),
        "{what}: threads differ"
    );
    assert_eq!(
        table(&a.names.locks),
        table(&b.names.locks),
        "{what}: locks differ"
    );
    assert_eq!(
        table(&a.names.vars),
        table(&b.names.vars),
        "{what}: variables differ"
    );
    assert_eq!(a.stats, b.stats, "{what}: load stats differ");
}

/// Load `text` with detection, checking it detects as `expect`.
fn detect_and_load(text: &str, expect: Format, what: &str) -> Trace {
    assert_eq!(
        cprace::trace::load::detect(text.as_bytes()),
        Some(expect),
        "{what}: detection"
    );
    load_str(text, None).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn configs() -> impl Iterator<Item = Config> {
    (0..400u64).map(|seed| {
        let mut c = Config {
            events: 20 + seed % 150,
            threads: 1 + (seed % 6) as u32,
            seed,
            ..Config::default()
        };
        c.locks = (seed % 4) as u32;
        c.max_nesting = 1 + (seed % 3) as u32;
        c.fork_join = seed % 3 != 0;
        c.volatiles = (seed % 2) as u32;
        c.p_out_of_order_release = 0.2;
        c.p_reentrant = 0.05;
        c
    })
}

#[test]
fn generated_traces_load_identically_from_all_formats() {
    for cfg in configs() {
        let what = format!(
            "seed {} ({} events, {} threads)",
            cfg.seed, cfg.events, cfg.threads
        );
        let t = generate::trace(&cfg);
        let from_csv = detect_and_load(&csv(&t), Format::Csv, &what);
        let from_std = detect_and_load(&std_text(&t), Format::Std, &what);
        let from_rapid = detect_and_load(&rapid(&t), Format::RapidCsv, &what);
        assert_same(&t, &from_csv, true, &format!("{what}: csv"));
        assert_same(&from_csv, &from_std, true, &format!("{what}: csv vs std"));
        assert_same(
            &from_csv,
            &from_rapid,
            false,
            &format!("{what}: csv vs rapid csv"),
        );
    }
}

/// Every cprace CSV trace shipped under `data/` (the paper figures too).
fn data_traces() -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "csv")
                && !p.to_string_lossy().ends_with(".rapid.csv")
            {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data"), &mut v);
    v.sort();
    v
}

#[test]
fn data_traces_load_identically_and_analyses_agree_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let traces = data_traces();
    assert!(!traces.is_empty());
    for path in traces {
        let what = path.display().to_string();
        let t = load(&path, None).unwrap_or_else(|e| panic!("{e}"));
        let s = std_text(&t);
        let r = rapid(&t);
        assert_same(
            &t,
            &detect_and_load(&s, Format::Std, &what),
            true,
            &format!("{what}: std"),
        );
        assert_same(
            &t,
            &detect_and_load(&r, Format::RapidCsv, &what),
            false,
            &format!("{what}: rapid csv"),
        );
        let sp = dir.path().join("t.std");
        let rp = dir.path().join("t.rapid.csv");
        std::fs::write(&sp, s).unwrap();
        std::fs::write(&rp, r).unwrap();
        for &rel in Relation::value_variants() {
            let c = analysis(&path, rel, true);
            assert_eq!(c, analysis(&sp, rel, true), "{what}, {rel:?}: csv vs std");
            assert_eq!(
                analysis(&path, rel, false),
                analysis(&rp, rel, false),
                "{what}, {rel:?}: csv vs rapid csv"
            );
        }
    }
}

#[test]
fn example_traces_agree() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/formats");
    let c = load(&dir.join("example.csv"), None).unwrap();
    let s = load(&dir.join("example.std"), None).unwrap();
    let r = load(&dir.join("example.rapid.csv"), None).unwrap();
    assert_same(&c, &s, true, "example csv vs std");
    assert_same(&c, &r, false, "example csv vs rapid csv");
    assert_eq!(c.len(), 15);
    assert_eq!(c.stats.reentrant_acquires, 1);
    // Headerless RAPID CSV names column i `T{i}`.
    let headerless: String = std::fs::read_to_string(dir.join("example.rapid.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.to_string() + "\n")
        .collect();
    let h = load_str(&headerless, None).unwrap();
    assert_eq!(table(&h.names.threads), ["T0", "worker", "T1"]);
    assert_eq!(h.len(), 15);
}

/// Remove wall-clock measurements (engines report them in `stats`): they
/// differ between runs, not between formats.
fn drop_timings(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| {
                !["second", "time", "elapsed", "_ms"]
                    .iter()
                    .any(|w| k.contains(w))
            });
            m.values_mut().for_each(drop_timings);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_timings),
        _ => {}
    }
}

/// The analysis JSON, with locations removed when `locs` is false (RAPID CSV has none).
fn analysis(path: &Path, relation: Relation, locs: bool) -> Value {
    let opts = Options {
        relation,
        engine: None,
        window: cprace::race::default_window(relation),
        max_distance: None,
        input_format: None,
        reporting: Default::default(),
        keep: cprace::report::Keep::Collect,
    };
    let (report, names) =
        analyze_path(path, &opts).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    let mut v = report.to_json(&names);
    drop_timings(&mut v);
    if !locs {
        if let Some(Value::Array(races)) = v.get_mut("races") {
            for r in races {
                if let Value::Object(m) = r {
                    m.retain(|k, _| !k.ends_with("_loc"));
                }
            }
        }
        if let Value::Object(m) = &mut v {
            m.remove("location_pairs");
        }
    }
    v
}

#[test]
fn analyses_agree_across_formats() {
    let dir = tempfile::tempdir().unwrap();
    for cfg in configs().step_by(10) {
        let t = generate::trace(&cfg);
        let paths: Vec<_> = [
            ("t.csv", csv(&t)),
            ("t.std", std_text(&t)),
            ("t.rapid.csv", rapid(&t)),
        ]
        .into_iter()
        .map(|(name, text)| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect();
        for &rel in Relation::value_variants() {
            let what = format!("seed {}, relation {rel:?}", cfg.seed);
            let c = analysis(&paths[0], rel, true);
            assert_eq!(c, analysis(&paths[1], rel, true), "{what}: csv vs std");
            assert_eq!(
                analysis(&paths[0], rel, false),
                analysis(&paths[2], rel, false),
                "{what}: csv vs rapid csv"
            );
        }
    }
}

#[test]
fn analyze_json_is_identical_for_the_example_in_every_format() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/formats");
    let json = |f: &str| -> Value {
        let p = dir.join(f);
        let out = cprace(&[
            "analyze",
            p.to_str().unwrap(),
            "--relation",
            "po",
            "--format",
            "json",
        ]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
        drop_timings(&mut v);
        v
    };
    let c = json("example.csv");
    assert_eq!(c, json("example.std"));
    assert!(
        !c["racy_events"].as_array().unwrap().is_empty(),
        "po sees the example's races"
    );
    let strip = |mut v: Value| {
        for r in v["races"].as_array_mut().unwrap() {
            r.as_object_mut()
                .unwrap()
                .retain(|k, _| !k.ends_with("_loc"));
        }
        v.as_object_mut().unwrap().remove("location_pairs");
        v
    };
    assert_eq!(strip(c), strip(json("example.rapid.csv")));
}

#[test]
fn csv_std_csv_round_trip_is_byte_identical() {
    for (i, p) in Config::PROFILES.iter().enumerate() {
        let mut cfg = Config::profile(p).unwrap();
        cfg.events = 3000;
        cfg.seed = i as u64;
        let mut original = Vec::new();
        generate::write(&cfg, TextFormat::Csv, &mut original).unwrap();
        let original = String::from_utf8(original).unwrap();
        let t = load_str(&original, None).unwrap();
        let std_version = std_text(&t);
        let mut std_generated = Vec::new();
        generate::write(&cfg, TextFormat::Std, &mut std_generated).unwrap();
        assert_eq!(
            std_version.as_bytes(),
            std_generated,
            "profile {p}: gen --format std differs from convert"
        );
        let back = csv(&load_str(&std_version, None).unwrap());
        assert!(
            back == original,
            "profile {p}: csv -> std -> csv changed the bytes"
        );
    }
}

#[test]
fn convert_round_trips_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
    let out = cprace(&[
        "gen",
        "--profile",
        "small",
        "-n",
        "5000",
        "--seed",
        "9",
        "-o",
        &d("a.csv"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cprace(&["convert", &d("a.csv"), "--to", "std", "-o", &d("a.std")]);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cprace(&["convert", &d("a.std"), "--to", "csv"]);
    assert!(out.status.success());
    assert!(
        out.stdout == std::fs::read(d("a.csv")).unwrap(),
        "csv -> std -> csv differs"
    );
    let a = load(Path::new(&d("a.csv")), None).unwrap();
    assert!(
        a.stats.reentrant_acquires > 0 && a.stats.out_of_nesting_releases > 0,
        "profile small has both"
    );
}

#[test]
fn reentrant_acquires_survive_conversion() {
    let text = "thread,op,target,loc\nT0,acq,m,1\nT0,acq,m,2\nT0,acq,n,3\nT0,acq,m,4\nT0,w,x,5\nT0,rel,m,6\nT0,rel,m,7\nT0,rel,m,8\nT0,rel,n,9\n";
    let t = load_str(text, None).unwrap();
    let ops: Vec<Op> = t.events.iter().map(|e| e.op).collect();
    use Op::*;
    assert_eq!(
        ops,
        [
            Acquire,
            ReentrantAcquire,
            Acquire,
            ReentrantAcquire,
            Write,
            ReentrantRelease,
            ReentrantRelease,
            Release,
            Release
        ]
    );
    assert_eq!((t.stats.reentrant_acquires, t.stats.max_nesting), (2, 2));
    // Releasing m while the inner n is held is out of nesting order: counted, accepted.
    assert_eq!(t.stats.out_of_nesting_releases, 1);
    let s = std_text(&t);
    let back = load_str(&s, None).unwrap();
    assert_same(&t, &back, true, "re-entrant via std");
    assert_eq!(csv(&back), text);
    let r = load_str(&rapid(&t), None).unwrap();
    assert_same(&t, &r, false, "re-entrant via rapid csv");
}

#[test]
fn awkward_names_survive_csv_and_std_refuses_them_cleanly() {
    let text = "thread,op,target,loc\n\"#T,0\",w,\"x \"\"quoted\"\"\",\"a.java:1, col 2\"\n\"#T,0\",r,y|z,loc|with|bars\n";
    let t = load_str(text, None).unwrap();
    assert_eq!(table(&t.names.threads), ["#T,0"]);
    assert_eq!(table(&t.names.vars), ["x \"quoted\"", "y|z"]);
    let back = load_str(&csv(&t), None).unwrap();
    assert_same(&t, &back, true, "awkward names via csv");
    assert_eq!(csv(&back), text);
    let err = std_format::write(&t, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be written in STD"), "{err}");
    // Through the binary: exit 2, nothing on stdout.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("awkward.csv");
    std::fs::write(&p, text).unwrap();
    let out = cprace(&["convert", p.to_str().unwrap(), "--to", "std"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be written in STD"));
}

#[test]
fn detection_and_forced_formats() {
    let std_line = "T0|w(x)|1\n";
    assert_eq!(
        cprace::trace::load::detect(b"# comment\n\nT0|w(x)|1\n"),
        Some(Format::Std)
    );
    assert_eq!(
        cprace::trace::load::detect(b"\xEF\xBB\xBFthread,op,target\n"),
        Some(Format::Csv)
    );
    assert_eq!(
        cprace::trace::load::detect(b"loc, Thread ,OP,target,extra\n"),
        Some(Format::Csv)
    );
    assert_eq!(
        cprace::trace::load::detect(b"w(x),\n"),
        Some(Format::RapidCsv)
    );
    assert_eq!(
        cprace::trace::load::detect(b"A,B\n,r(x)\n"),
        Some(Format::RapidCsv)
    );
    assert_eq!(cprace::trace::load::detect(b"hello world\n"), None);
    // Extra columns, any order, CRLF, comments, blank lines and spaces.
    let t = load_str(
        "# c\r\nextra,loc,target,op,thread\r\n\r\n1, L1 , x , w , T0 \r\n",
        None,
    )
    .unwrap();
    let s = load_str(std_line.replace("|1", "|L1").as_str(), None).unwrap();
    assert_same(&t, &s, true, "columns in any order");
    // A forced format wins over detection.
    assert!(load_str(std_line, Some(Format::Csv)).is_err());
    assert!(load_str(std_line, Some(Format::Std)).is_ok());
    // Rows may omit a trailing loc.
    let t = load_str("thread,op,target,loc\nT0,w,x\nT0,r,x,L\n", None).unwrap();
    assert_eq!((t.events[0].loc, t.names.loc(t.events[1].loc)), (0, "L"));
    // A header with no rows is an empty trace.
    assert!(load_str("thread,op,target\n", None).unwrap().is_empty());
}
