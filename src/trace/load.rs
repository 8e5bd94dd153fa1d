//! Format detection and dispatch: the one entry point for reading traces.

use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::Path;

use super::error::LoadError;
use super::model::{Event, EventId, LoadStats, Names, Trace};
use super::validate::Builder;
use super::{csv_format, rapid_csv, std_format};

/// Input trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// cprace's CSV schema (`thread,op,target,loc` header).
    Csv,
    /// RAPID's STD format (`thread|op(target)|loc`).
    Std,
    /// RAPID's CSV format (one column per thread).
    RapidCsv,
}

/// How much of the input detection may look at.
const PEEK: usize = 1 << 16;

/// Guess the format from the first significant lines of the input.
pub fn detect(prefix: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(prefix);
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines.next()?;
    if let Some((_, rest)) = first.split_once('|') {
        let op = rest.split('|').next().unwrap_or("");
        if std_format::split_op_target(op).is_ok() {
            return Some(Format::Std);
        }
    }
    let cells: Vec<String> = first
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    if csv_format::is_header(&cells) {
        return Some(Format::Csv);
    }
    if cells.iter().any(|c| rapid_csv::looks_like_event(c)) {
        return Some(Format::RapidCsv);
    }
    let second = lines.next()?;
    if second.split(',').any(rapid_csv::looks_like_event) {
        return Some(Format::RapidCsv);
    }
    None
}

fn open(path: &Path, name: &str) -> Result<Box<dyn Read>, LoadError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let f =
        File::open(path).map_err(|e| LoadError::new(name, 0, b"", format!("cannot open: {e}")))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(LoadError::new(
            name,
            0,
            b"",
            "is a directory; expected a trace file",
        ));
    }
    Ok(Box::new(f))
}

/// Stream the events of `path` (`-` is standard input) to `sink`, validating as it
/// goes. Returns the name tables, counters and the format read. Holds no raw text
/// in memory beyond a small read buffer.
pub fn stream(
    path: &Path,
    format: Option<Format>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string_lossy().into_owned()
    };
    let input = open(path, &name)?;
    stream_reader(&name, input, format, sink)
}

/// Like [`stream`], reading from any reader; `name` is used in errors.
pub fn stream_reader(
    name: &str,
    mut input: impl Read,
    format: Option<Format>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    let mut prefix = Vec::with_capacity(PEEK);
    (&mut input)
        .take(PEEK as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| LoadError::new(name, 0, b"", format!("read error: {e}")))?;
    if prefix.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(LoadError::new(
            name,
            0,
            b"",
            "empty input; expected a trace (CSV with a `thread,op,target` header, STD or RAPID CSV)",
        ));
    }
    let format = match format {
        Some(f) => f,
        None => detect(&prefix).ok_or_else(|| {
            let significant = prefix.split(|&c| c == b'\n').position(|l| !super::lines::is_blank_or_comment(l)).unwrap_or(0);
            let first = prefix.split(|&c| c == b'\n').nth(significant).unwrap_or(b"");
            LoadError::new(name, 1 + significant as u64, first, "cannot detect the trace format; expected a CSV header `thread,op,target[,loc]`, an STD line `thread|op(target)|loc` or RAPID CSV cells `op(target)` (or pass --input-format)")
        })?,
    };
    let mut reader = BufReader::with_capacity(1 << 16, Cursor::new(prefix).chain(input));
    let mut b = Builder::new(name, sink);
    match format {
        Format::Std => std_format::parse(&mut reader, &mut b, 0)?,
        Format::Csv => csv_format::parse(reader, &mut b)?,
        Format::RapidCsv => rapid_csv::parse(reader, &mut b)?,
    }
    let (names, stats) = b.finish();
    Ok((names, stats, format))
}

/// Load a whole trace into memory (16 bytes per event plus name tables).
pub fn load(path: &Path, format: Option<Format>) -> Result<Trace, LoadError> {
    let mut events = Vec::new();
    let (names, stats, _) = stream(path, format, |_, ev| events.push(*ev))?;
    events.shrink_to_fit();
    Ok(Trace {
        events,
        names,
        stats,
    })
}

/// Load a trace from in-memory text (tests, generated traces).
pub fn load_str(text: &str, format: Option<Format>) -> Result<Trace, LoadError> {
    let mut events = Vec::new();
    let (names, stats, _) = stream_reader("<string>", text.as_bytes(), format, |_, ev| {
        events.push(*ev)
    })?;
    Ok(Trace {
        events,
        names,
        stats,
    })
}
