//! Format detection and dispatch: the one entry point for reading traces.

use std::fs::File;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use super::error::LoadError;
use super::model::{Event, EventId, LoadStats, Names, Trace};
use super::recorded::Recording;
use super::validate::{Builder, Check};
use super::{cprace_bin, csv_format, rapid_bin, rapid_csv, std_format};

/// Input trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// cprace's CSV schema (`thread,op,target,loc` header).
    Csv,
    /// RAPID's STD format (`thread|op(target)|loc`).
    Std,
    /// RAPID's CSV format (one column per thread).
    RapidCsv,
    /// RAPID's binary format (RapidBin), with cprace's side file of names
    /// (`TRACE.names.json`) when present.
    #[cfg_attr(feature = "clap", value(name = "rapidbin"))]
    RapidBin,
    /// cprace's binary format (what `cprace record` writes): numeric ids,
    /// byte masks, call stacks and what reports describe.
    Cprace,
}

/// How much of the input detection may look at.
const PEEK: usize = 1 << 16;

/// The first significant (not blank, not comment) lines of `prefix`, lossily
/// decoded, with their 1-based line numbers.
fn significant_lines(prefix: &[u8]) -> impl Iterator<Item = (u64, String)> + '_ {
    let prefix = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(prefix);
    prefix
        .split(|&c| c == b'\n')
        .enumerate()
        .filter(|(_, l)| !super::lines::is_blank_or_comment(l))
        .map(|(i, l)| (i as u64 + 1, String::from_utf8_lossy(l).trim().to_string()))
}

/// Where the first significant line of `prefix` ends (its `\n`), if it does.
fn first_line_end(prefix: &[u8]) -> Option<usize> {
    let mut start = 0;
    while start < prefix.len() {
        let end = memchr::memchr(b'\n', &prefix[start..]).map(|i| start + i);
        if !super::lines::is_blank_or_comment(&prefix[start..end.unwrap_or(prefix.len())]) {
            return end;
        }
        start = end? + 1;
    }
    None
}

/// Guess the format from the first significant lines of the input. Decides on
/// the first line's shape alone where it can, so that a malformed first line
/// gets the format's own precise error rather than "cannot detect".
pub fn detect(prefix: &[u8]) -> Option<Format> {
    let mut lines = significant_lines(prefix).map(|(_, l)| l);
    let first = lines.next()?;
    if first.contains('|') {
        return Some(Format::Std);
    }
    let cells: Vec<String> = first
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    if csv_format::looks_like_header(&cells) {
        return Some(Format::Csv);
    }
    if first.contains(['(', ')']) {
        return Some(Format::RapidCsv);
    }
    // A RAPID CSV header of thread names, then event cells.
    let second = lines.next()?;
    if second.contains(['(', ')']) {
        return Some(Format::RapidCsv);
    }
    None
}

fn open(path: &Path, name: &str) -> Result<Box<dyn Read + Send>, LoadError> {
    if path.as_os_str() == "-" {
        // Not locked: a decoder thread may read it.
        crate::pipe::grow_pipe(0);
        return Ok(Box::new(std::io::stdin()));
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
/// in memory beyond a small read buffer. gzip, zstd and xz input (recognised by
/// its magic bytes, whatever the file is called) is decompressed on a thread of
/// its own; the format is then detected on the decompressed text.
pub fn stream(
    path: &Path,
    format: Option<Format>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    stream_checked(path, format, None, sink)
}

/// [`stream`], also handing `retire` the variables a recorded program's
/// trace retires (see [`super::cprace_bin::RETIRE`]), each batch between
/// the events before it and those after; other formats retire none.
pub(crate) fn stream_retiring(
    path: &Path,
    format: Option<Format>,
    sink: impl FnMut(EventId, &Event),
    retire: cprace_bin::Retire<'_>,
) -> Result<(Names, LoadStats, Format), LoadError> {
    stream_with(path, format, None, Some(retire), sink)
}

/// [`stream`], failing on the first event `check` refuses (with the file and
/// line, like a malformed line).
pub(crate) fn stream_checked(
    path: &Path,
    format: Option<Format>,
    check: Option<Check<'_>>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    stream_with(path, format, check, None, sink)
}

/// [`stream`] with an event check and a retirement hook.
fn stream_with(
    path: &Path,
    format: Option<Format>,
    check: Option<Check<'_>>,
    retire: Option<cprace_bin::Retire<'_>>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    let (name, input, side, busy) = open_trace(path)?;
    read(
        (&name, input, busy),
        format,
        side.as_deref(),
        check,
        (None, retire),
        sink,
    )
}

/// `path` opened for reading (`-` is standard input) and decompressed: its
/// name for errors, the input, where a RapidBin side file would be, and the
/// threads that keep a core busy feeding it (1 for a decompressor).
fn open_trace(path: &Path) -> Result<(String, impl Read, Option<PathBuf>, usize), LoadError> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string_lossy().into_owned()
    };
    let input = open(path, &name)?;
    let (input, compression) = super::decompress::open(input)
        .map_err(|e| LoadError::new(&name, 0, b"", format!("read error: {e}")))?;
    let side = (path.as_os_str() != "-").then(|| rapid_bin::side_path(path));
    Ok((name, input, side, usize::from(compression.is_some())))
}

