//! RAPID's STD format: `thread|op(target)|loc`, one event per line.

use std::io::{BufRead, Write};

use super::error::LoadError;
use super::lines::{Line, MAX_LINE, is_blank_or_comment, read_line};
use super::model::{Event, EventId, Trace};
use super::validate::Builder;

/// Split `op(target)` into its two parts.
pub fn split_op_target(s: &str) -> Result<(&str, &str), &'static str> {
    let s = s.trim();
    let open = s.find('(').ok_or("missing `(`; expected `op(target)`")?;
    if !s.ends_with(')') {
        return Err("unbalanced parentheses; expected `op(target)` ending in `)`");
    }
    let inner = &s[open + 1..s.len() - 1];
    if inner.contains('(') || inner.contains(')') {
        return Err("unbalanced parentheses; expected exactly one `(` and one `)`");
    }
    Ok((s[..open].trim(), inner.trim()))
}

/// Parse STD text from `r`, feeding each line to `b`.
pub fn parse<S: FnMut(EventId, &Event)>(
    r: &mut impl BufRead,
    b: &mut Builder<'_, S>,
    first_line: u64,
) -> Result<(), LoadError> {
    let mut buf = Vec::with_capacity(256);
    let mut line = first_line;
    loop {
        line += 1;
        match read_line(r, &mut buf).map_err(|e| b.error(line, b"", format!("read error: {e}")))? {
            Line::Eof => return Ok(()),
            Line::TooLong => {
                return Err(b.error(
                    line,
                    b"",
                    format!("line longer than {MAX_LINE} bytes; expected one event per line"),
                ));
            }
            Line::Ok => {}
        }
        if is_blank_or_comment(&buf) {
            continue;
        }
        let text = std::str::from_utf8(&buf).map_err(|_| {
            b.error(
                line,
                &buf,
                "text is not valid UTF-8; expected UTF-8 `thread|op(target)|loc`",
            )
        })?;
        let mut parts = text.splitn(3, '|');
        let thread = parts.next().unwrap_or("").trim();
        let Some(optarget) = parts.next() else {
            return Err(b.error(line, &buf, "missing `|`; expected `thread|op(target)|loc`"));
        };
        let loc = parts.next().unwrap_or("").trim();
        let (op, target) = split_op_target(optarget).map_err(|p| b.error(line, &buf, p))?;
        b.push(line, &buf, thread, op, target, loc)?;
    }
}

/// Write `trace` in STD. Fails when a name cannot be represented.
pub fn write(trace: &Trace, out: &mut impl Write) -> anyhow::Result<()> {
    let n = &trace.names;
    for (i, ev) in trace.events.iter().enumerate() {
        let (t, tg, loc) = (n.thread(ev.thread), n.target(ev), n.loc(ev.loc));
        for (what, s) in [("thread", t), ("target", tg)] {
            if s.contains(['|', '(', ')', '\n', '\r']) || s.trim() != s {
                anyhow::bail!(
                    "event {i}: {what} name `{s}` cannot be written in STD (it contains `|`, `(`, `)`, a line break or edge spaces)"
                );
            }
        }
        if loc.contains(['\n', '\r']) || loc.trim() != loc {
            anyhow::bail!("event {i}: location `{loc}` cannot be written in STD");
        }
        writeln!(out, "{t}|{}({tg})|{loc}", ev.op.as_str())?;
    }
    Ok(())
}
