//! The runtime's per-thread event files and their merge into the global order.
//!
//! Each `t<ID>.bin` holds the events of one thread in the order the thread
//! made them, in the words the `cprace-events` crate defines. A numbered
//! event's `seq` is its number in the run's one order of synchronization
//! events; any other event's is the number of synchronization events begun
//! before it. The merge places every unnumbered event after the numbered
//! ones below its `seq` and before the one numbered `seq`, in its thread's
//! order, and the unnumbered events that fall between the same two numbered
//! ones thread by thread (lowest thread id first). That order keeps each
//! thread's order and the order of all synchronization (see the runtime's
//! `buffer.rs` for why the numbers allow it). A thread whose file ends in a
//! pending acquire never got that lock: the request goes to the end of the
//! trace.
//!
//! The files are read defensively: every record is checked before it is
//! used (see [`cprace_events::Decoder`]), nothing is allocated beyond what
//! the files' sizes justify, and a corrupt file is an error naming the file,
//! the byte offset and the problem. The merge runs on a thread of its own
//! and hands the ordered events over in batches, so that lowering them
//! ([`merge`]'s callback) uses the second core.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::{Context, Result, bail};
use cprace_events::{Access, CHUNK_WORDS, Decoder, Long, MAX_TID, Record, Step, TAIL_HEADER_BYTES};
use rustc_hash::FxHashMap;

/// The segment lines of a run's `modules` file, or an error when the run's
/// runtime wrote another format (a program built by another version of
/// `cprace cc`).
pub fn segments(modules: &str) -> Result<&str> {
    match modules.split_once('\n') {
        Some((first, rest)) if first == cprace_events::FORMAT => Ok(rest),
        _ => bail!(
            "the program was built with another version of cprace's runtime (its event files are not `{}`): rebuild it with this `cprace cc`",
            cprace_events::FORMAT
        ),
    }
}

/// What a recorded event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// A plain read or write of `size` bytes.
    Access {
        /// A write.
        write: bool,
        /// Bytes: 1, 2, 4 or 8.
        size: u8,
    },
    /// A long event (its kind, flags and payload).
    Long(Long),
    /// A lock the thread asked for and never got (its file ended there).
    Request(Long),
}

/// One recorded event in the global order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Recorder thread id.
    pub tid: u32,
    /// What it is.
    pub what: What,
    /// Address (or thread id, by kind).
    pub addr: u64,
    /// The instrumented code's pc (a return address).
    pub pc: u64,
    /// The call stack at the event: a global stack id (0 is empty), see
    /// [`Stacks`].
    pub stack: u32,
}

impl Default for Event {
    fn default() -> Self {
        Event {
            tid: 0,
            what: What::Access {
                write: false,
                size: 1,
            },
            addr: 0,
            pc: 0,
            stack: 0,
        }
    }
}

/// The run's call stacks, shared by all threads: stack `id` is the call
/// from `pc` on top of stack `parent` (id 0 is the empty stack). The
/// threads' own node numbers become these ids as their files are read.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    /// (parent, pc) by id; index 0 is the empty stack.
    nodes: Vec<(u32, u64)>,
    ids: FxHashMap<(u32, u64), u32>,
}

impl Stacks {
    fn intern(&mut self, parent: u32, pc: u64) -> u32 {
        if self.nodes.is_empty() {
            self.nodes.push((0, 0));
        }
        *self.ids.entry((parent, pc)).or_insert_with(|| {
            self.nodes.push((parent, pc));
            (self.nodes.len() - 1) as u32
        })
    }

    /// The call pcs of stack `id`, innermost first.
    #[cfg(test)]
    fn pcs(&self, mut id: u32) -> Vec<u64> {
        let mut out = Vec::new();
        while id != 0 && (id as usize) < self.nodes.len() && out.len() < self.nodes.len() {
            let (parent, pc) = self.nodes[id as usize];
            out.push(pc);
            id = parent;
        }
        out
    }