/// Like [`stream`], reading from any reader; `name` is used in errors.
pub fn stream_reader(
    name: &str,
    input: impl Read,
    format: Option<Format>,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    read((name, input, 0), format, None, None, (None, None), sink)
}

/// `sink` with the progress hook, called once per block of 65,536 events.
pub(crate) fn counted(mut sink: impl FnMut(EventId, &Event)) -> impl FnMut(EventId, &Event) {
    move |id: EventId, ev: &Event| {
        if id & 0xFFFF == 0 {
            crate::progress::events_read(u64::from(id));
        }
        sink(id, ev)
    }
}

/// Detect the format of `input` (named `name` in errors; `busy` threads
/// keep a core busy feeding it) and parse it; a RapidBin input takes its
/// names from the side file `side` when that exists.
fn read(
    (name, mut input, busy): (&str, impl Read, usize),
    format: Option<Format>,
    side: Option<&Path>,
    check: Option<Check<'_>>,
    (rec, retire): (
        Option<(&mut Recording, bool)>,
        Option<cprace_bin::Retire<'_>>,
    ),
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format), LoadError> {
    // Read enough to see the first significant line whole (detection decides
    // on it), but never more than one maximal line plus a block.
    let mut prefix = Vec::with_capacity(PEEK);
    let mut eof = false;
    while !eof && first_line_end(&prefix).is_none() && prefix.len() <= super::lines::MAX_LINE {
        let before = prefix.len();
        (&mut input)
            .take(PEEK as u64)
            .read_to_end(&mut prefix)
            .map_err(|e| LoadError::new(name, 0, b"", format!("read error: {e}")))?;
        eof = prefix.len() - before < PEEK;
        // Binary: no lines to look for.
        if format.map_or(
            rapid_bin::looks_like(&prefix) || cprace_bin::looks_like(&prefix),
            |f| matches!(f, Format::RapidBin | Format::Cprace),
        ) {
            break;
        }
    }
    if format.map_or(cprace_bin::looks_like(&prefix), |f| f == Format::Cprace) {
        let (rec, keep) = match rec {
            Some((r, k)) => (Some(r), k),
            None => (None, false),
        };
        crate::progress::start_reading();
        let mut b = Builder::new(name, counted(sink)).with_check(check);
        cprace_bin::parse(Cursor::new(prefix).chain(input), &mut b, rec, keep, retire)?;
        crate::progress::done_reading(b.count());
        let (names, stats) = b.finish();
        return Ok((names, stats, Format::Cprace));
    }
    if format.map_or(rapid_bin::looks_like(&prefix), |f| f == Format::RapidBin) {
        let side = match side.filter(|p| p.is_file()) {
            Some(p) => Some(rapid_bin::SideNames::read(p)?),
            None => None,
        };
        crate::progress::start_reading();
        let mut b = Builder::new(name, counted(sink)).with_check(check);
        rapid_bin::parse(Cursor::new(prefix).chain(input), side.as_ref(), &mut b)?;
        crate::progress::done_reading(b.count());
        let (names, stats) = b.finish();
        return Ok((names, stats, Format::RapidBin));
    }
    if eof && prefix.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(LoadError::new(
            name,
            0,
            b"",
            "empty input; expected a trace (CSV with a `thread,op,target` header, STD `thread|op(target)|loc` lines or RAPID CSV)",
        ));
    }
    if format.is_none() && !eof && first_line_end(&prefix).is_none() {
        let err = match significant_lines(&prefix).next() {
            Some((line, text)) => LoadError::new(
                name,
                line,
                &text.as_bytes()[..text.len().min(200)],
                format!(
                    "line is longer than {} bytes; expected one event per line",
                    super::lines::MAX_LINE
                ),
            ),
            None => LoadError::new(
                name,
                0,
                b"",
                format!(
                    "only blank lines and `#` comments in the first {} bytes; cannot detect the format (pass --input-format)",
                    prefix.len()
                ),
            ),
        };
        return Err(err);
    }
    let format = match format {
        Some(f) => f,
        None => detect(&prefix).ok_or_else(|| match significant_lines(&prefix).next() {
            None => LoadError::new(
                name,
                0,
                b"",
                "no events: only blank lines and `#` comments; expected a trace (CSV with a `thread,op,target` header, STD or RAPID CSV)",
            ),
            Some((line, text)) => LoadError::new(
                name,
                line,
                text.as_bytes(),
                "cannot detect the trace format; expected a CSV header naming `thread,op,target`, an STD line `thread|op(target)|loc` or RAPID CSV cells `op(target)` (or pass --input-format)",
            ),
        })?,
    };
    let reader = Cursor::new(prefix).chain(input);
    crate::progress::start_reading();
    let mut b = Builder::new(name, counted(sink)).with_check(check);
    match format {
        Format::Std => std_format::parse(reader, &mut b, busy)?,
        Format::Csv => csv_format::parse(reader, &mut b)?,
        Format::RapidCsv | Format::RapidBin | Format::Cprace => rapid_csv::parse(reader, &mut b)?,
    }
    crate::progress::done_reading(b.count());
    let (names, stats) = b.finish();
    Ok((names, stats, format))
}

