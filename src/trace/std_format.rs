//! RAPID's STD format: `thread|op(target)|loc`, one event per line.

use std::io::{Read, Write};

use super::error::LoadError;
use super::lines::{for_each_line, is_blank_or_comment};
use super::model::{Event, EventId, Trace};
use super::validate::Builder;

/// Split `op(target)` into its two parts.
pub fn split_op_target(s: &str) -> Result<(&str, &str), &'static str> {
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

/// Parse STD text from `r`, feeding each line to `b`.
pub fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let file = b.file().to_string();
    for_each_line(&file, r, |line, text| {
        if is_blank_or_comment(text.as_bytes()) {
            return Ok(());
        }
        let err = |p: &str| LoadError::new(&file, line, text.as_bytes(), p);
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
        b.push(thread, op, target, loc).map_err(|p| err(&p))
    })
}

/// Why `name` cannot be written in STD, if it cannot.
fn std_problem(name: &str, is_loc: bool, is_thread: bool) -> Option<&'static str> {
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
pub fn write(trace: &Trace, out: &mut impl Write) -> anyhow::Result<()> {
    let n = &trace.names;
    for (what, table, is_loc) in [
        ("thread", &n.threads, false),
        ("lock", &n.locks, false),
        ("variable", &n.vars, false),
        ("location", &n.locs, true),
    ] {
        for name in table {
            if let Some(p) = std_problem(name, is_loc, what == "thread") {
                anyhow::bail!("{what} name `{name}` cannot be written in STD: it contains {p}");
            }
        }
    }
    let mut buf = Vec::with_capacity(1 << 16);
    for ev in &trace.events {
        buf.extend_from_slice(n.thread(ev.thread).as_bytes());
        buf.push(b'|');
        buf.extend_from_slice(ev.op.as_str().as_bytes());
        buf.push(b'(');
        buf.extend_from_slice(n.target(ev).as_bytes());
        buf.extend_from_slice(b")|");
        buf.extend_from_slice(n.loc(ev.loc).as_bytes());
        buf.push(b'\n');
        if buf.len() >= (1 << 16) - 1024 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()?;
    Ok(())
}
