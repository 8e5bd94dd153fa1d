//! The output contract of `analyze`: the grouped text report, JSON, JSON
//! Lines, CSV with provenance, notes on stderr, and the same races whether an
//! engine streams them to disk or collects them.

use crate::common;

use common::cli::cprace;
use serde_json::Value;

/// Two location pairs: (a:1, b:1) races three times (x, then x, then z),
/// (a:3, b:2) once on y; the first pair occurs first.
const TRACE: &str = "\
T1|w(x)|a.java:1
T2|w(x)|b.java:1
T2|r(x)|b.java:1
T1|w(y)|a.java:3
T2|r(y)|b.java:2
T1|w(z)|a.java:1
T2|w(z)|b.java:1
";

fn write_trace(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn text_groups_races_by_location_pair_in_order_of_first_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, "t.std", TRACE);
    let (code, out, err) = cprace(&["analyze", &p, "--relation", "hb"]);
    assert_eq!(code, 1, "{err}");
    let blocks: Vec<&str> = out
        .split("==================\n")
        .filter(|b| b.starts_with("WARNING"))
        .collect();
    assert_eq!(blocks.len(), 2, "{out}");
    assert_eq!(out.matches("==================").count(), 4, "{out}");
    assert_eq!(
        blocks[0],
        "WARNING: data race on `x` (write-write)\n  write by thread T2 (event 1) at b.java:1\n  \
         previous write by thread T1 (event 0) at a.java:1\n  3 racy events with these locations \
         (first shown); kinds: write-write, write-read; threads: T1, T2; also on other variables\n"
    );
    assert!(
        blocks[1].starts_with("WARNING: data race on `y` (write-read)"),
        "{out}"
    );
    assert!(
        blocks[1].contains("  1 racy event with these locations"),
        "{out}"
    );
    assert!(
        out.contains("SUMMARY: 4 racy events, 3 racy variables, 2 location pairs (hb vc, window none, 7 events)\n"),
        "{out}"
    );
    // Plain text: no JSON in the counters.
    let summary = &out[out.find("SUMMARY").unwrap()..];
    assert!(!summary.contains(['{', '"']), "{summary}");
    assert!(summary.contains("  seconds: total "), "{summary}");

    // --all: one block per racy event; --max-reports caps the blocks.
    let (_, out, _) = cprace(&["analyze", &p, "--relation", "hb", "--all"]);
    assert_eq!(out.matches("WARNING").count(), 4, "{out}");
    assert!(!out.contains("with these locations"), "{out}");
    let (_, out, _) = cprace(&["analyze", &p, "--relation", "hb", "--max-reports", "1"]);
    assert_eq!(out.matches("WARNING").count(), 1, "{out}");
    assert!(
        out.contains("1 more report not shown (--max-reports 1"),
        "{out}"
    );
    assert!(out.contains("SUMMARY: 4 racy events"), "{out}");
    let (_, out, _) = cprace(&[
        "analyze",
        &p,
        "--relation",
        "hb",
        "--all",
        "--max-reports",
        "3",
    ]);
    assert_eq!(out.matches("WARNING").count(), 3, "{out}");
    assert!(out.contains("1 more racy event not shown"), "{out}");
}

#[test]
fn summary_uses_singulars_and_cp_notes_only_with_races() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, "one.std", "T1|w(x)|a:1\nT2|w(x)|b:1\n");
    let (code, out, err) = cprace(&["analyze", &p, "--relation", "cp"]);
    assert_eq!(code, 1);
    assert!(out.contains("SUMMARY: 1 racy event, 1 racy variable, 1 location pair (cp datalog, window 1000, 2 events)"), "{out}");
    assert!(
        err.contains(
            "cprace: note: all racy events reported; CP's soundness theorem covers the first race"
        ),
        "{err}"
    );
    assert!(!out.contains("note:"), "notes go to stderr: {out}");
    let q = write_trace(&dir, "none.std", "T1|w(x)|a:1\nT1|w(x)|b:1\n");
    let (code, out, err) = cprace(&["analyze", &q, "--relation", "cp"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("SUMMARY: 0 racy events, 0 racy variables, 0 location pairs"),
        "{out}"
    );
    assert!(err.is_empty(), "no race, no soundness note: {err}");
    // Notes reach stderr in every format.
    for format in ["csv", "jsonl", "json", "sarif", "summary"] {
        let (_, out, err) = cprace(&["analyze", &p, "--relation", "lockset", "--format", format]);
        assert!(err.contains("cprace: note: UNSOUND"), "{format}: {err}");
        assert!(!out.contains("note: UNSOUND"), "{format}: {out}");
    }
}

