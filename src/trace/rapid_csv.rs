//! RAPID's CSV format: one column per thread and exactly one filled cell per row,
//! holding `op(target)`. An optional first row of thread names is a header;
//! without one, column `i` is thread `T{i}`. There are no locations.

use std::io::{Read, Write};

use super::csv_format::{Splitter, push_field};
use super::error::LoadError;
use super::lines::{for_each_line, is_blank_or_comment, write_lines};
use super::model::{Event, EventId, Trace};
use super::std_format::split_op_target;
use super::validate::Builder;

/// Parse RAPID CSV from `r`.
pub(crate) fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let file = b.file();
    let mut names: Option<Vec<String>> = None;
    let mut first = true;
    let mut sp = Splitter::default();
    let mut thread_name = String::new();
    for_each_line(file, r, |line, text| {
        if is_blank_or_comment(text.as_bytes()) {
            return Ok(());
        }
        let err = |p: &str| LoadError::new(file, line, text.as_bytes(), p);
        sp.split(text).map_err(err)?;
        if sp.all_empty() {
            return Ok(());
        }
        if first {
            first = false;
            // A first row without parentheses names the threads.
            if !text.contains(['(', ')']) {
                names = Some(
                    (0..sp.len())
                        .map(|i| sp.field(text, i).to_string())
                        .collect(),
                );
                return Ok(());
            }
        }
        let mut filled = (0..sp.len()).filter(|&i| !sp.field(text, i).is_empty());
        let Some(col) = filled.next() else {
            return Ok(());
        };
        if let Some(other) = filled.next() {
            return Err(err(&format!(
                "cells in columns {} and {} are both filled; expected exactly one filled cell (one event) per row",
                col + 1,
                other + 1
            )));
        }
        let thread = match &names {
            Some(n) => match n.get(col) {
                Some(name) if !name.is_empty() => name.as_str(),
                _ => {
                    return Err(err(&format!(
                        "the filled cell is in column {} but the header names no thread there; expected a cell under one of the {} thread names",
                        col + 1,
                        n.iter().filter(|s| !s.is_empty()).count()
                    )));
                }
            },
            None => {
                use std::fmt::Write as _;
                thread_name.clear();
                let _ = write!(thread_name, "T{col}");
                thread_name.as_str()
            }
        };
        let (op, target) = split_op_target(sp.field(text, col))
            .map_err(|p| err(&format!("{p} (in a RAPID CSV cell)")))?;
        b.push(thread, op, target, "").map_err(|p| err(&p))
    })
}

/// Write `trace` as RAPID CSV: a header row of thread names, then one row per
/// event with the cell `op(target)` in its thread's column. Locations are lost
/// (the format has none). Fails when a name cannot be represented.
pub fn write(trace: &Trace, out: &mut impl Write) -> crate::Result<()> {
    let n = &trace.names;
    for (what, table) in [
        ("thread", &n.threads),
        ("lock", &n.locks),
        ("variable", &n.vars),
    ] {
        for name in table {
            if name.contains(['(', ')', '\n', '\r']) || name.trim_ascii() != name {
                return Err(crate::Error::Usage(format!(
                    "{what} name `{name}` cannot be written in RAPID CSV: it contains `(`, `)`, a line break or edge spaces"
                )));
            }
        }
    }
    if n.threads.is_empty() {
        return Err(crate::Error::Usage(
            "an empty trace cannot be written in RAPID CSV (it would be an empty file)".into(),
        ));
    }
    let mut header = Vec::new();
    for (i, t) in n.threads.iter().enumerate() {
        if i > 0 {
            header.push(b',');
        }
        push_field(&mut header, &t, i == 0);
    }
    header.push(b'\n');
    let mut cell = String::new();
    write_lines(out, &header, &trace.events, |buf, ev| {
        cell.clear();
        cell.push_str(ev.op.as_str());
        cell.push('(');
        cell.push_str(&n.target(ev));
        cell.push(')');
        for i in 0..n.threads.len() as u32 {
            if i > 0 {
                buf.push(b',');
            }
            if i == ev.thread {
                push_field(buf, &cell, i == 0);
            }
        }
        buf.push(b'\n');
    })?;
    Ok(())
}