/// Load a whole trace into memory (16 bytes per event plus name tables).
pub fn load(path: &Path, format: Option<Format>) -> Result<Trace, LoadError> {
    load_checked(path, format, None)
}

/// [`load`], failing on the first event `check` refuses.
pub(crate) fn load_checked(
    path: &Path,
    format: Option<Format>,
    check: Option<Check<'_>>,
) -> Result<Trace, LoadError> {
    crate::progress::phase("loading");
    let mut events = Vec::new();
    let (names, stats, _) = stream_checked(path, format, check, |_, ev| events.push(*ev))?;
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

/// The call stacks of a recorded program's trace (cprace's binary format,
/// read in a pass of its own); None for other formats and for standard
/// input, which cannot be read again. Only the first bytes of any other
/// file are read.
pub fn recorded_stacks(
    path: &Path,
    format: Option<Format>,
) -> Result<Option<Recording>, LoadError> {
    if !carries_stacks(path, format) {
        return Ok(None);
    }
    Ok(Some(stream_recorded(path, format, true, |_, _| {})?.3))
}

/// Whether `path` is a recorded program's trace carrying call stacks
/// (cprace's binary format) that can be read again: never standard input.
/// Only the file's first bytes are read.
pub fn carries_stacks(path: &Path, format: Option<Format>) -> bool {
    if path.as_os_str() == "-" {
        return false;
    }
    match format {
        Some(f) => f == Format::Cprace,
        None => {
            let mut prefix = [0u8; 16];
            let n = File::open(path)
                .and_then(|mut f| f.read(&mut prefix))
                .unwrap_or(0);
            cprace_bin::looks_like(&prefix[..n])
        }
    }
}

/// [`stream`], also returning what a recorded program's trace carries
/// beside its events (empty for other formats); with `keep_stacks`, the
/// stack of every event too.
pub fn stream_recorded(
    path: &Path,
    format: Option<Format>,
    keep_stacks: bool,
    sink: impl FnMut(EventId, &Event),
) -> Result<(Names, LoadStats, Format, Recording), LoadError> {
    let (name, input, side, busy) = open_trace(path)?;
    let mut rec = Recording::default();
    let (names, stats, format) = read(
        (&name, input, busy),
        format,
        side.as_deref(),
        None,
        (Some((&mut rec, keep_stacks)), None),
        sink,
    )?;
    Ok((names, stats, format, rec))
}

/// [`load`], also returning what a recorded program's trace carries beside
/// its events, the stack of every event included.
pub fn load_recorded(path: &Path, format: Option<Format>) -> Result<(Trace, Recording), LoadError> {
    crate::progress::phase("loading");
    let mut events = Vec::new();
    let (names, stats, _, rec) = stream_recorded(path, format, true, |_, ev| events.push(*ev))?;
    events.shrink_to_fit();
    Ok((
        Trace {
            events,
            names,
            stats,
        },
        rec,
    ))
}