    /// The (parent, pc) of stack `id`.
    pub fn node(&self, id: u32) -> Option<(u32, u64)> {
        (id != 0)
            .then(|| self.nodes.get(id as usize).copied())
            .flatten()
    }
}

/// One thread's file, read in blocks and decoded record by record.
struct Stream {
    tid: u32,
    path: PathBuf,
    file: File,
    /// Bytes of the file.
    size: u64,
    /// Words read from the file, `pos..end` not yet decoded.
    buf: Vec<u64>,
    pos: usize,
    end: usize,
    /// Word offset in the file of `buf[0]`.
    base: u64,
    eof: bool,
    dec: Decoder,
    /// The thread's node numbers to global stack ids (index 0: empty).
    nodes: Vec<u32>,
}

/// A stream's next record with its merge key.
type Head = (u64, Event);

impl Stream {
    fn open(tid: u32, path: PathBuf, block: usize) -> Result<Stream> {
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        let size = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        Ok(Stream {
            tid,
            path,
            file,
            size,
            buf: vec![0; block.min(size as usize / 8 + 1).max(64)],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            dec: Decoder::default(),
            nodes: vec![0],
        })
    }

    fn corrupt(&self, at: usize, why: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!(
            "corrupt event file {} at byte {}: {why}",
            self.path.display(),
            (self.base + at as u64) * 8
        )
    }

    /// The thread's next event (stack nodes are taken in on the way) and
    /// its merge key: `seq` doubled, plus 1 for a numbered event, so that
    /// events carrying `seq` n come before numbered event n; a request
    /// comes after everything.
    fn next(&mut self, stacks: &mut Stacks) -> Result<Option<Head>> {
        match self.access() {
            Some(a) => Ok(Some((a.seq << 1, self.access_event(a)))),
            None => self.next_slow(stacks),
        }
    }

    /// The next record when it is a plain access in the buffer (nearly
    /// every record), decoded on the caller's side: the general step's
    /// records are large enough that moving them through it was most of
    /// the merge's time. `None` leaves the rest to [`Stream::next_slow`].
    #[inline]
    fn access(&mut self) -> Option<Access> {
        let (words, access) = self.dec.access(&self.buf[self.pos..self.end]);
        self.pos += words;
        access
    }

    /// The event of an access [`Stream::access`] decoded.
    #[inline]
    fn access_event(&self, a: Access) -> Event {
        Event {
            tid: self.tid,
            what: What::Access {
                write: a.write,
                size: a.size,
            },
            addr: a.addr,
            pc: a.pc,
            stack: self.nodes.get(a.node as usize).copied().unwrap_or(0),
        }
    }

    /// [`Stream::next`] past [`Stream::access`].
    #[inline(never)]
    fn next_slow(&mut self, stacks: &mut Stacks) -> Result<Option<Head>> {
        loop {
            let Some(rec) = self.record(stacks)? else {
                return Ok(None);
            };
            let (record, seq, node) = rec;
            let stack = self.nodes.get(node as usize).copied().unwrap_or(0);
            let (what, addr, pc, numbered) = match record {
                Record::Access {
                    write,
                    size,
                    addr,
                    pc,
                } => (What::Access { write, size }, addr, pc, false),
                Record::Long(l) if l.pending => {
                    // Void when the thread went on (it got the lock after a
                    // signal handler's events); a request when it never did.
                    if self.at_end()? {
                        let e = Event {
                            tid: self.tid,
                            what: What::Request(l),
                            addr: l.addr,
                            pc: l.pc,
                            stack,
                        };
                        return Ok(Some((u64::MAX, e)));
                    }
                    continue;
                }
                Record::Long(l) => (What::Long(l), l.addr, l.pc, l.kind.numbered()),
                Record::Node { .. } => continue,
            };
            let e = Event {
                tid: self.tid,
                what,
                addr,
                pc,
                stack,
            };
            return Ok(Some((seq << 1 | u64::from(numbered), e)));
        }
    }