#[test]
fn csv_and_jsonl_carry_provenance_and_match_json() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, "t.std", TRACE);
    for (relation, engine, window) in [
        ("hb", "vc", ""),
        ("hb", "epoch", ""),
        ("hb", "lockset", ""),
        ("wcp", "vc", ""),
        ("lockset", "eraser", ""),
        ("cp", "datalog", "1000"),
        ("hb", "datalog", ""),
    ] {
        let args = |f: &'static str| {
            vec![
                "analyze",
                p.as_str(),
                "--relation",
                relation,
                "--engine",
                engine,
                "--format",
                f,
            ]
        };
        let (_, json, _) = cprace(&args("json"));
        let json: Value = serde_json::from_str(&json).unwrap();
        let races = json["races"].as_array().unwrap();
        let (_, csv, _) = cprace(&args("csv"));
        let mut rows = csv.lines();
        assert_eq!(
            rows.next().unwrap(),
            "first,second,variable,kind,first_thread,first_op,first_loc,second_thread,second_op,second_loc,relation,engine,window,max_distance"
        );
        let rows: Vec<&str> = rows.collect();
        assert_eq!(rows.len(), races.len(), "{relation} {engine}: {csv}");
        let (_, jsonl, _) = cprace(&args("jsonl"));
        let lines: Vec<Value> = jsonl
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), races.len());
        for ((race, row), line) in races.iter().zip(&rows).zip(&lines) {
            let s = |k: &str| race[k].as_str().unwrap().to_string();
            let want = [
                race["first"].to_string(),
                race["second"].to_string(),
                s("variable"),
                s("kind"),
                s("first_thread"),
                s("first_op"),
                s("first_loc"),
                s("second_thread"),
                s("second_op"),
                s("second_loc"),
                relation.to_string(),
                engine.to_string(),
                window.to_string(),
                String::new(),
            ]
            .join(",");
            assert_eq!(*row, want, "{relation} {engine}");
            assert_eq!(line["relation"], relation);
            assert_eq!(line["engine"], engine);
            for k in [
                "first",
                "second",
                "variable",
                "kind",
                "first_op",
                "second_op",
            ] {
                assert_eq!(line[k], race[k], "{relation} {engine} {k}");
            }
            assert!(matches!(s("first_op").as_str(), "r" | "w"));
        }
    }
}

/// A name holding a control character is rejected at load (see
/// bad_input); the error shows it escaped, never raw on the terminal.
#[test]
fn names_with_control_characters_are_rejected_and_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(
        &dir,
        "t.csv",
        "thread,op,target,loc\nT1,w,\"x\u{1b}[31m\",\"a\rb\"\nT2,w,\"x\u{1b}[31m\",c\n",
    );
    for args in [
        &["analyze", &p, "--relation", "hb"][..],
        &["query", &p, "--relation", "hb", "--pair", "0,1"],
    ] {
        let (code, out, err) = cprace(args);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty(), "{out}");
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
        assert!(
            err.contains(&format!("{p}:2: location `a\\rb`")) && err.contains("x\\u{1b}[31m"),
            "{err}"
        );
    }
}

