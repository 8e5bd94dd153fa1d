//! `--lenient`: skip the lines the loader rejects instead of failing, as
//! RAPID does, but never silently: they are counted and the first few named
//! on standard error.
//!
//! The strict loader stays the only judge of what is malformed or ill-formed
//! (a thread reused after its join, a release of a lock not held, ...): the
//! trace is loaded, the line it rejects is blanked out (blank lines hold no
//! event), and loading starts again, until it succeeds. The cleaned trace is
//! written to a temporary file that the command then reads. Each skipped line
//! costs one more pass over the trace, so at most [`MAX_SKIPPED`] lines are
//! skipped; event ids are positions in the cleaned trace.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::{Error, Result};
use tempfile::TempPath;

use crate::trace::{self, Format, LoadError};

/// Most lines `--lenient` skips before giving up.
pub(crate) const MAX_SKIPPED: usize = 1000;

/// Lines named on standard error.
const SHOWN: usize = 5;

/// A trace with its rejected lines blanked out.
pub struct Cleaned {
    /// The cleaned copy (removed when dropped).
    pub path: TempPath,
    /// Why each skipped line was rejected, in line order of discovery.
    pub skipped: Vec<LoadError>,
}

/// Reads `inner`, replacing the lines whose 1-based numbers are in `skip`
/// by empty lines (so every other line keeps its number).
struct BlankLines<'s, R> {
    inner: BufReader<R>,
    skip: &'s BTreeSet<u64>,
    line: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl<'s, R: Read> BlankLines<'s, R> {
    fn new(inner: R, skip: &'s BTreeSet<u64>) -> Self {
        BlankLines {
            inner: BufReader::with_capacity(1 << 16, inner),
            skip,
            line: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

impl<R: Read> Read for BlankLines<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            if self.skip.is_empty() || self.line >= *self.skip.last().unwrap() {
                // Past the last skipped line: plain copying.
                return self.inner.read(out);
            }
            if self.inner.read_until(b'\n', &mut self.buf)? == 0 {
                return Ok(0);
            }
            self.line += 1;
            if self.skip.contains(&self.line) {
                let ended = self.buf.ends_with(b"\n");
                self.buf.clear();
                if ended {
                    self.buf.push(b'\n');
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Load `path` (`-`: standard input), skipping rejected lines; None when
/// nothing had to be skipped and `path` can be read as it is.
pub fn clean(path: &Path, format: Option<Format>) -> Result<Option<Cleaned>> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string_lossy().into_owned()
    };
    // Standard input can be read once: keep a copy to read again.
    let stdin_copy = if path.as_os_str() == "-" {
        let mut tmp = tempfile::NamedTempFile::new().map_err(Error::io(
            "cannot create a temporary copy of standard input",
        ))?;
        io::copy(&mut io::stdin().lock(), &mut tmp)
            .map_err(Error::io("cannot copy standard input to a temporary file"))?;
        Some(tmp.into_temp_path())
    } else {
        None
    };
    let source: PathBuf = stdin_copy
        .as_ref()
        .map_or_else(|| path.to_path_buf(), |p| p.to_path_buf());
    let mut skip = BTreeSet::new();
    let mut skipped = Vec::new();
    loop {
        let file = File::open(&source).map_err(Error::io(format!("cannot open {name}")))?;
        match trace::load::stream_reader(&name, BlankLines::new(file, &skip), format, |_, _| {}) {
            Ok(_) => break,
            Err(e) if e.line > 0 && !skip.contains(&e.line) => {
                if skip.len() == MAX_SKIPPED {
                    report_skipped(&skipped);
                    return Err(Error::Usage(format!(
                        "--lenient: more than {MAX_SKIPPED} lines rejected; this does not look like a trace \
                         with a few bad lines (the next: {e})"
                    )));
                }
                skip.insert(e.line);
                skipped.push(e);
            }
            Err(mut e) => {
                // Said even when the loader gives up at last (every line
                // skipped leaves an empty trace): the skipped lines are
                // what the user has to look at.
                if !skipped.is_empty() {
                    report_skipped(&skipped);
                    let n = skipped.len();
                    e.problem = format!(
                        "{} (after --lenient skipped {n} line{})",
                        e.problem,
                        if n == 1 { "" } else { "s" }
                    );
                }
                return Err(e.into());
            }
        }
    }
    if skip.is_empty() && stdin_copy.is_none() {
        return Ok(None);
    }
    let mut out =
        tempfile::NamedTempFile::new().map_err(Error::io("cannot create the cleaned trace"))?;
    let file = File::open(&source).map_err(Error::io(format!("cannot open {name}")))?;
    io::copy(&mut BlankLines::new(file, &skip), &mut out)
        .map_err(Error::io("cannot write the cleaned trace"))?;
    Ok(Some(Cleaned {
        path: out.into_temp_path(),
        skipped,
    }))
}

/// Tell standard error what `--lenient` skipped (nothing when nothing was).
pub fn report(c: &Cleaned) {
    report_skipped(&c.skipped);
}

/// Tell standard error how many lines were skipped and name the first few.
fn report_skipped(skipped: &[LoadError]) {
    if skipped.is_empty() {
        return;
    }
    let n = skipped.len();
    eprintln!(
        "cprace: warning: --lenient skipped {n} malformed or ill-formed line{}{}",
        if n == 1 { "" } else { "s" },
        if n > SHOWN {
            format!("; the first {SHOWN}:")
        } else {
            ":".into()
        }
    );
    let mut first: Vec<&LoadError> = skipped.iter().collect();
    first.sort_by_key(|e| e.line);
    for e in first.into_iter().take(SHOWN) {
        eprintln!("  {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanked_lines_keep_the_numbering() {
        let text = b"a\nbb\nccc\r\ndddd";
        for (skip, want) in [
            (vec![], &b"a\nbb\nccc\r\ndddd"[..]),
            (vec![2], b"a\n\nccc\r\ndddd"),
            (vec![1, 3], b"\nbb\n\ndddd"),
            (vec![4], b"a\nbb\nccc\r\n"),
        ] {
            let skip: BTreeSet<u64> = skip.into_iter().collect();
            let mut out = Vec::new();
            BlankLines::new(&text[..], &skip)
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, want, "{skip:?}");
        }
    }
}
