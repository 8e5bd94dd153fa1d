//! RAPID's STD format: `thread|op(target)|loc`, one event per line.

use std::io::{Read, Write};

use super::error::LoadError;
use super::line_cache::LineKey;
use super::lines::{MAX_LINE, is_blank_or_comment, next_line, write_lines};
use super::model::{Event, EventId, Op, Trace};
use super::parallel::Scanned;
use super::scan::{Specials, eq_bytes, trimmed};
use super::validate::{Builder, PlainLine, Push, TextEvent};

/// Split `op(target)` into its two parts.
pub(crate) fn split_op_target(s: &str) -> Result<(&str, &str), &'static str> {
    let s = s.trim_ascii();
    let bytes = s.as_bytes();
    // One pass: where the parentheses are (names are short, memchr is slower).
    let (mut open, mut opens, mut closes) = (usize::MAX, 0u32, 0u32);
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'(' {
            if opens == 0 {
                open = i;
            }
            opens += 1;
        } else if c == b')' {
            closes += 1;
        }
    }
    if opens == 0 {
        return Err(if closes > 0 {
            "unbalanced parentheses: `)` without `(`; expected `op(target)`"
        } else {
            "missing `(`; expected `op(target)`"
        });
    }
    if bytes.last() != Some(&b')') {
        return Err("unbalanced parentheses: no `)` at the end; expected `op(target)`");
    }
    if opens > 1 || closes > 1 {
        return Err(
            "unbalanced parentheses; expected exactly one `(` and one `)` as in `op(target)`",
        );
    }
    Ok((
        s[..open].trim_ascii(),
        s[open + 1..s.len() - 1].trim_ascii(),
    ))
}

/// Parse STD text from `r`, feeding each line to `b`. Large inputs are
/// parsed on every core that `busy` threads feeding `r` (a decompressor)
/// leave ([`super::parallel`]); the events, names and errors are those of a
/// line-by-line pass.
pub(crate) fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
    busy: usize,
) -> Result<(), LoadError> {
    super::parallel::parse(r, b, &StdLines, busy)
}

/// The line scanner of STD text.
pub(crate) struct StdLines;

impl super::parallel::Scan for StdLines {
    fn scan<P: Push>(&self, file: &str, block: &str, line_no: &mut u64, p: &mut P) -> Scanned {
        let bytes = block.as_bytes();
        let mut pos = 0;
        // Lines met before take the ids they gave then, while the cache
        // finds enough of them; then (or when paused) every line is parsed.
        while pos < bytes.len() && p.lines().active() {
            let Some(k) = LineKey::at(bytes, pos) else {
                pos = one_line(file, block, pos, line_no, p, None)?;
                continue;
            };
            match p.lines().get(&k) {
                Some(ids) => {
                    *line_no += 1;
                    p.push_known(bytes, *line_no, (pos, k.len()), ids)?;
                    pos += k.len() + 1;
                }
                None => pos = one_line(file, block, pos, line_no, p, Some(&k))?,
            }
        }
        let first = *line_no;
        while pos < bytes.len() {
            pos = one_line(file, block, pos, line_no, p, None)?;
        }
        p.lines().skipped(*line_no - first);
        Ok(())
    }
}

/// Parse the line at `pos` of `block`, numbered after `line_no`; where the
/// next line starts. A plain line with a cache key `key` is cached.
#[inline(always)]
fn one_line<P: Push>(
    file: &str,
    block: &str,
    pos: usize,
    line_no: &mut u64,
    p: &mut P,
    key: Option<&LineKey>,
) -> Result<usize, LoadError> {
    let bytes = block.as_bytes();
    // The common, plain line in one pass; anything unusual (spaces to trim,
    // comments, errors, CRLF) takes the general path below.
    if let Some(f) = fast_line(bytes, pos) {
        *line_no += 1;
        let ids = p.push_line(bytes, *line_no, &f)?;
        if let Some(k) = key {
            p.lines().put(k, ids);
        }
        return Ok(f.next);
    }
    let (text, next) = next_line(file, block, pos, line_no)?;
    parse_line(p, pos, file, *line_no, text)?;
    Ok(next)
}

