//! The runtime's per-thread event files and their merge into the global order.
//!
//! Each `t<ID>.bin` holds the events of one thread in the order the thread
//! made them, as little-endian 64-bit words whose top four bits are a tag
//! (the runtime's `recorder/src/kind.rs`, whose numbers the constants below
//! keep): a plain read or write is one word (address in bits 0-47, the slot of
//! its pc in bits 48-57) and takes the thread's current `seq`; a
//! [`TAG_SEQ`] word sets that `seq`, a [`TAG_PC`] word sets a slot of the
//! thread's pc table; every other event is four words ([`TAG_LONG`] with the
//! kind in its low byte, then address, pc, and `seq | arg << 40`).
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
//!
//! The merge runs on a thread of its own and hands the ordered events over
//! in batches, so that naming and writing them ([`merge`]'s callback) use
//! the second core.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::{Context, Result, bail};

pub(crate) const READ: u8 = 0;
pub(crate) const WRITE: u8 = 1;
pub(crate) const VREAD: u8 = 2;
pub(crate) const VWRITE: u8 = 3;
pub(crate) const ACQUIRE: u8 = 4;
pub(crate) const RELEASE: u8 = 5;
pub(crate) const FORK: u8 = 6;
pub(crate) const JOIN: u8 = 7;
pub(crate) const FREE: u8 = 8;
pub(crate) const SYNC_VREAD: u8 = 9;
pub(crate) const SYNC_VWRITE: u8 = 10;

/// The first line of the runtime's `modules` file for this format.
pub(crate) const FORMAT: &str = "cprace-events 2";

/// The segment lines of a run's `modules` file, or an error when the run's
/// runtime wrote another format (a program built by another version of
/// `cprace cc`).
pub(crate) fn segments(modules: &str) -> Result<&str> {
    match modules.split_once('\n') {
        Some((first, rest)) if first == FORMAT => Ok(rest),
        _ => bail!(
            "the program was built with another version of cprace's runtime (its event files are not `{FORMAT}`): rebuild it with this `cprace cc`"
        ),
    }
}

/// Bit position of a word's tag (the tags of plain accesses are [`READ`]
/// and [`WRITE`]).
pub(crate) const TAG_SHIFT: u32 = 60;
/// Tag: the thread's current `seq` becomes bits 0-39.
pub(crate) const TAG_SEQ: u64 = 2;
/// Tag: slot bits 48-57 of the thread's pc table becomes bits 0-47.
pub(crate) const TAG_PC: u64 = 3;
/// Tag: an event in four words.
pub(crate) const TAG_LONG: u64 = 4;
/// Slots of a thread's pc table.
pub(crate) const PC_SLOTS: usize = 1 << 10;

const LOW48: u64 = (1 << 48) - 1;
const SEQ_MASK: u64 = (1 << 40) - 1;

/// One recorded event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// Accessed address, lock address or thread id.
    pub addr: u64,
    /// Return address into the instrumented code (the block size for FREE).
    pub pc: u64,
    /// Recorder thread id.
    pub tid: u32,
    /// Kind-specific: the sync variable of a SYNC_* event.
    pub arg: u32,
    pub kind: u8,
}

/// One thread's file, read in large blocks and decoded word by word.
struct Stream {
    tid: u32,
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    /// Byte offset of the next word in `buf`.
    pos: usize,
    /// End of the bytes read into `buf`.
    end: usize,
    /// Bytes of the file before `buf`'s first byte (for error messages).
    base: u64,
    eof: bool,
    /// The `seq` of the thread's plain accesses.
    seq: u64,
    /// The thread's pc table.
    pcs: Box<[u64; PC_SLOTS]>,
}

/// Bytes of a four-word event.
const LONG_BYTES: usize = 32;

