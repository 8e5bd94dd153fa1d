//! cprace's CSV schema: a header naming at least `thread,op,target` (optional
//! `loc`, any order, extra columns ignored), then one event per row.
//!
//! A small line-based CSV reader rather than a general one: every record is
//! one line (names never contain line breaks), which keeps line numbers in
//! errors exact, bounds memory by the line cap and is several times faster.
//! Fields are separated by `,` and trimmed; a field may be quoted with `"`
//! (then it may contain `,`, and `""` stands for one `"`).

use std::io::{Read, Write};

use super::error::LoadError;
use super::line_cache::LineKey;
use super::lines::{MAX_LINE, for_each_block, is_blank_or_comment, next_line, write_lines};
use super::model::{Event, EventId, Op, Trace};
use super::scan::{Specials, eq_bytes, trimmed};
use super::validate::{Builder, PlainLine, Push};

/// Column positions found in the header.
struct Columns {
    thread: usize,
    op: usize,
    target: usize,
    loc: Option<usize>,
}

fn find_columns<S: AsRef<str>>(header: &[S]) -> Result<Columns, String> {
    let pos = |name: &str| {
        header
            .iter()
            .position(|h| h.as_ref().trim().eq_ignore_ascii_case(name))
    };
    let missing: Vec<&str> = ["thread", "op", "target"]
        .into_iter()
        .filter(|c| pos(c).is_none())
        .collect();
    match (pos("thread"), pos("op"), pos("target")) {
        (Some(thread), Some(op), Some(target)) => Ok(Columns {
            thread,
            op,
            target,
            loc: pos("loc"),
        }),
        _ => Err(format!(
            "header lacks the column{} {}; expected a header naming `thread`, `op` and `target` (optionally `loc`), such as `thread,op,target,loc`",
            if missing.len() > 1 { "s" } else { "" },
            missing
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// True when a row reads like an attempt at our header: it names at least one
/// of the columns (so a header missing some gets a precise error).
pub(crate) fn looks_like_header<S: AsRef<str>>(cells: &[S]) -> bool {
    cells.iter().any(|c| {
        ["thread", "op", "target"]
            .iter()
            .any(|n| c.as_ref().trim().eq_ignore_ascii_case(n))
    })
}

/// Splits one CSV line into trimmed fields, reusing its buffers.
#[derive(Default)]
pub(crate) struct Splitter {
    /// Unquoted field text when the line has quotes.
    scratch: String,
    /// Field ranges into the line (no quotes) or into `scratch`.
    ranges: Vec<(usize, usize)>,
    quoted: bool,
}

impl Splitter {
    /// Split `line`; afterwards [`Splitter::len`] and [`Splitter::field`] give
    /// the fields (pass the same `line` to `field`).
    pub(crate) fn split(&mut self, line: &str) -> Result<(), &'static str> {
        self.ranges.clear();
        let bytes = line.as_bytes();
        // Fast path, no quotes: one pass over short lines beats memchr calls.
        self.quoted = false;
        let mut start = 0;
        for (i, &c) in bytes.iter().enumerate() {
            if c == b',' {
                self.ranges.push(trim_range(bytes, start, i));
                start = i + 1;
            } else if c == b'"' {
                self.quoted = true;
                break;
            }
        }
        if !self.quoted {
            self.ranges.push(trim_range(bytes, start, bytes.len()));
            return Ok(());
        }
        self.ranges.clear();
        self.scratch.clear();
        let mut rest = line;
        loop {
            let t = rest.trim_start();
            let from = self.scratch.len();
            if let Some(q) = t.strip_prefix('"') {
                // Quoted field: up to the closing quote, `""` is a quote.
                let mut s = q;
                loop {
                    let Some(i) = s.find('"') else {
                        return Err(
                            "unterminated quoted field; expected a closing `\"` on the same line",
                        );
                    };
                    self.scratch.push_str(&s[..i]);
                    if s[i + 1..].starts_with('"') {
                        self.scratch.push('"');
                        s = &s[i + 2..];
                    } else {
                        s = &s[i + 1..];
                        break;
                    }
                }
                let after = s.trim_start();
                let (from_t, to_t) = trim_range(self.scratch.as_bytes(), from, self.scratch.len());
                self.ranges.push((from_t, to_t));
                if after.is_empty() {
                    return Ok(());
                }
                let Some(next) = after.strip_prefix(',') else {
                    return Err("text after a closing quote; expected `,` or the end of the line");
                };
                rest = next;
            } else {
                let end = t.find(',').unwrap_or(t.len());
                self.scratch.push_str(&t[..end]);
                let (from_t, to_t) = trim_range(self.scratch.as_bytes(), from, self.scratch.len());
                self.ranges.push((from_t, to_t));
                if end == t.len() {
                    return Ok(());
                }
                rest = &t[end + 1..];
            }
        }
    }

    /// Number of fields of the last line split.
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Field `i` of `line` (the line last split).
    pub(crate) fn field<'s>(&'s self, line: &'s str, i: usize) -> &'s str {
        let (a, b) = self.ranges[i];
        if self.quoted {
            &self.scratch[a..b]
        } else {
            &line[a..b]
        }
    }

    /// True when every field of the last line is empty (a row to skip).
    pub(crate) fn all_empty(&self) -> bool {
        self.ranges.iter().all(|(a, b)| a == b)
    }
}

/// The range of `s[from..to]` without ASCII whitespace at either end.
fn trim_range(s: &[u8], mut from: usize, mut to: usize) -> (usize, usize) {
    while from < to && s[from].is_ascii_whitespace() {
        from += 1;
    }
    while to > from && s[to - 1].is_ascii_whitespace() {
        to -= 1;
    }
    (from, to)
}

/// Parse our CSV schema from `r`.
pub(crate) fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let file = b.file();
    let mut cols: Option<Columns> = None;
    let mut need = 0usize;
    let mut sp = Splitter::default();
    for_each_block(file, r, |line_no, block| {
        let bytes = block.as_bytes();
        let mut pos = 0;
        while pos < bytes.len() {
            // A row met before (after the header): the ids it gave then.
            let key = match cols {
                Some(_) if b.lines().active() => LineKey::at(bytes, pos),
                Some(_) => {
                    b.lines().skipped(1);
                    None
                }
                None => None,
            };
            if let Some(k) = &key
                && let Some(ids) = b.lines().get(k)
            {
                *line_no += 1;
                b.push_known(bytes, *line_no, (pos, k.len()), ids)?;
                pos += k.len() + 1;
                continue;
            }
            // Plain rows (no quotes, no spaces to trim, no comment) in one
            // pass; everything else, and the header, by the general rules.
            if let Some(c) = &cols
                && let Some(f) = fast_row(bytes, pos, c, need)
            {
                *line_no += 1;
                let ids = b.push_plain(bytes, pos, *line_no, &f)?;
                if let Some(k) = &key {
                    b.lines().put(k, ids);
                }
                pos = f.next;
                continue;
            }
            let (text, next) = next_line(file, block, pos, line_no)?;
            parse_row(b, file, *line_no, text, &mut sp, &mut cols, &mut need)?;
            pos = next;
        }
        Ok(())
    })?;
    if cols.is_none() {
        return Err(b.error(
            0,
            b"",
            "no header row; expected a header such as `thread,op,target,loc`",
        ));
    }
    Ok(())
}

/// One line by the general rules: comments, quotes, trimming, the header.
fn parse_row<S: FnMut(EventId, &Event)>(
    b: &mut Builder<'_, S>,
    file: &str,
    line: u64,
    text: &str,
    sp: &mut Splitter,
    cols: &mut Option<Columns>,
    need: &mut usize,
) -> Result<(), LoadError> {
    if is_blank_or_comment(text.as_bytes()) {
        return Ok(());
    }
    let err = |p: &str| LoadError::new(file, line, text.as_bytes(), p);
    sp.split(text).map_err(err)?;
    if sp.all_empty() {
        return Ok(());
    }
    let Some(c) = cols else {
        let cells: Vec<&str> = (0..sp.len()).map(|i| sp.field(text, i)).collect();
        let c = find_columns(&cells).map_err(|p| err(&p))?;
        // `loc` is optional per row too: a row may end before it.
        *need = 1 + c.thread.max(c.op).max(c.target);
        *cols = Some(c);
        return Ok(());
    };
    if sp.len() < *need {
        return Err(err(&format!(
            "row has {} column{}; expected at least {need} (for `thread`, `op` and `target`) as the header names them",
            sp.len(),
            if sp.len() == 1 { "" } else { "s" }
        )));
    }
    let loc = c
        .loc
        .filter(|&i| i < sp.len())
        .map_or("", |i| sp.field(text, i));
    b.push(
        sp.field(text, c.thread),
        sp.field(text, c.op),
        sp.field(text, c.target),
        loc,
    )
    .map_err(|p| err(&p))
}

/// Most fields a row may have for the fast path.
const FAST_FIELDS: usize = 8;

/// The fields of a plain row at `start`: no `"`, at least `need` fields and at
/// most [`FAST_FIELDS`], thread, op (a known one) and target not empty and
/// without surrounding spaces, loc empty or without them, no leading space or
/// `#`, no `\r` at the end. Exactly the rows [`parse_row`] would read the same
/// way.
#[inline]
fn fast_row(bytes: &[u8], start: usize, c: &Columns, need: usize) -> Option<PlainLine> {
    // Field i spans bounds[i]..bounds[i + 1] - 1 (the separator after it).
    let mut bounds = [0usize; FAST_FIELDS + 1];
    bounds[0] = start;
    let mut n = 0;
    let mut scan = Specials::new(bytes, start, |w| {
        eq_bytes(w, b',') | eq_bytes(w, b'"') | eq_bytes(w, b'\n')
    });
    let end = loop {
        match scan.next() {
            Some((p, b',')) => {
                n += 1;
                if n == FAST_FIELDS {
                    return None;
                }
                bounds[n] = p + 1;
            }
            Some((p, b'\n')) => break p,
            None => break bytes.len(),
            Some(_) => return None,
        }
    };
    n += 1;
    bounds[n] = end + 1;
    // A leading space or `#` may make a comment, a trailing `\r` is CRLF.
    let (first, last) = (bytes.get(start)?, bytes.get(end.checked_sub(1)?)?);
    if n < need
        || end - start > MAX_LINE
        || first.is_ascii_whitespace()
        || *first == b'#'
        || *last == b'\r'
    {
        return None;
    }
    let field = |i: usize| (bounds[i], bounds[i + 1] - 1);
    let (thread, op, target) = (field(c.thread), field(c.op), field(c.target));
    let loc = match c.loc {
        Some(i) if i < n => field(i),
        _ => (end, end),
    };
    let ok = |(s, e): (usize, usize)| trimmed(bytes, s, e);
    if !ok(thread) || !ok(op) || !ok(target) || (loc.1 > loc.0 && !ok(loc)) {
        return None;
    }
    Some(PlainLine {
        start,
        thread,
        op: Op::parse_bytes(&bytes[op.0..op.1])?,
        target,
        loc,
        end,
        next: (end + 1).min(bytes.len()),
    })
}

/// Append `field` to `out`, quoted when a reader would otherwise misread it.
/// `first` marks the first field of a line (a leading `#` would be a comment).
pub(crate) fn push_field(out: &mut Vec<u8>, field: &str, first: bool) {
    let needs = field
        .bytes()
        .any(|c| matches!(c, b',' | b'"' | b'\n' | b'\r'))
        || (first && field.starts_with('#'))
        || field.trim_ascii() != field;
    if !needs {
        out.extend_from_slice(field.as_bytes());
        return;
    }
    out.push(b'"');
    for c in field.bytes() {
        if c == b'"' {
            out.push(b'"');
        }
        out.push(c);
    }
    out.push(b'"');
}

/// Write `trace` in our CSV schema (quoting where needed; lossless for every
/// trace a loader produced: names never contain line breaks or edge spaces).
pub fn write(trace: &Trace, out: &mut impl Write) -> crate::Result<()> {
    let n = &trace.names;
    write_lines(out, b"thread,op,target,loc\n", &trace.events, |buf, ev| {
        push_field(buf, n.thread(ev.thread), true);
        buf.push(b',');
        buf.extend_from_slice(ev.op.as_str().as_bytes());
        buf.push(b',');
        push_field(buf, &n.target(ev), false);
        buf.push(b',');
        push_field(buf, n.loc(ev.loc), false);
        buf.push(b'\n');
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::Rng;
    use crate::trace::lines::for_each_line;
    use crate::trace::testing::{pick, tables};

    type Parsed = Result<(Vec<Event>, Vec<Vec<String>>), LoadError>;

    fn run(text: &[u8], general_only: bool) -> Parsed {
        let mut events = Vec::new();
        let mut b = Builder::new("f", |_, ev: &Event| events.push(*ev));
        if general_only {
            let (mut sp, mut cols, mut need) = (Splitter::default(), None, 0);
            for_each_line("f", text, |line, t| {
                parse_row(&mut b, "f", line, t, &mut sp, &mut cols, &mut need)
            })?;
            if cols.is_none() {
                return Err(b.error(0, b"", "no header"));
            }
        } else {
            match parse(text, &mut b) {
                Err(e) if e.line == 0 => return Err(b.error(0, b"", "no header")),
                r => r?,
            }
        }
        let names = tables(&b.names);
        drop(b);
        Ok((events, names))
    }

    /// A row for `header` (column names in order), near the fast path's
    /// edges: spaces, quotes, comments, CRLF, missing and extra columns.
    fn row(r: &mut Rng, header: &[&str]) -> String {
        let mut cells: Vec<String> = header
            .iter()
            .map(|h| {
                let v = match *h {
                    "thread" => pick(
                        r,
                        &["T0", "T1", "thread-name-longer-than-24-bytes"],
                        &[" T0", "", "#T", "\"T1\""],
                    ),
                    "op" => pick(
                        r,
                        &["r", "w", "vw", "vr"],
                        &["acq", "rel", "fork", "join", "x", " w", ""],
                    ),
                    "target" => pick(
                        r,
                        &["x", "y", "exactly-24-bytes-long-xx"],
                        &["l", "T2", "x ", "", "\"a,b\""],
                    ),
                    "loc" => pick(r, &["", "3", "f.java:12"], &[" 3", "\"q\"\"\"", "#"]),
                    _ => pick(r, &["", "extra"], &["\"", " e "]),
                };
                v.to_string()
            })
            .collect();
        match r.below(16) {
            0 => cells.truncate(r.below(cells.len() as u64) as usize),
            1 => cells.push("more".into()),
            2 => cells.insert(0, " #".into()),
            _ => {}
        }
        let mut s = cells.join(",");
        match r.below(20) {
            0 => s.push('\r'),
            1 => s = format!("# {s}"),
            2 => s.clear(),
            3 => s = format!(" {s}"),
            _ => {}
        }
        s
    }

    #[test]
    fn fast_path_equals_general_path() {
        let headers: [&[&str]; 4] = [
            &["thread", "op", "target", "loc"],
            &["thread", "op", "target"],
            &["loc", "target", "x", "op", "thread"],
            &["id", "thread", "op", "target", "loc", "note", "a", "b", "c"],
        ];
        let mut r = Rng::new(0x5EED);
        let (mut ok, mut failed) = (0, 0);
        for case in 0..3000 {
            let header = headers[case % headers.len()];
            let mut lines = vec![header.join(",")];
            lines.extend((0..1 + r.below(8)).map(|_| row(&mut r, header)));
            let mut text = lines.join("\n");
            if r.below(2) == 0 {
                text.push('\n');
            }
            let (f, g) = (run(text.as_bytes(), false), run(text.as_bytes(), true));
            assert_eq!(f, g, "case {case}: {text:?}");
            if f.is_ok() { ok += 1 } else { failed += 1 }
        }
        // Both outcomes must be well represented for the test to mean much.
        assert!(ok > 300 && failed > 300, "ok {ok}, failed {failed}");
    }

    /// Rows repeated from a small pool, plain and edge-case, some valid the
    /// first time and not the next (a second release, a second fork): the
    /// line cache must give exactly what parsing every row again gives.
    #[test]
    fn repeated_rows_parse_as_the_first_time() {
        let header = ["thread", "op", "target", "loc"];
        let plain = [
            "T0,r,series.SeriesTest.TestArray,74",
            "T0,w,A9[7540],76",
            "T1,r,x,1",
            "T1,w,x,f.java:3",
            "T0,vw,v,",
            "T1,r,x",
        ];
        let sync = [
            "T0,acq,l,5",
            "T0,rel,l,6",
            "T1,acq,l",
            "T0,fork,T2,9",
            "T0,join,T2,10",
        ];
        let mut r = Rng::new(0xC5_CAC4E);
        let (mut ok, mut failed) = (0, 0);
        for case in 0..300 {
            let pool: Vec<String> = (0..2 + r.below(12))
                .map(|_| match r.below(10) {
                    0 => row(&mut r, &header),
                    1 => sync[r.below(sync.len() as u64) as usize].to_string(),
                    _ => plain[r.below(plain.len() as u64) as usize].to_string(),
                })
                .collect();
            let mut text = header.join(",");
            for _ in 0..20 + r.below(300) {
                text.push('\n');
                text.push_str(&pool[r.below(pool.len() as u64) as usize]);
            }
            text.push('\n');
            let (f, g) = (run(text.as_bytes(), false), run(text.as_bytes(), true));
            assert_eq!(f, g, "case {case}: {text:?}");
            if f.is_ok() { ok += 1 } else { failed += 1 }
        }
        assert!(ok > 30 && failed > 30, "ok {ok}, failed {failed}");
    }

    fn split(line: &str) -> Result<Vec<String>, &'static str> {
        let mut s = Splitter::default();
        s.split(line)?;
        Ok((0..s.len()).map(|i| s.field(line, i).to_string()).collect())
    }

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(split("a, b ,,c").unwrap(), ["a", "b", "", "c"]);
        assert_eq!(
            split(r#""a,b", "say ""hi""" ,x"#).unwrap(),
            ["a,b", r#"say "hi""#, "x"]
        );
        assert_eq!(split(r#"x,"""#).unwrap(), ["x", ""]);
        assert_eq!(split(r#"x,y"z"#).unwrap(), ["x", r#"y"z"#]);
        assert!(split(r#"x,"open"#).is_err());
        assert!(split(r#""a"b,c"#).is_err());
    }

    #[test]
    fn push_field_round_trips() {
        for f in ["plain", "a,b", r#"q"q"#, "#hash", ""] {
            let mut out = Vec::new();
            push_field(&mut out, f, true);
            let line = String::from_utf8(out).unwrap();
            assert_eq!(split(&line).unwrap(), [f], "{line}");
        }
    }
}
