//! Bad input never panics: the binary exits with 2, prints nothing on stdout
//! and one error on stderr naming the file, the line, the offending text and
//! what was expected.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::cli::{output as cprace, with_stdin};

/// Write `content` to a file named `name` in a fresh directory.
fn file(name: &str, content: &[u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join(name);
    std::fs::write(&p, content).expect("write");
    (dir, p.to_string_lossy().into_owned())
}

/// Run `cprace stats FILE [extra..]` on `content`; check exit 2, empty stdout
/// and that stderr is one `cprace: error:` line naming the file (and `line`,
/// when given, as `FILE:LINE:`) and containing every string of `expect`.
fn bad(name: &str, content: &[u8], extra: &[&str], line: Option<u64>, expect: &[&str]) -> String {
    let (_dir, path) = file(name, content);
    let mut args = vec!["stats", path.as_str()];
    args.extend_from_slice(extra);
    let out = cprace(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let ctx = format!(
        "input {name} {:?}: stderr {err}",
        String::from_utf8_lossy(&content[..content.len().min(200)])
    );
    assert_eq!(out.status.code(), Some(2), "{ctx}");
    assert!(
        out.stdout.is_empty(),
        "{ctx}: stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(err.starts_with("cprace: error: "), "{ctx}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {ctx}"
    );
    assert!(!err.contains("panicked"), "{ctx}");
    match line {
        Some(l) => assert!(
            err.contains(&format!("{path}:{l}: ")),
            "expected `{path}:{l}:`: {ctx}"
        ),
        None => assert!(err.contains(&path), "{ctx}"),
    }
    for e in expect {
        assert!(err.contains(e), "expected `{e}`: {ctx}");
    }
    err
}

const HEADER: &str = "thread,op,target,loc\n";

#[test]
fn empty_and_whitespace_files() {
    bad("empty.csv", b"", &[], None, &["empty input", "expected"]);
    bad(
        "blank.std",
        b"  \n\t\n \r\n",
        &[],
        None,
        &["empty input", "expected"],
    );
    bad(
        "comments.std",
        b"# only\n# comments\n",
        &[],
        None,
        &["no events", "expected"],
    );
    // More than 1 MiB of comments before the first event: detection gives up
    // (it never buffers more), an explicit format streams through.
    let mut long_comments =
        "# comment comment comment comment comment comment comment\n".repeat(20_000);
    long_comments.push_str("T0|w(x)|1\n");
    bad(
        "comments-first.std",
        long_comments.as_bytes(),
        &[],
        None,
        &["cannot detect", "--input-format"],
    );
    let (_dir, path) = file("comments-first.std", long_comments.as_bytes());
    let out = cprace(&["stats", &path, "--input-format", "std", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With an explicit format too.
    bad(
        "empty.std",
        b"",
        &["--input-format", "std"],
        None,
        &["empty input"],
    );
}

#[test]
fn binary_garbage() {
    let mut garbage = Vec::new();
    let mut x = 0x1234_5678_u32;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage.push((x >> 24) as u8);
    }
    let err = bad("garbage.bin", &garbage, &[], None, &["expected"]);
    // Control characters are escaped: the message stays one printable line.
    assert!(!err.trim_end().chars().any(|c| c.is_control()), "{err}");
    for f in ["csv", "std", "rapid-csv"] {
        bad(
            "garbage.bin",
            &garbage,
            &["--input-format", f],
            None,
            &["expected"],
        );
    }
    // Garbage after a valid start is reported at its line.
    let mut text = b"T0|w(x)|1\nT1|r(x)|2\n".to_vec();
    text.extend_from_slice(&garbage);
    bad("tail.std", &text, &[], Some(3), &["expected"]);
}

#[test]
fn non_utf8_in_a_field_each_format() {
    bad(
        "bad.csv",
        b"thread,op,target,loc\nT0,w,x,1\nT1,r,x\xff\xfe,2\n",
        &[],
        Some(3),
        &["not valid UTF-8", "expected UTF-8", "T1,r,x"],
    );
    bad(
        "bad.std",
        b"T0|w(x)|1\nT1|r(x)|f\xc3(\n",
        &[],
        Some(2),
        &["not valid UTF-8", "T1|r(x)|f"],
    );
    bad(
        "bad.rapid.csv",
        b"T0,T1\nw(x),\n,r(\xe2\x82)\n",
        &[],
        Some(3),
        &["not valid UTF-8", ",r("],
    );
    // A bad thread name in the first line, before detection could decide.
    bad(
        "first.std",
        b"T\xff0|w(x)|1\n",
        &[],
        Some(1),
        &["not valid UTF-8"],
    );
}

#[test]
fn csv_header_and_rows() {
    bad(
        "nohdr.csv",
        b"thread,op\nT0,w\n",
        &[],
        Some(1),
        &[
            "lacks the column `target`",
            "expected a header",
            "thread,op",
        ],
    );
    bad(
        "nohdr2.csv",
        b"thread,kind,what\nT0,w,x\n",
        &[],
        Some(1),
        &["lacks the columns `op`, `target`"],
    );
    bad(
        "forced.csv",
        b"T0,w,x,1\n",
        &["--input-format", "csv"],
        Some(1),
        &["lacks the columns", "T0,w,x,1"],
    );
    bad(
        "short.csv",
        b"thread,op,target,loc\nT0,w,x,1\nT1,r\n",
        &[],
        Some(3),
        &["row has 2 columns", "expected at least 3", "T1,r"],
    );
    // A row may end before an optional trailing `loc`, not before `target`.
    bad(
        "short2.csv",
        b"loc,thread,op,target\n1,T0,w\n",
        &[],
        Some(2),
        &["row has 3 columns", "expected at least 4"],
    );
    bad(
        "quote.csv",
        b"thread,op,target\nT0,w,\"x\n",
        &[],
        Some(2),
        &["unterminated quoted field", "expected a closing"],
    );
    bad(
        "quote2.csv",
        b"thread,op,target\nT0,w,\"x\"y\n",
        &[],
        Some(2),
        &["text after a closing quote"],
    );
}

#[test]
fn unknown_op_and_empty_names() {
    let csv = format!("{HEADER}T0,w,x,1\nT0,write,x,2\n");
    bad(
        "op.csv",
        csv.as_bytes(),
        &[],
        Some(3),
        &[
            "unknown op `write`",
            "expected one of r, w, acq, rel, fork, join, vr, vw",
            "T0,write,x,2",
        ],
    );
    bad(
        "op.std",
        b"T0|w(x)|1\n\nT0|lock(m)|2\n",
        &[],
        Some(3),
        &["unknown op `lock`", "expected one of"],
    );
    bad(
        "op.rapid.csv",
        b"T0,T1\nw(x),\n,rd(x)\n",
        &[],
        Some(3),
        &["unknown op `rd`"],
    );
    bad(
        "op2.std",
        b"T0|(x)|1\n",
        &[],
        Some(1),
        &["empty op", "expected one of"],
    );
    let csv = format!("{HEADER}T0,w,x,1\nT0,r,,2\n");
    bad(
        "target.csv",
        csv.as_bytes(),
        &[],
        Some(3),
        &["empty target for `r`", "expected a variable name"],
    );
    bad(
        "target.std",
        b"T0|acq( )|1\n",
        &[],
        Some(1),
        &["empty target for `acq`", "expected a lock name"],
    );
    bad(
        "target.rapid.csv",
        b"T0\nfork()\n",
        &[],
        Some(2),
        &["empty target for `fork`", "expected a thread name"],
    );
    bad(
        "thread.std",
        b"T0|w(x)|1\n|w(x)|2\n",
        &[],
        Some(2),
        &["empty thread name"],
    );
}

#[test]
fn unbalanced_parentheses_and_missing_bar() {
    bad(
        "paren1.std",
        b"T0|w(x)|1\nT0|r(x|2\n",
        &[],
        Some(2),
        &[
            "unbalanced parentheses",
            "expected `op(target)`",
            "T0|r(x|2",
        ],
    );
    bad(
        "paren2.std",
        b"T0|r(x))|2\n",
        &[],
        Some(1),
        &["unbalanced parentheses"],
    );
    bad(
        "paren3.std",
        b"T0|rx)|2\n",
        &[],
        Some(1),
        &["unbalanced parentheses"],
    );
    bad("paren4.std", b"T0|r x|2\n", &[], Some(1), &["missing `(`"]);
    bad(
        "paren1.rapid.csv",
        b"T0,T1\nw(x),\n,r((x)\n",
        &[],
        Some(3),
        &["unbalanced parentheses", "RAPID CSV cell"],
    );
    bad(
        "paren2.rapid.csv",
        b"w(x\n",
        &["--input-format", "rapid-csv"],
        Some(1),
        &["unbalanced parentheses"],
    );
    bad(
        "bar.std",
        b"T0|w(x)|1\nT1 r(x) 2\n",
        &[],
        Some(2),
        &[
            "missing `|`",
            "expected `thread|op(target)|loc`",
            "T1 r(x) 2",
        ],
    );
}

#[test]
fn extremely_long_lines() {
    let mut dir_file = tempfile::NamedTempFile::new().expect("tempfile");
    let long = vec![b'a'; (1 << 20) + 100];
    {
        let f = dir_file.as_file_mut();
        f.write_all(b"T0|w(x)|1\nT1|r(").unwrap();
        f.write_all(&long).unwrap();
        f.write_all(b")|2\nT0|w(x)|3\n").unwrap();
    }
    let text = std::fs::read(dir_file.path()).unwrap();
    bad(
        "long.std",
        &text,
        &[],
        Some(2),
        &[
            "longer than 1048576 bytes",
            "expected one event per line",
            "T1|r(aaa",
        ],
    );
    // The same in CSV, and a long first line that detection only sees part of.
    let mut csv = HEADER.as_bytes().to_vec();
    csv.extend_from_slice(b"T0,w,");
    csv.extend_from_slice(&long);
    csv.extend_from_slice(b",1\n");
    bad("long.csv", &csv, &[], Some(2), &["longer than"]);
    let mut first = long.clone();
    first.extend_from_slice(b"|w(x)|1\n");
    bad("long-first.std", &first, &[], Some(1), &["longer than"]);
    // No newline at all.
    bad(
        "long-nonl.csv",
        &long,
        &["--input-format", "csv"],
        Some(1),
        &["longer than"],
    );
}

#[test]
fn lock_semantics() {
    bad(
        "held.std",
        b"T0|acq(m)|1\nT1|acq(m)|2\n",
        &[],
        Some(2),
        &[
            "acquire of lock `m` held by thread `T0`",
            "expected it to be released first",
            "T1|acq(m)|2",
        ],
    );
    bad(
        "notheld.csv",
        format!("{HEADER}T0,acq,m,1\nT0,rel,m,2\nT0,rel,m,3\n").as_bytes(),
        &[],
        Some(4),
        &[
            "release of lock `m` that thread `T0` does not hold",
            "expected a matching acquire first",
        ],
    );
    bad(
        "other.std",
        b"T0|acq(m)|1\nT1|rel(m)|2\n",
        &[],
        Some(2),
        &["that thread `T1` does not hold"],
    );
    bad(
        "never.rapid.csv",
        b"T0\nrel(m)\n",
        &[],
        Some(2),
        &["does not hold"],
    );
}

#[test]
fn fork_and_join_semantics() {
    bad(
        "fork-started.std",
        b"T1|w(x)|1\nT0|fork(T1)|2\n",
        &[],
        Some(2),
        &[
            "fork of thread `T1` that already has events",
            "expected a new thread",
        ],
    );
    bad(
        "fork-self.std",
        b"T0|w(x)|1\nT0|fork(T0)|2\n",
        &[],
        Some(2),
        &["thread `T0` forks itself", "expected a new thread"],
    );
    bad(
        "fork-twice.std",
        b"T0|fork(T1)|1\nT0|fork(T1)|2\n",
        &[],
        Some(2),
        &["was already forked"],
    );
    bad(
        "fork-joined.std",
        b"T0|join(T1)|1\nT0|fork(T1)|2\n",
        &[],
        Some(2),
        &["was already joined"],
    );
    bad(
        "after-join.csv",
        format!("{HEADER}T0,fork,T1,1\nT1,w,x,2\nT0,join,T1,3\nT1,r,x,4\n").as_bytes(),
        &[],
        Some(5),
        &[
            "event of thread `T1` after it was joined",
            "expected no events of a joined thread",
            "T1,r,x,4",
        ],
    );
    bad(
        "join-twice.std",
        b"T0|fork(T1)|1\nT1|w(x)|2\nT0|join(T1)|3\nT0|join(T1)|4\n",
        &[],
        Some(4),
        &["thread `T1` joined twice", "expected one join per thread"],
    );
    bad(
        "join-self.std",
        b"T0|join(T0)|1\n",
        &[],
        Some(1),
        &["joins itself"],
    );
}

#[test]
fn rapid_csv_rows() {
    bad(
        "two.rapid.csv",
        b"T0,T1\nw(x),\nr(x),w(y)\n",
        &[],
        Some(3),
        &[
            "columns 1 and 2 are both filled",
            "expected exactly one filled cell",
        ],
    );
    bad(
        "col.rapid.csv",
        b"T0,T1\nw(x),\n,,r(x)\n",
        &[],
        Some(3),
        &["column 3", "header names no thread there"],
    );
}

#[test]
fn unreadable_paths() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-trace.csv");
    let missing = missing.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for (path, expect) in [(missing, "cannot open"), (d, "is a directory")] {
        for args in [
            vec!["stats", path],
            vec!["convert", path, "--to", "std"],
            vec!["analyze", path, "--relation", "po"],
        ] {
            let out = cprace(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
            assert!(
                err.contains(path) && err.contains(expect),
                "{args:?}: {err}"
            );
        }
    }
}

#[test]
fn every_subcommand_reports_bad_input_the_same_way() {
    let (_dir, path) = file("held.std", b"T0|acq(m)|1\nT1|acq(m)|2\n");
    let out_file = format!("{path}.out");
    for args in [
        vec!["stats", path.as_str(), "--format", "json"],
        vec!["convert", path.as_str(), "--to", "csv"],
        vec![
            "convert",
            path.as_str(),
            "--to",
            "csv",
            "-o",
            out_file.as_str(),
        ],
        vec![
            "analyze",
            path.as_str(),
            "--relation",
            "po",
            "--format",
            "json",
        ],
    ] {
        let out = cprace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            err.contains(&format!("{path}:2: acquire of lock `m`")),
            "{args:?}: {err}"
        );
    }
    assert!(
        !Path::new(&out_file).exists(),
        "convert wrote output for a bad trace"
    );
}

#[test]
fn standard_input_errors_name_stdin() {
    let out = with_stdin(&["stats", "-"], b"T0|w(x)|1\nT0|r(x\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(err.contains("<stdin>:2: unbalanced parentheses"), "{err}");
}

/// A negative or too large value of a numeric option reaches its parser,
/// whose error names the accepted range (never clap's "unexpected argument"
/// with its advice to write `-- -1`, which would make it a positional).
#[test]
fn numeric_options_name_their_range() {
    let (_dir, path) = file("t.std", b"T0|w(x)|1\nT1|w(x)|2\n");
    let p = path.as_str();
    let max = "18446744073709551615";
    for (args, expect) in [
        (
            vec!["analyze", p, "--relation", "cp", "--window", "-1"],
            vec!["`-1`", "from 1 to 18446744073709551615", "`none`"],
        ),
        (
            vec![
                "analyze",
                p,
                "--relation",
                "cp",
                "--window",
                "99999999999999999999999",
            ],
            vec!["from 1 to 18446744073709551615"],
        ),
        (
            vec!["analyze", p, "--relation", "hb", "--max-distance", "-3"],
            vec!["from 1 to", max],
        ),
        (
            vec!["query", p, "--relation", "hb", "--window", "-1k"],
            vec!["from 1 to", max],
        ),
        (
            vec!["deadlocks", p, "--window", "-1"],
            vec!["from 1 to", max],
        ),
        (vec!["sweep", p, "--windows", "-5"], vec!["from 1 to", max]),
        (
            vec!["gen", "--volatile-share", "-0.1"],
            vec!["`-0.1`", "from 0 to 1"],
        ),
        (vec!["gen", "-n", "-5"], vec!["`-5`", "from 0 to", max]),
        (vec!["gen", "--threads", "-2"], vec!["from 0 to 4294967295"]),
        (
            vec!["gen", "--threads", "99999999999"],
            vec!["from 0 to 4294967295"],
        ),
        (vec!["gen", "--cs-length", "-3"], vec!["at least 1"]),
        (
            vec!["record", "-o", "x.std", "--timeout", "-1", "--", "true"],
            vec!["positive number of seconds"],
        ),
    ] {
        let out = cprace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "{args:?}: {err}");
        for e in expect {
            assert!(err.contains(e), "{args:?}: expected `{e}`: {err}");
        }
    }
}

/// A control character in a name (a carriage return inside a location, a
/// tab, an escape) is rejected where it first appears, in every text format
/// and on every path (plain lines and lines the general parser reads).
#[test]
fn control_characters_in_names_are_rejected() {
    bad(
        "cr.std",
        b"T0|w(x)|a.c:1\nT1|w(x)|a.c\r:2\n",
        &[],
        Some(2),
        &[
            "location `a.c\\r:2`",
            "control character \\r (carriage return)",
        ],
    );
    // A name seen before is not checked again, so the first line holding it
    // is the one named; and the general path (spaces to trim) checks too.
    bad(
        "tab.std",
        b"T0|w(x)|1\n T1 |w(x\ty)| 2\n",
        &[],
        Some(2),
        &["variable name `x\\ty`", "\\t (tab)"],
    );
    bad(
        "esc.std",
        b"T0|w(x)|1\nT\x1b1|w(x)|2\n",
        &[],
        Some(2),
        &["thread name", "U+001B"],
    );
    bad(
        "lock.std",
        b"T0|acq(m\x01)|1\n",
        &[],
        Some(1),
        &["lock name", "U+0001"],
    );
    // DEL and the C1 controls (U+0080-U+009F, two bytes in UTF-8).
    bad(
        "del.std",
        b"T0|w(x\x7f)|1\n",
        &[],
        Some(1),
        &["variable name", "U+007F"],
    );
    bad(
        "c1.std",
        "T0|w(x)|1\nT0|w(y\u{85})|2\n".as_bytes(),
        &[],
        Some(2),
        &["variable name", "U+0085"],
    );
    let csv = format!("{HEADER}T0,w,x,a.c:1\nT1,w,x,\"a\rb\"\n");
    bad(
        "cr.csv",
        csv.as_bytes(),
        &[],
        Some(3),
        &["location `a\\rb`", "carriage return"],
    );
    let csv = format!("{HEADER}T0,w,x,a\x07b\n");
    bad("bell.csv", csv.as_bytes(), &[], Some(2), &["U+0007"]);
    bad(
        "cr.rapid.csv",
        b"T0,T1\nw(x\x02),\n",
        &[],
        Some(2),
        &["variable name", "U+0002"],
    );
    // A CRLF line ending is not part of the location.
    let (_dir, p) = file("crlf.std", b"T0|w(x)|a.c:1\r\nT1|w(x)|a.c:2\r\n");
    let out = cprace(&["stats", &p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
