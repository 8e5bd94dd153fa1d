//! A byte-line reader with a length cap, so one huge line cannot exhaust memory.

use std::io::{BufRead, ErrorKind};

/// Longest line accepted, in bytes.
pub const MAX_LINE: usize = 1 << 20;

/// Outcome of reading one line.
pub enum Line {
    /// A line (without its terminator) is in the buffer.
    Ok,
    /// End of input.
    Eof,
    /// The line exceeded [`MAX_LINE`]; the rest of it was skipped.
    TooLong,
}

/// Read the next line into `buf` (cleared first), without `\n` or `\r\n`.
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        any = true;
        let (chunk, done) = match memchr::memchr(b'\n', avail) {
            Some(i) => (&avail[..i], Some(i + 1)),
            None => (avail, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(avail.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Line::TooLong);
    }
    if !any {
        return Ok(Line::Eof);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Line::Ok)
}

/// True for lines that carry no event: blank or `#` comments.
pub fn is_blank_or_comment(line: &[u8]) -> bool {
    let t = line.trim_ascii_start();
    t.is_empty() || t[0] == b'#'
}
