//! Compressed inputs: gzip, zstd and xz, recognised by their magic bytes and
//! decompressed on a thread of their own.
//!
//! The decoder thread hands blocks of decompressed bytes to the parser over a
//! bounded channel, so decompression and parsing run side by side (on two
//! cores a gzip trace loads about as fast as the slower of the two) and
//! memory stays a few blocks whatever the trace's size.

use std::io::{self, BufRead, BufReader, Cursor, ErrorKind, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// A compression format cprace reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    /// gzip (RFC 1952), including concatenated members (`cat a.gz b.gz`).
    Gzip,
    /// Zstandard, including concatenated frames.
    Zstd,
    /// xz, including concatenated streams.
    Xz,
}

impl Compression {
    /// The format's usual name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }

    /// The compression whose magic bytes start `prefix`, if any. Needs at
    /// least [`MAGIC_LEN`] bytes unless the input is shorter.
    pub(crate) fn sniff(prefix: &[u8]) -> Option<Compression> {
        if prefix.starts_with(&[0x1F, 0x8B]) {
            Some(Compression::Gzip)
        } else if prefix.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
            Some(Compression::Zstd)
        } else if prefix.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else {
            None
        }
    }
}

/// Bytes [`Compression::sniff`] looks at.
pub(crate) const MAGIC_LEN: usize = 6;

/// Decompressed bytes handed over at a time. Blocks are recycled once read,
/// but the first `IN_FLIGHT + 2` are new memory, zeroed and faulted in,
/// which a small trace pays in full: at 256 KB the Java Grande `series`
/// (1.4 MB) took 1,147 page faults and 13.9 ms (`deadlocks` of its `.xz`,
/// median of 31 runs), at 64 KB 910 and 11.0 ms; large traces unchanged.
const BLOCK: usize = 1 << 16;
/// Blocks in flight between the decoder and the parser.
const IN_FLIGHT: usize = 4;

/// Read up to `n` bytes of `r` (fewer only at end of input).
fn read_prefix(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// `input` as it should be parsed: decompressed on a thread of its own when
/// its first bytes are a gzip, zstd or xz magic number, unchanged otherwise.
/// Returns the reader and the compression found.
pub(crate) fn open(
    mut input: Box<dyn Read + Send>,
) -> io::Result<(Box<dyn Read>, Option<Compression>)> {
    let magic = read_prefix(&mut input, MAGIC_LEN)?;
    let kind = Compression::sniff(&magic);
    let raw = Cursor::new(magic).chain(input);
    let Some(kind) = kind else {
        return Ok((Box::new(raw), None));
    };
    // The decoders read in small pieces: buffer the compressed side.
    let raw = Counted {
        inner: BufReader::with_capacity(1 << 16, raw),
        pos: 0,
    };
    let decoder = Concatenated {
        kind,
        member: Some(Member::new(kind, raw)?),
    };
    Ok((
        Box::new(Threaded::spawn(Box::new(decoder), kind)),
        Some(kind),
    ))
}

/// A buffered reader counting the bytes consumed: where trailing data starts.
struct Counted<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.pos += n as u64;
        self.inner.consume(n);
    }
}

/// One gzip member, zstd frame or xz stream being decoded; each decoder
/// consumes exactly its own bytes, so what follows it can be told apart.
enum Member<R: BufRead> {
    Gzip(flate2::bufread::GzDecoder<R>),
    Zstd(zstd::stream::read::Decoder<'static, R>),
    Xz(liblzma::bufread::XzDecoder<R>),
}

impl<R: BufRead> Member<R> {
    fn new(kind: Compression, r: R) -> io::Result<Self> {
        Ok(match kind {
            Compression::Gzip => Member::Gzip(flate2::bufread::GzDecoder::new(r)),
            Compression::Zstd => {
                Member::Zstd(zstd::stream::read::Decoder::with_buffer(r)?.single_frame())
            }
            Compression::Xz => Member::Xz(liblzma::bufread::XzDecoder::new(r)),
        })
    }

    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Member::Gzip(d) => d.read(out),
            Member::Zstd(d) => d.read(out),
            Member::Xz(d) => d.read(out),
        }
    }

    fn into_inner(self) -> R {
        match self {
            Member::Gzip(d) => d.into_inner(),
            Member::Zstd(d) => d.finish(),
            Member::Xz(d) => d.into_inner(),
        }
    }
}