impl Stream {
    fn open(tid: u32, path: PathBuf) -> Result<Stream> {
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Stream {
            tid,
            path,
            file,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            seq: 0,
            pcs: Box::new([0; PC_SLOTS]),
        })
    }

    #[inline(always)]
    fn word(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.buf[at..at + 8].try_into().expect("8 bytes"))
    }

    /// The thread's next event and its place in the merge (`seq` doubled,
    /// plus 1 for a synchronization event, so accesses carrying `seq` n come
    /// before synchronization event n), or None at the end. A partial event
    /// at the end (the thread was still writing when the program exited)
    /// ends the stream; its complete events stand.
    #[inline(always)]
    fn next(&mut self) -> Result<Option<(u64, Event)>> {
        loop {
            if self.end - self.pos < LONG_BYTES && !self.eof {
                self.refill()?;
            }
            if self.end - self.pos < 8 {
                return Ok(None);
            }
            let w = self.word(self.pos);
            self.pos += 8;
            match w >> TAG_SHIFT {
                tag @ 0..=1 => {
                    let slot = (w >> 48) as usize & (PC_SLOTS - 1);
                    let e = Event {
                        addr: w & LOW48,
                        pc: self.pcs[slot],
                        tid: self.tid,
                        arg: 0,
                        kind: tag as u8,
                    };
                    return Ok(Some((self.seq << 1, e)));
                }
                TAG_SEQ => self.seq = w & SEQ_MASK,
                TAG_PC => self.pcs[(w >> 48) as usize & (PC_SLOTS - 1)] = w & LOW48,
                TAG_LONG => {
                    if self.end - self.pos < LONG_BYTES - 8 {
                        return Ok(None);
                    }
                    let (addr, pc, w3) = (
                        self.word(self.pos),
                        self.word(self.pos + 8),
                        self.word(self.pos + 16),
                    );
                    self.pos += LONG_BYTES - 8;
                    let kind = w as u8;
                    let seq = w3 & SEQ_MASK;
                    let e = Event {
                        addr,
                        pc,
                        tid: self.tid,
                        arg: (w3 >> 40) as u32,
                        kind,
                    };
                    return Ok(Some((seq << 1 | u64::from(kind > WRITE), e)));
                }
                tag => bail!(
                    "{} is not an event file this cprace reads: the word at byte {} has tag {tag}",
                    self.path.display(),
                    self.base + self.pos as u64 - 8
                ),
            }
        }
    }

    /// Moves the unread tail (under one long event) to the front and reads
    /// up to the buffer's end, without clearing the buffer first.
    #[cold]
    fn refill(&mut self) -> Result<()> {
        if self.buf.len() < BLOCK {
            self.buf.resize(BLOCK, 0);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while self.end < self.buf.len() {
            let n = self
                .file
                .read(&mut self.buf[self.end..])
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if n == 0 {
                self.eof = true;
                break;
            }
            self.end += n;
        }
        Ok(())
    }
}

/// Bytes read from a thread's file at a time.
const BLOCK: usize = 1 << 20;
/// Events handed from the merge to the callback at a time.
const BATCH: usize = 1 << 15;
/// Batches the merge may run ahead of the callback.
const QUEUE: usize = 4;