/// One line, by the general rules (trimming, comments, precise errors);
/// `start` is where it starts in its block.
fn parse_line<P: Push>(
    b: &mut P,
    start: usize,
    file: &str,
    line: u64,
    text: &str,
) -> Result<(), LoadError> {
    if is_blank_or_comment(text.as_bytes()) {
        return Ok(());
    }
    let err = |p: &str| LoadError::new(file, line, text.as_bytes(), p);
    let Some(bar) = memchr::memchr(b'|', text.as_bytes()) else {
        return Err(err("missing `|`; expected `thread|op(target)|loc`"));
    };
    let thread = text[..bar].trim_ascii();
    let rest = &text[bar + 1..];
    let (optarget, loc) = match memchr::memchr(b'|', rest.as_bytes()) {
        Some(i) => (&rest[..i], rest[i + 1..].trim_ascii()),
        None => (rest, ""),
    };
    let (op, target) = split_op_target(optarget).map_err(err)?;
    let e = TextEvent {
        thread,
        op,
        target,
        loc,
    };
    b.push_at(start, e).map_err(|p| err(&p))
}

/// High bit set in every byte of `w` that is `|`, `(`, `)` or `\n`.
#[inline(always)]
fn std_specials(w: u64) -> u64 {
    // `(` and `)` differ only in the lowest bit: one test for both.
    eq_bytes(w, b'|') | eq_bytes(w & !(u64::MAX / 255), b'(') | eq_bytes(w, b'\n')
}

/// The fields of a plain line at `start`: `thread|op(target)|loc` or
/// `thread|op(target)`, `\n`-terminated or last, no `\r`, non-empty thread and
/// target without surrounding spaces, a known op, a loc without surrounding
/// spaces. Exactly what [`parse_line`] would accept with the same fields.
#[inline]
fn fast_line(bytes: &[u8], start: usize) -> Option<PlainLine> {
    let trimmed = |s: usize, e: usize| trimmed(bytes, s, e);
    let mut scan = Specials::new(bytes, start, std_specials);
    // `thread|`, `op(`, `target)`: any other special byte in between (or a
    // line break first: a blank line) is for the general path.
    let (bar, open, close) = match (scan.next()?, scan.next()?, scan.next()?) {
        ((bar, b'|'), (open, b'('), (close, b')')) => (bar, open, close),
        _ => return None,
    };
    if !trimmed(start, bar) || bytes[start] == b'#' || !trimmed(open + 1, close) {
        return None;
    }
    let op = Op::parse_bytes(&bytes[bar + 1..open])?;
    let (loc, end, next) = match scan.next() {
        None if close + 1 == bytes.len() => ((close + 1, close + 1), close + 1, close + 1),
        Some((nl, b'\n')) if nl == close + 1 => ((nl, nl), nl, nl + 1),
        Some((bar2, b'|')) if bar2 == close + 1 => {
            // The location is the rest of the line, whatever it contains.
            let e = loop {
                match scan.next() {
                    None => break bytes.len(),
                    Some((nl, b'\n')) => break nl,
                    Some(_) => {}
                }
            };
            if e > bar2 + 1 && !trimmed(bar2 + 1, e) {
                return None;
            }
            ((bar2 + 1, e), e, (e + 1).min(bytes.len()))
        }
        _ => return None,
    };
    if end - start > MAX_LINE {
        return None;
    }
    Some(PlainLine {
        start,
        thread: (start, bar),
        op,
        target: (open + 1, close),
        loc,
        end,
        next,
    })
}

