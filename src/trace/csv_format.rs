//! cprace's CSV schema: a header naming at least `thread,op,target` (optional
//! `loc`, any order, extra columns ignored), then one event per row.

use std::io::{Read, Write};

use super::error::LoadError;
use super::model::{Event, EventId, Trace};
use super::validate::Builder;

/// Column positions found in the header.
struct Columns {
    thread: usize,
    op: usize,
    target: usize,
    loc: Option<usize>,
}

fn find_columns(header: &[String]) -> Option<Columns> {
    let pos = |name: &str| {
        header
            .iter()
            .position(|h| h.trim().eq_ignore_ascii_case(name))
    };
    Some(Columns {
        thread: pos("thread")?,
        op: pos("op")?,
        target: pos("target")?,
        loc: pos("loc"),
    })
}

/// True when a header row names the columns this format needs.
pub fn is_header(cells: &[String]) -> bool {
    find_columns(cells).is_some()
}

fn record_text(rec: &csv::ByteRecord) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, f) in rec.iter().enumerate() {
        if i > 0 {
            v.push(b',');
        }
        v.extend_from_slice(f);
    }
    v
}

fn csv_error<S: FnMut(EventId, &Event)>(b: &Builder<'_, S>, e: csv::Error) -> LoadError {
    let line = e.position().map_or(0, |p| p.line());
    match e.kind() {
        csv::ErrorKind::Io(io) => b.error(line, b"", format!("read error: {io}")),
        _ => b.error(line, b"", format!("malformed CSV: {e}")),
    }
}

/// A CSV reader configured the same way for this format and RAPID's.
pub fn reader<R: Read>(r: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .buffer_capacity(1 << 16)
        .from_reader(r)
}

/// Parse our CSV schema from `r`.
pub fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let mut rdr = reader(r);
    let mut rec = csv::ByteRecord::new();
    let mut cols: Option<Columns> = None;
    let mut need = 0usize;
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(b, e)),
        }
        let line = rec.position().map_or(0, |p| p.line());
        if rec.iter().all(|f| f.trim_ascii().is_empty()) {
            continue;
        }
        let Some(c) = &cols else {
            let cells: Vec<String> = rec
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            let c = find_columns(&cells).ok_or_else(|| {
                b.error(line, &record_text(&rec), "header does not name the columns `thread`, `op` and `target`; expected a header such as `thread,op,target,loc`")
            })?;
            need = 1 + [c.thread, c.op, c.target, c.loc.unwrap_or(0)]
                .into_iter()
                .max()
                .unwrap_or(0);
            cols = Some(c);
            continue;
        };
        if rec.len() < need {
            return Err(b.error(
                line,
                &record_text(&rec),
                format!(
                    "row has {} columns; expected at least {need} as named in the header",
                    rec.len()
                ),
            ));
        }
        let field = |i: usize| -> Result<&str, LoadError> {
            std::str::from_utf8(&rec[i]).map(str::trim).map_err(|_| {
                b.error(
                    line,
                    &record_text(&rec),
                    "text is not valid UTF-8; expected UTF-8 fields",
                )
            })
        };
        let thread = field(c.thread)?;
        let op = field(c.op)?;
        let target = field(c.target)?;
        let loc = match c.loc {
            Some(i) => field(i)?,
            None => "",
        };
        let text = record_text(&rec);
        b.push(line, &text, thread, op, target, loc)?;
    }
    if cols.is_none() {
        return Err(b.error(
            0,
            b"",
            "no header row; expected a header such as `thread,op,target,loc`",
        ));
    }
    Ok(())
}

/// Write `trace` in our CSV schema (quoting where needed; lossless).
pub fn write(trace: &Trace, out: &mut impl Write) -> anyhow::Result<()> {
    let mut w = csv::WriterBuilder::new().from_writer(out);
    w.write_record(["thread", "op", "target", "loc"])?;
    let n = &trace.names;
    for ev in &trace.events {
        w.write_record([
            n.thread(ev.thread),
            ev.op.as_str(),
            n.target(ev),
            n.loc(ev.loc),
        ])?;
    }
    w.flush()?;
    Ok(())
}
