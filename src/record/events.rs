//! The runtime's per-thread event files and their merge into the global order.
//!
//! Each `t<ID>.bin` holds 24-byte little-endian events in the order the thread
//! made them: `seq | arg << 40`, `addr`, `pc | kind << 56` (the kinds below
//! are the runtime's `recorder/src/kind.rs`).
//!
//! A synchronization event's `seq` is its number in the run's one order of
//! synchronization events; a read's or write's is the number of
//! synchronization events begun before it. The merge places every access
//! after the synchronization events numbered below its `seq` and before the
//! one numbered `seq`, in its thread's order, and the accesses that fall
//! between the same two synchronization events thread by thread (lowest
//! thread id first). That order keeps each thread's order and the order of
//! all synchronization (see the runtime's `buffer.rs` for why the numbers
//! allow it).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub const READ: u8 = 0;
pub const WRITE: u8 = 1;
pub const VREAD: u8 = 2;
pub const VWRITE: u8 = 3;
pub const ACQUIRE: u8 = 4;
pub const RELEASE: u8 = 5;
pub const FORK: u8 = 6;
pub const JOIN: u8 = 7;
pub const FREE: u8 = 8;
pub const SYNC_VREAD: u8 = 9;
pub const SYNC_VWRITE: u8 = 10;

/// One recorded event.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// Place in the merge: `seq` doubled, plus 1 for a synchronization event
    /// (so accesses carrying `seq` n come before synchronization event n).
    pub key: u64,
    /// Position in the global order.
    pub seq: u64,
    /// Recorder thread id.
    pub tid: u32,
    pub kind: u8,
    /// Kind-specific: the sync variable of a SYNC_* event.
    pub arg: u32,
    /// Accessed address, lock address or thread id.
    pub addr: u64,
    /// Return address into the instrumented code (the block size for FREE).
    pub pc: u64,
}

/// One thread's file, read in large blocks.
struct Stream {
    tid: u32,
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    pos: usize,
    /// End of the bytes read into `buf`.
    end: usize,
}

impl Stream {
    fn next(&mut self) -> Result<Option<Event>> {
        if self.end - self.pos < 24 {
            self.refill()?;
            if self.end - self.pos < 24 {
                // A partial event at the end: the thread was still writing
                // when the program exited. Its complete events stand.
                return Ok(None);
            }
        }
        let b = &self.buf[self.pos..self.pos + 24];
        self.pos += 24;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (w0, w2) = (w(0), w(2));
        let seq = w0 & ((1 << 40) - 1);
        let kind = (w2 >> 56) as u8;
        Ok(Some(Event {
            key: seq << 1 | u64::from(kind > WRITE),
            seq,
            tid: self.tid,
            kind,
            arg: (w0 >> 40) as u32,
            addr: w(1),
            pc: w2 & 0x00ff_ffff_ffff_ffff,
        }))
    }

    /// Moves the unread tail (under one event) to the front and reads up to
    /// the buffer's end (1 MiB), without clearing the buffer first.
    fn refill(&mut self) -> Result<()> {
        if self.buf.len() < BLOCK {
            self.buf.resize(BLOCK, 0);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < self.buf.len() {
            let n = self
                .file
                .read(&mut self.buf[self.end..])
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if n == 0 {
                break;
            }
            self.end += n;
        }
        Ok(())
    }
}

/// Bytes read from a thread's file at a time.
const BLOCK: usize = 1 << 20;

/// Calls `f` on every event of every thread file in `dir`, in the global order.
pub fn merge(dir: &Path, mut f: impl FnMut(&Event) -> Result<()>) -> Result<()> {
    let mut streams = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(tid) = name
            .strip_prefix('t')
            .and_then(|n| n.strip_suffix(".bin"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        streams.push(Stream {
            tid,
            path,
            file,
            buf: Vec::new(),
            pos: 0,
            end: 0,
        });
    }
    // Accesses between the same two synchronization events go thread by thread.
    streams.sort_by_key(|s| s.tid);
    let mut heads: Vec<Option<Event>> = Vec::with_capacity(streams.len());
    let mut heap = BinaryHeap::new();
    for (i, s) in streams.iter_mut().enumerate() {
        let e = s.next()?;
        if let Some(e) = &e {
            heap.push(Reverse((e.key, i)));
        }
        heads.push(e);
    }
    while let Some(Reverse((_, i))) = heap.pop() {
        // Stay on this thread while its events come before every other head.
        let bound = heap.peek().map_or((u64::MAX, usize::MAX), |Reverse(b)| *b);
        loop {
            let e = heads[i].take().expect("a queued stream has a head");
            f(&e)?;
            match streams[i].next()? {
                Some(n) if (n.key, i) < bound => heads[i] = Some(n),
                Some(n) => {
                    heap.push(Reverse((n.key, i)));
                    heads[i] = Some(n);
                    break;
                }
                None => break,
            }
        }
    }
    Ok(())
}
