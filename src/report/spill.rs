//! Race witnesses on disk: fixed-size records in an anonymous temporary file,
//! so a report's memory does not grow with its races.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use super::{Access, Race};
use crate::trace::Op;

/// Bytes per record: two accesses (id, thread, loc: 3 × u32 each), the
/// variable (u32) and one byte holding both accesses' ops (a nibble each,
/// the op's index in [`OPS`]).
const RECORD: usize = 6 * 4 + 4 + 1;

/// The ops an access of a race can have.
const OPS: [Op; 6] = [
    Op::Read,
    Op::Write,
    Op::VolatileRead,
    Op::VolatileWrite,
    Op::AtomicRead,
    Op::AtomicWrite,
];

/// Nibble of `op` (its index in [`OPS`]).
fn nibble(op: Op) -> u8 {
    OPS.iter().position(|&o| o == op).unwrap_or(0) as u8
}

/// An append-only file of races, read back in the order written.
#[derive(Debug)]
pub(crate) struct Spill {
    out: BufWriter<File>,
    len: u64,
    /// The first write error; pushes after it are dropped and every read
    /// reports it (engines' push cannot fail).
    error: Option<io::Error>,
}

impl Spill {
    /// A new, empty spill file (removed by the OS when dropped).
    pub(crate) fn new() -> io::Result<Spill> {
        let file = tempfile::tempfile().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create a temporary file for the race list: {e}"),
            )
        })?;
        Ok(Spill {
            out: BufWriter::with_capacity(1 << 16, file),
            len: 0,
            error: None,
        })
    }

    /// Races written so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Append one race.
    pub(crate) fn push(&mut self, r: &Race) {
        if self.error.is_some() {
            return;
        }
        let mut rec = [0u8; RECORD];
        let words = [
            r.first.id,
            r.first.thread,
            r.first.loc,
            r.second.id,
            r.second.thread,
            r.second.loc,
            r.variable,
        ];
        for (i, w) in words.iter().enumerate() {
            rec[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        rec[RECORD - 1] = nibble(r.first.op) | nibble(r.second.op) << 4;
        match self.out.write_all(&rec) {
            Ok(()) => self.len += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Flush the buffered records (call once every race is pushed).
    pub(crate) fn finish(&mut self) {
        if self.error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.error = Some(e);
        }
    }

    /// The first write error, if any.
    pub(crate) fn check(&self) -> io::Result<()> {
        match &self.error {
            Some(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot write the temporary race list: {e}"),
            )),
            None => Ok(()),
        }
    }

    /// Call `f` on every race in the order written.
    pub(crate) fn each(&self, mut f: impl FnMut(&Race) -> io::Result<()>) -> io::Result<()> {
        self.check()?;
        let mut file = self.out.get_ref();
        file.seek(SeekFrom::Start(0))?;
        let mut input = BufReader::with_capacity(1 << 16, file);
        let mut rec = [0u8; RECORD];
        for _ in 0..self.len {
            input.read_exact(&mut rec)?;
            let w = |i: usize| u32::from_le_bytes(rec[4 * i..4 * i + 4].try_into().unwrap());
            let op = |n: u8| OPS.get(n as usize).copied().unwrap_or(Op::Read);
            let ops = rec[RECORD - 1];
            f(&Race {
                first: Access {
                    id: w(0),
                    thread: w(1),
                    loc: w(2),
                    op: op(ops & 15),
                },
                second: Access {
                    id: w(3),
                    thread: w(4),
                    loc: w(5),
                    op: op(ops >> 4),
                },
                variable: w(6),
            })?;
        }
        Ok(())
    }
}