    /// True when no record follows.
    fn at_end(&mut self) -> Result<bool> {
        loop {
            match self.dec.clone().next(&self.buf[self.pos..self.end]) {
                Ok(Step::End { .. }) => return Ok(true),
                Ok(Step::Record { .. }) | Ok(Step::Skip { .. }) => return Ok(false),
                Ok(Step::NeedMore { .. }) if self.eof => return Ok(true),
                Ok(Step::NeedMore { .. }) => self.refill()?,
                Err((at, e)) => return Err(self.corrupt(self.pos + at, e)),
            }
        }
    }

    /// The next record, its `seq` and its thread-local stack node.
    fn record(&mut self, stacks: &mut Stacks) -> Result<Option<(Record, u64, u32)>> {
        loop {
            match self.dec.next(&self.buf[self.pos..self.end]) {
                Ok(Step::Record {
                    record,
                    seq,
                    node,
                    words,
                }) => {
                    self.pos += words;
                    if let Record::Node { id, parent, pc } = record {
                        // Ids are dense from 1, so `parent` is known.
                        let g = stacks.intern(self.nodes[parent as usize], pc);
                        debug_assert_eq!(id as usize, self.nodes.len());
                        self.nodes.push(g);
                    }
                    return Ok(Some((record, seq, node)));
                }
                Ok(Step::Skip { words }) => {
                    // The rest of this chunk is unused.
                    let at = self.base + (self.pos + words) as u64;
                    let next = (at / CHUNK_WORDS as u64 + 1) * CHUNK_WORDS as u64;
                    self.seek(next)?;
                }
                Ok(Step::End { .. }) => return Ok(None),
                Ok(Step::NeedMore { words }) => {
                    self.pos += words;
                    if self.eof {
                        // A record cut short: the thread was writing it when
                        // the program ended (the runtime commits the first
                        // word last, so this only happens to a file a copy
                        // cut short). Its complete records stand.
                        return Ok(None);
                    }
                    self.refill()?;
                }
                Err((at, e)) => return Err(self.corrupt(self.pos + at, e)),
            }
        }
    }

    /// Continues reading at word `word` of the file.
    fn seek(&mut self, word: u64) -> Result<()> {
        use std::io::Seek;
        if word * 8 >= self.size {
            self.pos = 0;
            self.end = 0;
            self.base = word;
            self.eof = true;
            return Ok(());
        }
        self.file
            .seek(std::io::SeekFrom::Start(word * 8))
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        self.pos = 0;
        self.end = 0;
        self.base = word;
        self.eof = false;
        self.refill()
    }

    /// Moves the undecoded words to the front and reads more after them.
    #[cold]
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            // One record never spans more than a buffer; a full buffer of
            // undecodable words would be a decoder error before this.
            return Err(self.corrupt(0, "a record longer than the read buffer"));
        }
        let bytes: &mut [u8] = bytemuck_words(&mut self.buf[self.end..]);
        let mut got = 0;
        while got < bytes.len() {
            let n = self
                .file
                .read(&mut bytes[got..])
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if n == 0 {
                self.eof = true;
                break;
            }
            got += n;
        }
        // The pages read go back to the page cache's free list for the
        // next reads: the files are read once, and new pages cost more
        // than the reading (BENCHMARKS.md, "Where a recorded run's time
        // goes").
        {
            use std::os::fd::AsRawFd;
            let read = (self.base + self.end as u64) * 8 + got as u64;
            // From the start each time, not from the last advice: pages
            // just read are often not dropped yet (advice on each range
            // once left the thread pool's read at 13.2 s of system time,
            // against 3.4 s).
            // SAFETY: advice on our own descriptor; it changes no data.
            unsafe {
                libc::posix_fadvise(
                    self.file.as_raw_fd(),
                    0,
                    read as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
        }
        // A partial word at the end is dropped.
        let words = got / 8;
        for w in &mut self.buf[self.end..self.end + words] {
            *w = u64::from_le(*w);
        }
        self.end += words;
        Ok(())
    }
}

