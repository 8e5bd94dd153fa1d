//! The line reader every text format shares: reads large blocks, checks UTF-8
//! once per block (not per line), caps line length so one huge line cannot
//! exhaust memory, and numbers lines for error messages.

use std::io::{self, ErrorKind, Read, Write};

use super::error::LoadError;
use super::model::Event;

/// Longest line accepted, in bytes.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Bytes asked of the reader at a time.
const CHUNK: usize = 1 << 18;

/// True for lines that carry no event: blank or `#` comments.
pub(crate) fn is_blank_or_comment(line: &[u8]) -> bool {
    let t = line.trim_ascii_start();
    t.is_empty() || t[0] == b'#'
}

/// Strip one trailing `\r` (CRLF input).
fn strip_cr(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

/// Read `r` to the end, calling `f(line_number, line)` for each line (1-based
/// numbers, terminators removed, a leading UTF-8 byte-order mark dropped).
/// Stops at the first error `f` returns. Lines that are not UTF-8 or longer
/// than [`MAX_LINE`] are errors naming `file`, unless an earlier line failed.
pub(crate) fn for_each_line(
    file: &str,
    r: impl Read,
    mut f: impl FnMut(u64, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    for_each_block(file, r, |line_no, block| {
        lines(file, block, line_no, &mut f)
    })
}

/// Read `r` to the end in blocks of whole lines (UTF-8 checked, a leading
/// byte-order mark dropped), calling `g(line_no, block)`; `g` must advance
/// `line_no` by the number of lines it consumes (see [`next_line`]) and report
/// lines longer than [`MAX_LINE`]. The last block may lack a final `\n`.
/// For parsers that scan a block in one pass instead of line by line.
pub(crate) fn for_each_block(
    file: &str,
    mut r: impl Read,
    mut g: impl FnMut(&mut u64, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    let mut buf: Vec<u8> = vec![0; CHUNK];
    // Unprocessed bytes are buf[start..end].
    let (mut start, mut end) = (0usize, 0usize);
    let mut line_no = 0u64;
    let mut first = true;
    loop {
        // Make room: move the partial line to the front, grow for long lines.
        if start > 0 {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if buf.len() - end < CHUNK / 2 {
            buf.resize(end + CHUNK, 0);
        }
        let n = loop {
            match r.read(&mut buf[end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(LoadError::new(
                        file,
                        line_no + 1,
                        b"",
                        format!("read error: {e}"),
                    ));
                }
            }
        };
        let eof = n == 0;
        end += n;
        if first {
            if end < 3 && !eof {
                continue;
            }
            first = false;
            if buf[..end].starts_with(b"\xEF\xBB\xBF") {
                start = 3;
            }
        }
        // Process every complete line (all of them at the end of input).
        let data = &buf[start..end];
        let complete = if eof {
            data.len()
        } else {
            match memchr::memrchr(b'\n', data) {
                Some(i) => i + 1,
                None => {
                    if data.len() > MAX_LINE {
                        return Err(too_long(file, line_no + 1, data));
                    }
                    continue;
                }
            }
        };
        utf8_block(file, &data[..complete], &mut line_no, &mut g)?;
        start += complete;
        if eof {
            return Ok(());
        }
    }
}

/// Hand the whole lines of `block` to `g` (see [`for_each_block`]) once they
/// are checked to be UTF-8; when they are not, the lines before the bad one
/// first (an earlier error wins), then the error naming it.
pub fn utf8_block(
    file: &str,
    block: &[u8],
    line_no: &mut u64,
    g: &mut impl FnMut(&mut u64, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    match std::str::from_utf8(block) {
        Ok(s) => g(line_no, s),
        Err(e) => {
            let bad = e.valid_up_to();
            let line_start = memchr::memrchr(b'\n', &block[..bad]).map_or(0, |i| i + 1);
            let good = std::str::from_utf8(&block[..line_start]).unwrap_or("");
            g(line_no, good)?;
            let rest = &block[line_start..];
            let line = strip_cr(memchr::memchr(b'\n', rest).map_or(rest, |i| &rest[..i]));
            Err(LoadError::new(
                file,
                *line_no + 1,
                line,
                format!(
                    "byte {} of the line is not valid UTF-8; expected UTF-8 text",
                    bad - line_start + 1
                ),
            ))
        }
    }
}

pub(crate) fn too_long(file: &str, line: u64, text: &[u8]) -> LoadError {
    LoadError::new(
        file,
        line,
        &text[..text.len().min(200)],
        format!("line is longer than {MAX_LINE} bytes; expected one event per line"),
    )
}

/// Feed the lines of a valid UTF-8 block to `f`.
fn lines(
    file: &str,
    s: &str,
    line_no: &mut u64,
    f: &mut impl FnMut(u64, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    let mut pos = 0;
    while pos < s.len() {
        let (line, next) = next_line(file, s, pos, line_no)?;
        f(*line_no, line)?;
        pos = next;
    }
    Ok(())
}

/// The line of `block` starting at byte `pos` (terminator removed) and where
/// the next one starts; counts it in `line_no` and rejects it when it is longer
/// than [`MAX_LINE`].
pub(crate) fn next_line<'s>(
    file: &str,
    block: &'s str,
    pos: usize,
    line_no: &mut u64,
) -> Result<(&'s str, usize), LoadError> {
    let bytes = block.as_bytes();
    let (end, next) = match memchr::memchr(b'\n', &bytes[pos..]) {
        Some(i) => (pos + i, pos + i + 1),
        None => (bytes.len(), bytes.len()),
    };
    *line_no += 1;
    let raw = &bytes[pos..end];
    if raw.len() > MAX_LINE {
        return Err(too_long(file, *line_no, raw));
    }
    let len = strip_cr(raw).len();
    // `\n` and `\r` are ASCII, so these are char boundaries.
    Ok((&block[pos..pos + len], next))
}

/// Write `header`, then one line per event to `out`: `row` appends an
/// event's line (with its `\n`) to a buffer written out in blocks of about
/// 64 KiB, then flush. The writers of every format share it.
pub(crate) fn write_lines(
    out: &mut impl Write,
    header: &[u8],
    events: &[Event],
    mut row: impl FnMut(&mut Vec<u8>, &Event),
) -> io::Result<()> {
    const BLOCK: usize = 1 << 16;
    let mut buf = Vec::with_capacity(BLOCK);
    buf.extend_from_slice(header);
    for ev in events {
        row(&mut buf, ev);
        if buf.len() >= BLOCK - 1024 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8]) -> Result<Vec<(u64, String)>, LoadError> {
        let mut v = Vec::new();
        for_each_line("f", input, |n, l| {
            v.push((n, l.to_string()));
            Ok(())
        })?;
        Ok(v)
    }

    #[test]
    fn splits_lines_crlf_bom_and_last_line() {
        let v = collect(b"\xEF\xBB\xBFa\r\nb\n\nc").unwrap();
        assert_eq!(
            v,
            vec![
                (1, "a".into()),
                (2, "b".into()),
                (3, "".into()),
                (4, "c".into())
            ]
        );
        assert!(collect(b"").unwrap().is_empty());
    }

    #[test]
    fn lines_across_chunk_boundaries() {
        let mut text = String::new();
        for i in 0..100_000 {
            text.push_str(&format!("line{i}\n"));
        }
        let v = collect(text.as_bytes()).unwrap();
        assert_eq!(v.len(), 100_000);
        assert_eq!(v[99_999], (100_000, "line99999".to_string()));
    }

    #[test]
    fn bad_utf8_reports_its_line_after_earlier_lines() {
        let e = collect(b"ok\nalso ok\nbad \xFF here\nnext\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.problem.contains("byte 5"), "{e}");
        // A later bad line does not hide an earlier error from `f`.
        let e = for_each_line("f", &b"x\ny\n\xFF\n"[..], |n, _| {
            if n == 2 {
                Err(LoadError::new("f", n, b"y", "boom"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!((e.line, e.problem.as_str()), (2, "boom"));
    }

    #[test]
    fn long_lines_are_errors() {
        let mut text = b"a\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend_from_slice(b"\nb\n");
        let e = collect(&text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("longer than"));
        // Without a final newline too.
        let e = collect(&text[..text.len() - 3]).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