/// Trailing bytes after a complete compressed stream that do not start
/// another one (an error of its own: the data is whole, the file is not
/// what it says).
#[derive(Debug)]
struct Trailing {
    /// Offset of the first trailing byte in the file.
    at: u64,
}

impl std::fmt::Display for Trailing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "trailing data at byte {}", self.at)
    }
}

impl std::error::Error for Trailing {}

/// Concatenated members (gzip), frames (zstd) or streams (xz, with their
/// zero padding), read as one; anything else after a complete one is a
/// [`Trailing`] error rather than a truncated next member.
struct Concatenated<R: BufRead> {
    kind: Compression,
    member: Option<Member<Counted<R>>>,
}

impl<R: BufRead> Concatenated<R> {
    /// Whether `next` (at least one byte) may start another member.
    fn starts_member(&self, next: &[u8]) -> bool {
        let magic: &[u8] = match self.kind {
            Compression::Gzip => &[0x1F, 0x8B],
            Compression::Zstd => {
                // Skippable frames (magic 0x184D2A5?) are zstd too.
                if next.len() >= 4 && next[0] & 0xF0 == 0x50 && next[1..4] == [0x2A, 0x4D, 0x18] {
                    return true;
                }
                &[0x28, 0xB5, 0x2F, 0xFD]
            }
            Compression::Xz => &[0xFD, b'7', b'z', b'X', b'Z', 0x00],
        };
        let n = next.len().min(magic.len());
        next[..n] == magic[..n]
    }
}

impl<R: BufRead> Read for Concatenated<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(m) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = m.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // A member ended: the input ends, another starts, or neither.
            let mut r = self.member.take().expect("a member").into_inner();
            loop {
                let buf = r.fill_buf()?;
                // xz streams may be followed by zero padding.
                let zeros = if self.kind == Compression::Xz {
                    buf.iter().take_while(|&&b| b == 0).count()
                } else {
                    0
                };
                if zeros == 0 {
                    break;
                }
                r.consume(zeros);
            }
            let next = r.fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if !self.starts_member(next) {
                return Err(io::Error::new(
                    ErrorKind::InvalidData,
                    Trailing { at: r.pos },
                ));
            }
            self.member = Some(Member::new(self.kind, r)?);
        }
    }
}

/// A message from the decoder thread.
enum Msg {
    Data(Vec<u8>),
    Error(io::Error),
}

/// Reads what a decoder running on another thread produces.
struct Threaded {
    rx: Receiver<Msg>,
    /// Blocks the parser is done with, sent back for reuse.
    recycle: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
    handle: Option<JoinHandle<()>>,
}

impl Threaded {
    fn spawn(mut decoder: Box<dyn Read + Send>, kind: Compression) -> Threaded {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let (recycle, spare) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
        let handle = std::thread::spawn(move || {
            loop {
                let mut block = spare.try_recv().unwrap_or_default();
                block.resize(BLOCK, 0);
                let mut got = 0;
                let mut failed = None;
                while got < BLOCK {
                    match decoder.read(&mut block[got..]) {
                        Ok(0) => break,
                        Ok(k) => got += k,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => {
                            failed = Some(describe(kind, e));
                            break;
                        }
                    }
                }
                block.truncate(got);
                let last = got < BLOCK;
                if got > 0 && tx.send(Msg::Data(block)).is_err() {
                    return; // the parser stopped (an error in the text)
                }
                if let Some(e) = failed {
                    let _ = tx.send(Msg::Error(e));
                    return;
                }
                if last {
                    return;
                }
            }
        });
        Threaded {
            rx,
            recycle,
            cur: Vec::new(),
            pos: 0,
            done: false,
            handle: Some(handle),
        }
    }
}

/// A decoder error as the user should read it.
fn describe(kind: Compression, e: io::Error) -> io::Error {
    let trailing = e.get_ref().and_then(|i| i.downcast_ref::<Trailing>());
    let what = if let Some(t) = trailing {
        format!(
            "is followed by trailing data that is not {0} (from byte {1} on); expected the file to end with the compressed stream",
            kind.name(),
            t.at
        )
    } else if e.kind() == ErrorKind::UnexpectedEof {
        "ends in the middle of the compressed data (truncated file?)".to_string()
    } else {
        format!("is not valid {} data: {e}", kind.name())
    };
    io::Error::new(
        ErrorKind::InvalidData,
        format!("{} stream {what}", kind.name()),
    )
}