/// The bytes of a word slice.
fn bytemuck_words(w: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no invalid bit patterns and no padding; the byte view
    // covers exactly the slice's memory and borrows it mutably.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, w.len() * 8) }
}

/// Bytes read from each thread's file at a time (less when there are many).
const BLOCK: usize = 1 << 18;
/// Most bytes of read buffers in all.
const BUFFERS: usize = 256 << 20;
/// Events handed from the merge to the callback at a time.
const BATCH: usize = 1 << 13;
/// How many events after the one [`merge`]'s callback handles it shows
/// the callback.
const AHEAD: usize = 8;
/// Batches the merge may run ahead of the callback.
const QUEUE: usize = 4;

/// Appends each thread's tail file (`t<ID>.tail`, the chunk the thread was
/// writing when it or the program ended) to its `.bin` file, unless the
/// `.bin` already holds that chunk (the thread was stopped after writing
/// it out and before naming the next), and removes the tail. A partial
/// chunk at the end of the `.bin` (a write cut short) is replaced by the
/// tail, which still holds it. Done again after an interruption, it
/// finds the chunk in the `.bin` and only removes the tail.
fn settle_tails(dir: &Path) -> Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let chunk = (CHUNK_WORDS * 8) as u64;
    for (_, path) in thread_files_named(dir, "tail")? {
        let tail =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let bin_path = path.with_extension("bin");
        let mut bin = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&bin_path)
            .with_context(|| format!("cannot open {}", bin_path.display()))?;
        let size = bin
            .metadata()
            .with_context(|| format!("cannot read {}", bin_path.display()))?
            .len();
        let held = size / chunk;
        let header = tail
            .get(..8)
            .map_or(0, |h| u64::from_le_bytes(h.try_into().expect("8 bytes")));
        if header > held {
            bail!(
                "corrupt event file {}: its tail is chunk {header}, but {} holds only {held} chunks",
                path.display(),
                bin_path.display()
            );
        }
        if header == held {
            let body = tail.get(TAIL_HEADER_BYTES as usize..).unwrap_or(&[]);
            let body = &body[..body.len().min(chunk as usize)];
            let at = held * chunk;
            (|| -> std::io::Result<()> {
                bin.set_len(at)?;
                bin.seek(SeekFrom::Start(at))?;
                bin.write_all(body)
            })()
            .with_context(|| format!("cannot write {}", bin_path.display()))?;
        }
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// The files `t<ID>.<ext>` in `dir`, with their thread ids (unchecked).
fn thread_files_named(dir: &Path, ext: &str) -> Result<Vec<(u64, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(tid) = name
            .strip_prefix('t')
            .and_then(|n| n.strip_suffix(ext)?.strip_suffix('.'))
            .and_then(|n| n.parse::<u64>().ok())
        {
            files.push((tid, path));
        }
    }
    Ok(files)
}

/// The thread files in `dir`: (recorder thread id, path), by id.
fn thread_files(dir: &Path) -> Result<Vec<(u32, PathBuf)>> {
    settle_tails(dir)?;
    let mut files = Vec::new();
    for (tid, path) in thread_files_named(dir, "bin")? {
        if tid > MAX_TID {
            bail!(
                "{} is not an event file of this runtime: thread id {tid} is beyond {MAX_TID}",
                path.display()
            );
        }
        files.push((tid as u32, path));
    }
    files.sort();
    Ok(files)
}