/// Calls `f` on every event of every thread file in `dir`, in the global
/// order. The merge runs on a second thread; `f` runs on the caller's, and
/// its first error stops both.
pub(crate) fn merge(dir: &Path, mut f: impl FnMut(&Event) -> Result<()>) -> Result<()> {
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
        streams.push(Stream::open(tid, path)?);
    }
    // Accesses between the same two synchronization events go thread by thread.
    streams.sort_by_key(|s| s.tid);
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<Event>>(QUEUE);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<Event>>();
    std::thread::scope(|scope| {
        let merger = std::thread::Builder::new()
            .name("cprace-merge".into())
            .spawn_scoped(scope, move || order(streams, &full_tx, &empty_rx))
            .context("cannot start the merge thread")?;
        let mut r = Ok(());
        for mut batch in full_rx.iter() {
            if let Err(e) = batch.iter().try_for_each(&mut f) {
                r = Err(e);
                break;
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        // The merge stops at its next batch when `f` failed.
        drop(full_rx);
        let m = merger
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        r.and(m)
    })
}

/// The merge proper: sends the events of `streams` to `full` in the global
/// order, in batches (reusing those that come back on `empty`). Stops
/// quietly when the receiver is gone.
fn order(
    mut streams: Vec<Stream>,
    full: &mpsc::SyncSender<Vec<Event>>,
    empty: &mpsc::Receiver<Vec<Event>>,
) -> Result<()> {
    let mut heads: Vec<Event> = Vec::with_capacity(streams.len());
    let mut heap = BinaryHeap::new();
    for (i, s) in streams.iter_mut().enumerate() {
        match s.next()? {
            Some((key, e)) => {
                heap.push(Reverse((key, i)));
                heads.push(e);
            }
            None => heads.push(Event::default()),
        }
    }
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(Reverse((_, i))) = heap.pop() {
        // Stay on this thread while its events come before every other head.
        let bound = heap.peek().map_or((u64::MAX, usize::MAX), |Reverse(b)| *b);
        let s = &mut streams[i];
        let mut e = heads[i];
        loop {
            batch.push(e);
            if batch.len() == BATCH {
                if full.send(batch).is_err() {
                    return Ok(());
                }
                batch = empty
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            }
            match s.next()? {
                Some((key, n)) if (key, i) < bound => e = n,
                Some((key, n)) => {
                    heap.push(Reverse((key, i)));
                    heads[i] = n;
                    break;
                }
                None => break,
            }
        }
    }
    if !batch.is_empty() {
        let _ = full.send(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(kind: u8, slot: u64, addr: u64) -> u64 {
        u64::from(kind) << TAG_SHIFT | slot << 48 | addr
    }
    fn seq(n: u64) -> u64 {
        TAG_SEQ << TAG_SHIFT | n
    }
    fn pc(slot: u64, pc: u64) -> u64 {
        TAG_PC << TAG_SHIFT | slot << 48 | pc
    }
    fn long(kind: u8, addr: u64, pc: u64, seq: u64, arg: u64) -> [u64; 4] {
        [
            TAG_LONG << TAG_SHIFT | u64::from(kind),
            addr,
            pc,
            seq | arg << 40,
        ]
    }

    fn file(dir: &Path, name: &str, words: &[u64], extra: &[u8]) {
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes.extend_from_slice(extra);
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    fn merged(dir: &Path) -> Result<Vec<Event>> {
        let mut out = Vec::new();
        merge(dir, |e| {
            out.push(*e);
            Ok(())
        })?;
        Ok(out)
    }

    fn ev(tid: u32, kind: u8, addr: u64, pc: u64, arg: u32) -> Event {
        Event {
            addr,
            pc,
            tid,
            arg,
            kind,
        }
    }

    #[test]
    fn words_decode_and_merge_in_the_global_order() {
        let dir = tempfile::tempdir().unwrap();
        let big = 1 << 50;
        let mut t1 = vec![pc(5, 0x1234), short(READ, 5, 0x10)];
        t1.extend(long(ACQUIRE, 0x99, 0x1234, 0, 0));
        t1.extend([seq(1), short(WRITE, 5, 0x10)]);
        t1.extend(long(RELEASE, 0x99, 0x1240, 1, 0));
        t1.extend([seq(2), pc(5, 0x1250), short(READ, 5, 0x20)]);
        let mut t2 = vec![seq(2), pc(5, 0x2000), short(READ, 5, 0x30)];
        t2.extend(long(SYNC_VWRITE, 0x99, 0x2010, 2, 3));
        t2.extend([seq(3), short(READ, 5, 0x10)]);
        t2.extend(long(WRITE, big, 0x2020, 3, 0));
        t2.extend(long(RELEASE, 0x99, 0x2030, 3, 0));
        // Kinds the reader does not know pass through (the namer skips them).
        t2.extend(long(0xff, 0x99, u64::MAX, 4, 0));
        // A long event the thread was still writing at exit: dropped.
        t2.extend(&long(ACQUIRE, 0x99, 0x2040, 4, 0)[..2]);
        file(dir.path(), "t1.bin", &t1, &[]);
        // A partial word at the end: dropped.
        file(dir.path(), "t2.bin", &t2, &[1, 2, 3]);
        file(dir.path(), "t0.bin", &[], &[]);
        std::fs::write(dir.path().join("modules"), "not an event file").unwrap();
        assert_eq!(
            merged(dir.path()).unwrap(),
            [
                ev(1, READ, 0x10, 0x1234, 0),
                ev(1, ACQUIRE, 0x99, 0x1234, 0),
                ev(1, WRITE, 0x10, 0x1234, 0),
                ev(1, RELEASE, 0x99, 0x1240, 0),
                // seq 2 on both threads: thread by thread.
                ev(1, READ, 0x20, 0x1250, 0),
                ev(2, READ, 0x30, 0x2000, 0),
                ev(2, SYNC_VWRITE, 0x99, 0x2010, 3),
                ev(2, READ, 0x10, 0x2000, 0),
                ev(2, WRITE, big, 0x2020, 0),
                // Synchronization event 3 after the accesses carrying 3.
                ev(2, RELEASE, 0x99, 0x2030, 0),
                ev(2, 0xff, 0x99, u64::MAX, 0),
            ]
        );
    }

    #[test]
    fn an_error_of_the_callback_stops_the_merge() {
        let dir = tempfile::tempdir().unwrap();
        // More events than the batches the merge may run ahead.
        let words = vec![short(READ, 0, 0x10); BATCH * (QUEUE + 4)];
        file(dir.path(), "t1.bin", &words, &[]);
        let mut seen = 0;
        let r = merge(dir.path(), |_| {
            seen += 1;
            if seen == 10 {
                anyhow::bail!("stop");
            }
            Ok(())
        });
        assert_eq!(r.unwrap_err().to_string(), "stop");
        assert_eq!(seen, 10);
        assert_eq!(merged(dir.path()).unwrap().len(), words.len());
    }

    #[test]
    fn an_unknown_word_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "t3.bin", &[seq(0), 9 << TAG_SHIFT], &[]);
        let err = format!("{:#}", merged(dir.path()).unwrap_err());
        assert!(
            err.contains("t3.bin") && err.contains("byte 8") && err.contains("tag 9"),
            "{err}"
        );
    }

    #[test]
    fn modules_of_another_format_are_refused() {
        assert_eq!(segments("cprace-events 2\na b c d\n").unwrap(), "a b c d\n");
        assert!(segments("1000 2000 1000 /bin/prog\n").is_err());
        assert!(segments("").is_err());
    }
}