#[test]
fn every_numeric_option_takes_suffixes_and_relations_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, "t.std", TRACE);
    for args in [
        &["analyze", p.as_str(), "--relation", "cp", "--window", "10k"][..],
        &[
            "analyze",
            p.as_str(),
            "--relation",
            "CP",
            "--window",
            "1M",
            "--max-reports",
            "1k",
        ],
        &["analyze", p.as_str(), "--relation", "Wcp"],
        &["query", p.as_str(), "--relation", "HB", "--window", "2k"],
        &["query", p.as_str(), "--relation", "cp", "--pair", "0,1"],
    ] {
        let (code, _, err) = cprace(args);
        assert!(code == 0 || code == 1, "{args:?}: {err}");
    }
    let (code, out, err) = cprace(&[
        "analyze",
        &p,
        "--relation",
        "cp",
        "--window",
        "10k",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["window"],
        10_000
    );
    let (code, _, err) = cprace(&[
        "gen",
        "-n",
        "2k",
        "--threads",
        "1k",
        "--locks",
        "1k",
        "--vars",
        "2k",
        "--seed",
        "1k",
        "--locations",
        "1k",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cprace(&["analyze", &p, "--relation", "cp", "--window", "10x"]);
    assert_eq!(code, 2);
    assert!(err.contains("k, M, G suffixes"), "{err}");
    // query offers only the relations it answers for.
    let (_, help, _) = cprace(&["query", "--help"]);
    let values =
        &help[help.find("--relation <RELATION>").unwrap()..help.find("--window <WINDOW>").unwrap()];
    assert!(
        values.contains("- wcp:") && !values.contains("- po") && !values.contains("- lockset"),
        "{values}"
    );
    let (code, _, _) = cprace(&["query", &p, "--relation", "po"]);
    assert_eq!(code, 2);
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, err) = cprace(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            out.len() > 1000 && out.contains("analyze") && out.contains("relation"),
            "{shell}"
        );
    }
    // The bash script at least parses, where bash is installed.
    let (_, script, _) = cprace(&["completions", "bash"]);
    // zsh and fish check syntax with -n too, where installed.
    let dir = tempfile::tempdir().unwrap();
    for shell in ["zsh", "fish"] {
        let (_, script, _) = cprace(&["completions", shell]);
        let f = dir.path().join(shell);
        std::fs::write(&f, script).unwrap();
        if let Ok(o) = std::process::Command::new(shell).arg("-n").arg(&f).output() {
            assert!(
                o.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    if let Ok(o) = std::process::Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
    {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (code, man, _) = cprace(&["man"]);
    assert_eq!(code, 0);
    assert!(
        man.starts_with(".ie") || man.contains(".TH cprace"),
        "{}",
        &man[..200.min(man.len())]
    );
    assert!(man.contains("completions") && man.contains("analyze"));
}

#[test]
fn help_texts_name_papers_not_files() {
    for cmd in ["analyze", "sweep", "query"] {
        let (_, help, _) = cprace(&[cmd, "--help"]);
        for stale in [
            "wcp-2017",
            "causally-precedes-2012",
            "once the WCP engine is built in",
        ] {
            assert!(!help.contains(stale), "{cmd} --help: {stale}");
        }
    }
    let (_, help, _) = cprace(&["analyze", "--help"]);
    assert!(
        help.contains("POPL 2012") && help.contains("PLDI 2017"),
        "{help}"
    );
}

/// `--witness` gives witnesses to the races a format shows: the first of
/// each location pair in text (the note counts those), the first N racy
/// events with `--all --max-reports N`, every race in JSON; a shown race's
/// witness is the one JSON gives it.
#[test]
fn witnesses_go_to_the_races_the_report_shows() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::traces::generated(dir.path(), 400, 3);
    let t = trace.to_str().unwrap();
    let (_, json, _) = cprace(&[
        "analyze",
        t,
        "--relation",
        "shb",
        "--witness",
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let races = json["races"].as_array().unwrap();
    let pairs = json["location_pairs"].as_u64().unwrap() as usize;
    assert!(
        races.len() > pairs + 5,
        "{} races, {pairs} pairs",
        races.len()
    );
    assert!(races.iter().all(|r| r.get("witness").is_some()));

    let (code, text, err) = cprace(&["analyze", t, "--relation", "shb", "--witness"]);
    assert_eq!(code, 1);
    let note = format!("witnesses: [0-9]+ of {pairs} races shown have");
    assert!(regex_like(&err, &note), "{err}");
    // Each printed witness is JSON's for that race.
    let mut printed = 0;
    for block in text
        .split("==================")
        .filter(|b| b.contains("WARNING"))
    {
        let ids: Vec<u64> = block
            .lines()
            .filter_map(|l| l.split("(event ").nth(1))
            .map(|s| s.split(')').next().unwrap().parse().unwrap())
            .collect();
        let (second, first) = (ids[0], ids[1]);
        let race = races
            .iter()
            .find(|r| r["first"] == first && r["second"] == second)
            .expect("a shown race is a race of the JSON report");
        let line = block
            .lines()
            .find(|l| l.trim_start().starts_with("witness:"))
            .unwrap();
        let shown = line.trim_start().trim_start_matches("witness: ");
        match race["witness"].as_array() {
            None => assert_eq!(shown, "none found"),
            Some(w) => {
                assert!(
                    shown.ends_with(&format!(
                        "({} event{})",
                        w.len(),
                        if w.len() == 1 { "" } else { "s" }
                    )),
                    "{shown}"
                );
                printed += 1;
            }
        }
    }
    assert!(printed > 0);

    let (_, _, err) = cprace(&[
        "analyze",
        t,
        "--relation",
        "shb",
        "--witness",
        "--all",
        "--max-reports",
        "5",
    ]);
    assert!(
        regex_like(&err, "witnesses: [0-9]+ of 5 races shown have"),
        "{err}"
    );
    let (_, _, err) = cprace(&["analyze", t, "--relation", "shb", "--witness", "--all"]);
    let all = format!("witnesses: [0-9]+ of {} races have", races.len());
    assert!(regex_like(&err, &all), "{err}");
}

/// Whether `text` has a line matching `pattern`, where `[0-9]+` stands for
/// a number and everything else is literal.
fn regex_like(text: &str, pattern: &str) -> bool {
    let (head, tail) = pattern.split_once("[0-9]+").unwrap_or((pattern, ""));
    text.lines().any(|l| {
        l.find(head).is_some_and(|i| {
            let rest = &l[i + head.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0 || !pattern.contains("[0-9]+")) && rest[digits..].starts_with(tail)
        })
    })
}