impl Read for Threaded {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Msg::Data(block)) => {
                    let old = std::mem::replace(&mut self.cur, block);
                    let _ = self.recycle.try_send(old);
                    self.pos = 0;
                }
                Ok(Msg::Error(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    if let Some(h) = self.handle.take()
                        && h.join().is_err()
                    {
                        return Err(io::Error::other("the decompression thread failed"));
                    }
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn compress(kind: Compression, data: &[u8]) -> Vec<u8> {
        match kind {
            Compression::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Zstd => zstd::encode_all(data, 3).unwrap(),
            Compression::Xz => {
                let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
        }
    }

    fn read_all(bytes: Vec<u8>) -> (io::Result<Vec<u8>>, Option<Compression>) {
        let (mut r, kind) = open(Box::new(Cursor::new(bytes))).unwrap();
        let mut out = Vec::new();
        (r.read_to_end(&mut out).map(|_| out), kind)
    }

    const KINDS: [Compression; 3] = [Compression::Gzip, Compression::Zstd, Compression::Xz];

    fn sample() -> Vec<u8> {
        (0..80_000u32)
            .flat_map(|i| format!("T{}|w(x{})|L{}\n", i % 7, i % 1000, i % 13).into_bytes())
            .collect()
    }

    #[test]
    fn round_trips_every_format_across_many_blocks() {
        let data = sample();
        assert!(data.len() > 4 * BLOCK);
        for kind in KINDS {
            let (out, found) = read_all(compress(kind, &data));
            assert_eq!(found, Some(kind));
            assert!(out.unwrap() == data, "{kind:?}");
        }
    }

    #[test]
    fn concatenated_members_are_read_whole() {
        for kind in KINDS {
            let mut both = compress(kind, b"T1|w(x)|1\n");
            both.extend(compress(kind, b"T2|r(x)|2\n"));
            assert_eq!(
                read_all(both).0.unwrap(),
                b"T1|w(x)|1\nT2|r(x)|2\n",
                "{kind:?}"
            );
        }
    }

    #[test]
    fn plain_and_short_inputs_pass_through() {
        for text in [&b""[..], b"T", b"T1|w(x)|1\n", b"\x1f"] {
            let (out, found) = read_all(text.to_vec());
            assert_eq!(found, None);
            assert_eq!(out.unwrap(), text);
        }
    }

    #[test]
    fn truncated_and_corrupt_streams_are_errors() {
        let data = sample();
        for kind in KINDS {
            let full = compress(kind, &data);
            for cut in [full.len() / 2, full.len() - 1, MAGIC_LEN + 4] {
                let (out, _) = read_all(full[..cut].to_vec());
                let e = out.expect_err(&format!("{kind:?} cut at {cut}"));
                assert!(e.to_string().starts_with(kind.name()), "{e}");
            }
            let mut bad = full.clone();
            let mid = bad.len() / 2;
            for b in &mut bad[mid..mid + 64] {
                *b ^= 0x5A;
            }
            let (out, _) = read_all(bad);
            assert!(out.is_err(), "{kind:?} corrupted");
        }
    }

    #[test]
    fn trailing_data_after_the_stream_is_named_as_such() {
        for kind in KINDS {
            let mut bytes = compress(kind, b"T1|w(x)|1\n");
            let end = bytes.len();
            bytes.extend_from_slice(b"junkjunk\n");
            let e = read_all(bytes).0.expect_err(&format!("{kind:?}"));
            let msg = e.to_string();
            assert!(
                msg.contains("trailing data")
                    && msg.contains(&format!("from byte {end} on"))
                    && !msg.contains("truncated"),
                "{kind:?}: {msg}"
            );
        }
        // Zero padding after an xz stream is part of the format.
        let mut padded = compress(Compression::Xz, b"T1|w(x)|1\n");
        padded.extend_from_slice(&[0; 8]);
        assert_eq!(read_all(padded).0.unwrap(), b"T1|w(x)|1\n");
    }
}