/// Why `name` cannot be written in STD, if it cannot.
pub(crate) fn std_problem(name: &str, is_loc: bool, is_thread: bool) -> Option<&'static str> {
    if name.contains(['\n', '\r']) {
        Some("a line break")
    } else if !is_loc && name.contains(['|', '(', ')']) {
        Some("`|`, `(` or `)`")
    } else if name.trim_ascii() != name {
        Some("leading or trailing spaces")
    } else if is_thread && name.starts_with('#') {
        Some("a leading `#` (a comment in STD)")
    } else {
        None
    }
}

/// Write `trace` in STD. Fails when a name cannot be represented.
pub fn write(trace: &Trace, out: &mut impl Write) -> crate::Result<()> {
    let n = &trace.names;
    for (what, table, is_loc) in [
        ("thread", &n.threads, false),
        ("lock", &n.locks, false),
        ("variable", &n.vars, false),
        ("location", &n.locs, true),
    ] {
        for name in table {
            if let Some(p) = std_problem(&name, is_loc, what == "thread") {
                return Err(crate::Error::Usage(format!(
                    "{what} name `{name}` cannot be written in STD: it contains {p}"
                )));
            }
        }
    }
    write_events(trace, out, |buf, ev| {
        buf.extend_from_slice(n.loc(ev.loc).as_bytes())
    })?;
    Ok(())
}