/// Calls `f` on every event of every thread file in `dir`, in the global
/// order, with the event [`AHEAD`] events later when there is one (to
/// start loading what `f` will look up for it) and the run's call stacks
/// known so far (every stack id an event carries is in them), and returns
/// the stacks. The merge runs on a second thread; `f` runs on the
/// caller's, and its first error stops both.
pub fn merge(
    dir: &Path,
    mut f: impl FnMut(&Event, Option<&Event>, &Stacks) -> Result<()>,
) -> Result<Stacks> {
    let files = thread_files(dir)?;
    let block = (BUFFERS / 8 / files.len().max(1)).clamp(1 << 10, BLOCK / 8);
    let mut streams = Vec::with_capacity(files.len());
    for (tid, path) in files {
        streams.push(Stream::open(tid, path, block)?);
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(QUEUE);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<Event>>();
    std::thread::scope(|scope| {
        let merger = std::thread::Builder::new()
            .name("cprace-merge".into())
            .spawn_scoped(scope, move || order(streams, &full_tx, &empty_rx))
            .context("cannot start the merge thread")?;
        let mut r = Ok(());
        // The caller's copy of the stacks, grown with each batch.
        let mut mine = Stacks::default();
        mine.intern(0, 0);
        for (mut batch, nodes) in full_rx.iter() {
            for (parent, pc) in nodes {
                mine.intern(parent, pc);
            }
            if let Err(e) = batch
                .iter()
                .enumerate()
                .try_for_each(|(i, e)| f(e, batch.get(i + AHEAD), &mine))
            {
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
        r?;
        m
    })
}

/// A batch of merged events and the stacks `(id, parent/pc)` defined since
/// the last batch.
type Batch = (Vec<Event>, Vec<(u32, u64)>);

/// The merge proper: sends the events of `streams` to `full` in the global
/// order, in batches (reusing those that come back on `empty`), and returns
/// the stacks, each batch with the stacks defined since the last. Stops
/// quietly when the receiver is gone.
fn order(
    mut streams: Vec<Stream>,
    full: &mpsc::SyncSender<Batch>,
    empty: &mpsc::Receiver<Vec<Event>>,
) -> Result<Stacks> {
    let mut stacks = Stacks::default();
    stacks.intern(0, 0);
    let mut heads: Vec<Event> = Vec::with_capacity(streams.len());
    let mut heap = BinaryHeap::new();
    for (i, s) in streams.iter_mut().enumerate() {
        match s.next(&mut stacks)? {
            Some((key, e)) => {
                heap.push(Reverse((key, i)));
                heads.push(e);
            }
            None => heads.push(Event::default()),
        }
    }
    let mut batch = Vec::with_capacity(BATCH);
    let mut sent = 1;
    let new_nodes = |stacks: &Stacks, sent: &mut usize| {
        let n = stacks.nodes[*sent..].to_vec();
        *sent = stacks.nodes.len();
        n
    };
    // Hands over the batch when full; false when the receiver is gone.
    let mut send = |batch: &mut Vec<Event>, stacks: &Stacks| {
        if batch.len() < BATCH {
            return true;
        }
        let full_one = std::mem::replace(
            batch,
            empty
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH)),
        );
        full.send((full_one, new_nodes(stacks, &mut sent))).is_ok()
    };
    while let Some(Reverse((_, i))) = heap.pop() {
        // Stay on this thread while its events come before every other head.
        let bound = heap.peek().map_or((u64::MAX, usize::MAX), |Reverse(b)| *b);
        batch.push(heads[i]);
        if !send(&mut batch, &stacks) {
            return Ok(stacks);
        }
        let s = &mut streams[i];
        loop {
            // Accesses go straight into the batch (see `Stream::access`).
            let (key, e) = match s.access() {
                Some(a) => (a.seq << 1, s.access_event(a)),
                None => match s.next_slow(&mut stacks)? {
                    Some(h) => h,
                    None => break,
                },
            };
            if (key, i) >= bound {
                heap.push(Reverse((key, i)));
                heads[i] = e;
                break;
            }
            batch.push(e);
            if !send(&mut batch, &stacks) {
                return Ok(stacks);
            }
        }
    }
    if !batch.is_empty() {
        let _ = full.send((batch, new_nodes(&stacks, &mut sent)));
    }
    Ok(stacks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cprace_events::*;

    fn long(kind: Kind, addr: u64, pc: u64, seq: u64, extra: &[u64]) -> Vec<u64> {
        let w = encode_long(kind, 0, false, addr, pc, seq, 0, extra);
        w[..1 + kind.payload()].to_vec()
    }

    fn file(dir: &Path, name: &str, words: &[u64], extra: &[u8]) {
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes.extend_from_slice(extra);
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    fn merged(dir: &Path) -> Result<Vec<Event>> {
        let mut out = Vec::new();
        merge(dir, |e, _, _| {
            out.push(*e);
            Ok(())
        })?;
        Ok(out)
    }

    fn short(write: bool, slot: usize, addr: u64) -> u64 {
        access_word(write, 2, slot, addr)
    }

    #[test]
    fn words_decode_and_merge_in_the_global_order() {
        let dir = tempfile::tempdir().unwrap();
        let s = pc_slot(0x1234);
        let mut t1 = vec![pc_word(s, 0x1234), short(false, s, 0x10)];
        t1.extend(long(Kind::Acquire, 0x99, 0x1234, 0, &[]));
        t1.extend([seq_word(1), short(true, s, 0x10)]);
        t1.extend(long(Kind::Release, 0x99, 0x1240, 1, &[]));
        t1.extend([seq_word(2), short(false, s, 0x20)]);
        let s2 = pc_slot(0x2000);
        let mut t2 = vec![seq_word(2), pc_word(s2, 0x2000), short(false, s2, 0x30)];
        t2.extend(long(Kind::Release, 0x99, 0x2030, 3, &[]));
        // A pending acquire followed by more: void.
        let p = encode_long(Kind::Acquire, 0, true, 0x77, 0x2040, 0, 0, &[]);
        t2.extend(&p[..4]);
        t2.extend([seq_word(4), short(true, s2, 0x40)]);
        // A pending acquire at the end: a request, after everything.
        t2.extend(&p[..4]);
        file(dir.path(), "t1.bin", &t1, &[]);
        file(dir.path(), "t2.bin", &t2, &[1, 2, 3]);
        file(dir.path(), "t0.bin", &[], &[]);
        let got = merged(dir.path()).unwrap();
        let brief: Vec<(u32, u64)> = got.iter().map(|e| (e.tid, e.addr)).collect();
        assert_eq!(
            brief,
            [
                (1, 0x10),
                (1, 0x99),
                (1, 0x10),
                (1, 0x99),
                (1, 0x20),
                (2, 0x30),
                (2, 0x99),
                (2, 0x40),
                (2, 0x77)
            ]
        );
        assert!(matches!(got[8].what, What::Request(_)));
        assert!(matches!(
            got[2].what,
            What::Access {
                write: true,
                size: 4
            }
        ));
    }

    /// A tail file holding chunk `index` with `words`.
    fn tail(dir: &Path, tid: u32, index: u64, words: &[u64]) {
        let mut bytes = index.to_le_bytes().to_vec();
        bytes.resize(TAIL_HEADER_BYTES as usize, 0);
        bytes.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        bytes.resize(TAIL_HEADER_BYTES as usize + CHUNK_WORDS * 8, 0);
        std::fs::write(dir.join(format!("t{tid}.tail")), bytes).unwrap();
    }

    #[test]
    fn a_tail_goes_after_the_chunks_its_bin_holds_unless_it_holds_it_already() {
        let dir = tempfile::tempdir().unwrap();
        let s = pc_slot(0x1234);
        let first = [pc_word(s, 0x1234), short(false, s, 0x10)];
        let second = [pc_word(s, 0x1234), short(true, s, 0x20)];
        // t1: one chunk written out, the second in its tail.
        let mut chunk0 = first.to_vec();
        chunk0.push(TAG_SKIP << TAG_SHIFT);
        chunk0.resize(CHUNK_WORDS, 0);
        file(dir.path(), "t1.bin", &chunk0, &[]);
        tail(dir.path(), 1, 1, &second);
        // t2: nothing written out yet; t3: the tail's chunk was written out
        // before the thread could name the next, so the tail is stale; t4:
        // the write of chunk 0 was cut short, the tail still holds it.
        tail(dir.path(), 2, 0, &first);
        file(dir.path(), "t3.bin", &chunk0, &[]);
        tail(dir.path(), 3, 0, &[short(true, s, 0x99)]);
        file(dir.path(), "t4.bin", &[short(true, s, 0x99)], &[]);
        tail(dir.path(), 4, 0, &first);
        let got = merged(dir.path()).unwrap();
        let mut brief: Vec<(u32, u64)> = got.iter().map(|e| (e.tid, e.addr)).collect();
        brief.sort_unstable();
        assert_eq!(
            brief,
            [(1, 0x10), (1, 0x20), (2, 0x10), (3, 0x10), (4, 0x10)]
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tail")), "{names:?}");
        // Read again: the same events, from the `.bin` files alone.
        let again = merged(dir.path()).unwrap();
        assert_eq!(again, got);
        // A tail past the chunks its `.bin` holds: chunks are missing.
        tail(dir.path(), 5, 2, &first);
        let err = merged(dir.path()).unwrap_err().to_string();
        assert!(err.contains("t5.tail") && err.contains("chunk 2"), "{err}");
    }

    #[test]
    fn chunks_skip_to_the_next_boundary_and_stacks_are_shared() {
        let dir = tempfile::tempdir().unwrap();
        let s = pc_slot(0x500);
        let mut t = vec![node_word(0), 0x400, stack_word(1), pc_word(s, 0x500)];
        t.push(short(false, s, 0x8));
        t.push(TAG_SKIP << TAG_SHIFT);
        t.resize(CHUNK_WORDS, 0);
        t.extend([node_word(1), 0x410, stack_word(2), short(true, s, 0x10)]);
        file(dir.path(), "t3.bin", &t, &[]);
        let mut u = vec![node_word(0), 0x400, stack_word(1), pc_word(s, 0x500)];
        u.push(short(false, s, 0x18));
        file(dir.path(), "t4.bin", &u, &[]);
        let mut events = Vec::new();
        let stacks = merge(dir.path(), |e, _, _| {
            events.push(*e);
            Ok(())
        })
        .unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[0].stack, events[2].stack,
            "one stack for both threads"
        );
        assert_eq!(stacks.pcs(events[1].stack), [0x410, 0x400]);
    }

    #[test]
    fn a_corrupt_word_is_an_error_naming_the_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "t3.bin", &[seq_word(0), stack_word(7)], &[]);
        let err = format!("{:#}", merged(dir.path()).unwrap_err());
        assert!(
            err.contains("t3.bin") && err.contains("byte 8") && err.contains("node 7"),
            "{err}"
        );
    }

    #[test]
    fn an_error_of_the_callback_stops_the_merge() {
        let dir = tempfile::tempdir().unwrap();
        let words = vec![short(false, 0, 0x10); BATCH * (QUEUE + 4)];
        file(dir.path(), "t1.bin", &words, &[]);
        let mut seen = 0;
        let r = merge(dir.path(), |_, _, _| {
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
    fn modules_of_another_format_are_refused() {
        let ok = format!("{}\na b c d\n", cprace_events::FORMAT);
        assert_eq!(segments(&ok).unwrap(), "a b c d\n");
        assert!(segments("1000 2000 1000 /bin/prog\n").is_err());
        assert!(segments("").is_err());
    }
}