/// Write the events of `trace` as STD lines, the location of each written
/// by `loc` (names unchecked: [`write`] checks them first).
pub(crate) fn write_events(
    trace: &Trace,
    out: &mut impl Write,
    mut loc: impl FnMut(&mut Vec<u8>, &crate::trace::Event),
) -> std::io::Result<()> {
    let n = &trace.names;
    write_lines(out, b"", &trace.events, |buf, ev| {
        buf.extend_from_slice(n.thread(ev.thread).as_bytes());
        buf.push(b'|');
        buf.extend_from_slice(ev.op.as_str().as_bytes());
        buf.push(b'(');
        buf.extend_from_slice(n.target(ev).as_bytes());
        buf.extend_from_slice(b")|");
        loc(buf, ev);
        buf.push(b'\n');
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::Rng;
    use crate::trace::lines::for_each_line;
    use crate::trace::testing::{pick, tables};

    type Parsed = Result<(Vec<Event>, Vec<Vec<String>>), LoadError>;

    fn fast(text: &[u8]) -> Parsed {
        let mut events = Vec::new();
        let mut b = Builder::new("f", |_, ev: &Event| events.push(*ev));
        parse(text, &mut b, 0)?;
        let names = tables(&b.names);
        drop(b);
        Ok((events, names))
    }

    /// The general path alone, line by line.
    fn general(text: &[u8]) -> Parsed {
        let mut events = Vec::new();
        let mut b = Builder::new("f", |_, ev: &Event| events.push(*ev));
        for_each_line("f", text, |line, t| parse_line(&mut b, 0, "f", line, t))?;
        let names = tables(&b.names);
        drop(b);
        Ok((events, names))
    }

    /// Lines near the fast path's edges: surrounding spaces, CRLF, comments,
    /// special bytes in every field, empty and long fields, unknown ops,
    /// missing parts, lock and fork errors, names longer than a key.
    fn line(r: &mut Rng) -> String {
        let thread = pick(
            r,
            &["T0", "T1", "a-thread-name-longer-than-24"],
            &[" T1", "T1 ", "#T", "T(2)", ""],
        );
        let op = pick(
            r,
            &["r", "w", "vr", "vw", "r", "w"],
            &["acq", "rel", "fork", "join", " r", "x", ""],
        );
        let target = pick(
            r,
            &[
                "x",
                "y",
                "v.really.long.field.name.here",
                "exactly-24-bytes-long-xx",
            ],
            &["l", "T2", " x", "x ", "", "x|y", "a(b"],
        );
        let loc = pick(
            r,
            &[
                "",
                "7",
                "f.java:3",
                "a|b",
                "(x)",
                "l)",
                "12345678901234567890123",
            ],
            &[" 7", "7 ", "k\r"],
        );
        let mut s = match r.below(24) {
            0 => String::new(),
            1 => format!("# {thread}|{op}({target})"),
            2 => format!("{thread}|{op}({target})"),
            3 => format!("{thread}|{op}({target}) |{loc}"),
            4 => format!("{thread}|{op}{target}|{loc}"),
            5 => format!("{thread}|{op}({target})x|{loc}"),
            _ => format!("{thread}|{op}({target})|{loc}"),
        };
        if r.below(10) == 0 {
            s.push('\r');
        }
        s
    }

    #[test]
    fn fast_path_equals_general_path() {
        let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
        let (mut ok, mut failed) = (0, 0);
        for case in 0..3000 {
            let n = 1 + r.below(8);
            let mut text = (0..n).map(|_| line(&mut r)).collect::<Vec<_>>().join("\n");
            if r.below(2) == 0 {
                text.push('\n');
            }
            let (f, g) = (fast(text.as_bytes()), general(text.as_bytes()));
            assert_eq!(f, g, "case {case}: {text:?}");
            if f.is_ok() { ok += 1 } else { failed += 1 }
        }
        // Both outcomes must be well represented for the test to mean much.
        assert!(ok > 300 && failed > 300, "ok {ok}, failed {failed}");
    }

    /// Parse `text` with blocks of `block` bytes on `workers` workers after
    /// `one_pass` blocks in one pass.
    fn blocks(text: &[u8], block: usize, workers: usize, local: usize, one_pass: usize) -> Parsed {
        let mut events = Vec::new();
        let mut b = Builder::new("f", |_, ev: &Event| events.push(*ev));
        let sizes = (block, workers, local, one_pass);
        crate::trace::parallel::parse_with(text, &mut b, &StdLines, sizes)?;
        let names = tables(&b.names);
        drop(b);
        Ok((events, names))
    }

    /// A trace of mostly well-formed lines (accesses, critical sections,
    /// blank lines, comments, long and non-ASCII names), with now and then
    /// an edge-case line or an invalid UTF-8 byte.
    fn mostly_good(r: &mut Rng, n: usize) -> Vec<u8> {
        let mut text = Vec::new();
        let mut held = [false; 4];
        if r.below(10) == 0 {
            text.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for _ in 0..n {
            let t = r.below(4) as usize;
            let line = match r.below(60) {
                0 => line(r),
                1 => String::new(),
                2 => "# comment".into(),
                3 => format!(
                    "T{t}|w(v{}.a-very-long-field-name-here)|L{}",
                    r.below(50),
                    r.below(9)
                ),
                // Long names in families (the digits last), far-out members.
                10 | 11 => format!(
                    "T{t}|r(pkg.Class.a-long-field-name@{})|L{}",
                    [r.below(50), r.below(100_000)][r.below(2) as usize],
                    r.below(9)
                ),
                4 => format!("T{t}|r(é{})|ü", r.below(5)),
                5 if r.below(20) == 0 => {
                    text.extend_from_slice(b"T0|r(\xFF)|1\n");
                    continue;
                }
                6..=9 => {
                    held[t] = !held[t];
                    let op = if held[t] { "acq" } else { "rel" };
                    format!("T{t}|{op}(L{t})|{}", r.below(100))
                }
                _ => format!(
                    "T{t}|{}(x{})|{}",
                    ["r", "w", "vr", "vw"][r.below(4) as usize],
                    r.below(300),
                    r.below(1000)
                ),
            };
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
        }
        if r.below(2) == 0 {
            text.pop();
        }
        text
    }

    #[test]
    fn parallel_reader_equals_one_pass() {
        let mut r = Rng::new(0x005E_ED0F_B10C);
        let (mut ok, mut failed) = (0, 0);
        for case in 0..400 {
            let n = 1 + r.below(300) as usize;
            let text = mostly_good(&mut r, n);
            let want = blocks(&text, 1 << 20, 1, usize::MAX, 0);
            // Workers from the first block on, and after a one-pass start.
            for (block, workers, local, one_pass) in [
                (1, 2, 9, 0),
                (7, 3, 40, 0),
                (64, 2, usize::MAX, 0),
                (1000, 2, 30, 0),
                (5, 2, 20, 1 + r.below(40) as usize),
                (64, 3, 40, 1 + r.below(4) as usize),
            ] {
                let got = blocks(&text, block, workers, local, one_pass);
                assert_eq!(
                    got,
                    want,
                    "case {case}, blocks of {block} on {workers} after {one_pass}: {:?}",
                    String::from_utf8_lossy(&text)
                );
            }
            if want.is_ok() { ok += 1 } else { failed += 1 }
        }
        assert!(ok > 40 && failed > 40, "ok {ok}, failed {failed}");
    }

    /// Lines repeated from a small pool, plain and edge-case, some valid the
    /// first time and not the next (a second release, a fork of a running
    /// thread, an event after a join): the line cache must give exactly
    /// what parsing every line again gives, errors included.
    #[test]
    fn repeated_lines_parse_as_the_first_time() {
        let mut r = Rng::new(0x11E_CAC4E);
        let access = [
            "T0|r(series.SeriesTest.TestArray)|74",
            "T0|w(A9[7540])|76",
            "T1|r(x)|1",
            "T1|w(x)|f.java:3",
            "T2|w(y)|a b",
            "T0|vw(v)|1",
            "T3|ar(a)|2",
        ];
        let sync = [
            "T0|acq(l)|5",
            "T0|rel(l)|6",
            "T1|acq(l)",
            "T1|rel(l)|",
            "T0|fork(T2)|9",
            "T0|join(T2)|10",
            "T3|req(m)|3",
        ];
        let (mut ok, mut failed) = (0, 0);
        for case in 0..300 {
            let pool: Vec<String> = (0..2 + r.below(12))
                .map(|_| match r.below(10) {
                    0 => line(&mut r),
                    1 => sync[r.below(sync.len() as u64) as usize].to_string(),
                    _ => access[r.below(access.len() as u64) as usize].to_string(),
                })
                .collect();
            let n = 20 + r.below(300) as usize;
            let mut text = String::new();
            for _ in 0..n {
                text.push_str(&pool[r.below(pool.len() as u64) as usize]);
                text.push('\n');
            }
            let (f, g) = (fast(text.as_bytes()), general(text.as_bytes()));
            assert_eq!(f, g, "case {case}: {text:?}");
            // And on workers, whose tables (and caches) start afresh.
            for (block, local) in [(200, 8), (1000, usize::MAX)] {
                let w = blocks(text.as_bytes(), block, 2, local, 0);
                assert_eq!(w, g, "case {case}, blocks of {block}: {text:?}");
            }
            if f.is_ok() { ok += 1 } else { failed += 1 }
        }
        assert!(ok > 30 && failed > 30, "ok {ok}, failed {failed}");
    }

    #[test]
    fn fast_path_parses_plain_lines() {
        let text = b"T0|acq(l)|1\nT0|w(x)|f.java:2\nT0|rel(l)\nT1|r(x)|\n";
        assert_eq!(fast(text), general(text));
        for (i, l) in [
            &b"T0|acq(l)|1\n"[..],
            b"T0|w(x)|a b",
            b"T0|rel(l)\n",
            b"T1|r(x)|",
        ]
        .iter()
        .enumerate()
        {
            assert!(fast_line(l, 0).is_some(), "line {i}");
        }
        for l in [
            &b" T0|r(x)"[..],
            b"T0|r(x)\r\n",
            b"T0|r(x) ",
            b"#T0|r(x)",
            b"T0|r((x)",
            b"T0|rr(x)",
        ] {
            assert!(
                fast_line(l, 0).is_none(),
                "{:?}",
                String::from_utf8_lossy(l)
            );
        }
    }
}
