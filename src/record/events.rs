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
//! ([`merge`]'s callback) uses the second core. It may also read the files
//! while the program writes them (see [`merge`] and [`super::live`]).

use super::live;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cprace_events::{
    Access, CHUNK_WORDS, Decoder, Kind, Long, MAX_TID, Record, Step, TAIL_HEADER_BYTES,
};
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

/// One thread's file, read in blocks and decoded record by record; while
/// the program runs, with its tail mapped ([`live::Tail`]).
struct Stream {
    tid: u32,
    path: PathBuf,
    file: File,
    /// Bytes of the file (once it is whole).
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
    /// The thread's tail while the program runs; None once its files are
    /// whole.
    live: Option<live::Tail>,
    /// Its last record was the thread's end: nothing follows.
    over: bool,
    /// Set by the merge for one call of [`Stream::next`]: the thread was
    /// parked (its park count) after the merge had seen the order up to
    /// this `seq`.
    parked: Option<(u64, u64)>,
}

/// A stream's next record with its merge key.
type Head = (u64, Event);

/// What a stream has next.
enum Next {
    /// A record.
    Head(Head),
    /// Nothing yet (the program runs): the thread's next record has at
    /// least this merge key.
    Wait(u64),
    /// Nothing more.
    Done,
}

/// What [`Stream::record`] found.
enum Rec {
    Got(Record, u64, u32),
    Wait,
    Done,
}

/// Whether the runtime may take a record of `kind` back while it is the
/// thread's last (the call it stands for failed): while the program runs,
/// such a record counts only once another follows it or the thread parks.
fn retractable(kind: Kind) -> bool {
    matches!(kind, Kind::Release | Kind::SyncWrite | Kind::Fork)
}

impl Stream {
    fn open(tid: u32, path: PathBuf, block: usize, live: Option<live::Tail>) -> Result<Stream> {
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        let size = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let words = if live.is_some() {
            block
        } else {
            block.min(size as usize / 8 + 1)
        };
        Ok(Stream {
            tid,
            path,
            file,
            size,
            buf: vec![0; words.max(64)],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            dec: Decoder::default(),
            nodes: vec![0],
            live,
            over: false,
            parked: None,
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
    fn next(&mut self, stacks: &mut Stacks) -> Result<Next> {
        match self.access() {
            Some(a) => Ok(Next::Head((a.seq << 1, self.access_event(a)))),
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

    /// The least merge key the thread's next record can have while the
    /// program runs: its own `seq` goes only up, and a parked thread's
    /// next records come after what the merge had seen.
    fn bound(&self) -> u64 {
        self.dec.seq().max(self.parked.map_or(0, |p| p.0)) << 1
    }

    /// Whether the thread is still parked as the merge saw it before this
    /// call: then it wrote nothing since, and its last record stands.
    fn still_parked(&self) -> bool {
        match (self.parked, &self.live) {
            (Some((_, parks)), Some(t)) => t.parks() == parks,
            _ => false,
        }
    }

    /// Whether the long record `l`, just decoded, may still change while
    /// the program runs: a pending acquire (completed in place, or taken
    /// back), or a record the runtime may take back.
    fn unsettled(&self, l: &Long) -> bool {
        self.live.is_some() && (l.pending || retractable(l.kind))
    }

    /// Whether a committed word follows the long record `l`, just decoded.
    /// Else it is put back, to be decoded again: from the words as they are
    /// now when `fresh` is false (the caller then decodes again; `fresh`
    /// words are copied after the merge read the thread's park count), or
    /// later.
    fn followed(&mut self, l: &Long, fresh: &mut bool) -> Result<Option<bool>> {
        if self.pos < self.end && self.buf[self.pos] != 0 {
            return Ok(Some(true));
        }
        // State words before it stay decoded; a long record changes no state.
        self.pos -= 1 + l.kind.payload();
        if !*fresh {
            *fresh = true;
            self.refill()?;
            return Ok(None);
        }
        Ok(Some(false))
    }

    /// [`Stream::next`] past [`Stream::access`].
    #[inline(never)]
    fn next_slow(&mut self, stacks: &mut Stacks) -> Result<Next> {
        let mut fresh = false;
        loop {
            let (record, seq, node) = match self.record(stacks)? {
                Rec::Got(r, seq, node) => (r, seq, node),
                Rec::Wait => return Ok(Next::Wait(self.bound())),
                Rec::Done => return Ok(Next::Done),
            };
            let stack = self.nodes.get(node as usize).copied().unwrap_or(0);
            let (what, addr, pc, numbered) = match record {
                Record::Access {
                    write,
                    size,
                    addr,
                    pc,
                } => (What::Access { write, size }, addr, pc, false),
                Record::Long(l) if self.unsettled(&l) => match self.followed(&l, &mut fresh)? {
                    // Decode it again, as it is now.
                    None => continue,
                    // The last record of a thread parked since before it
                    // was copied stands.
                    Some(false) if !l.pending && self.still_parked() => {
                        self.pos += 1 + l.kind.payload();
                        (What::Long(l), l.addr, l.pc, l.kind.numbered())
                    }
                    // A pending acquire becomes an acquire numbered then;
                    // a record that may be taken back holds its place.
                    Some(false) if l.pending => return Ok(Next::Wait(self.bound())),
                    Some(false) => {
                        return Ok(Next::Wait(self.bound().min(seq << 1 | 1)));
                    }
                    // Void once the thread went on.
                    Some(true) if l.pending => continue,
                    Some(true) => (What::Long(l), l.addr, l.pc, l.kind.numbered()),
                },
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
                        return Ok(Next::Head((u64::MAX, e)));
                    }
                    continue;
                }
                Record::Long(l) => {
                    self.over |= l.kind == Kind::ThreadEnd;
                    (What::Long(l), l.addr, l.pc, l.kind.numbered())
                }
                Record::Node { .. } => continue,
            };
            let e = Event {
                tid: self.tid,
                what,
                addr,
                pc,
                stack,
            };
            return Ok(Next::Head((seq << 1 | u64::from(numbered), e)));
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
    fn record(&mut self, stacks: &mut Stacks) -> Result<Rec> {
        // While the program runs, the words are read again once when they
        // run out: the thread may have committed more since.
        let mut again = self.live.is_some() && !self.over;
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
                    return Ok(Rec::Got(record, seq, node));
                }
                Ok(Step::Skip { words }) => {
                    // The rest of this chunk is unused.
                    let at = self.base + (self.pos + words) as u64;
                    let next = (at / CHUNK_WORDS as u64 + 1) * CHUNK_WORDS as u64;
                    self.seek(next)?;
                }
                Ok(Step::NeedMore { words }) if self.live.is_none() => {
                    self.pos += words;
                    if self.eof {
                        // A record cut short: the thread was writing it when
                        // the program ended (the runtime commits the first
                        // word last, so this only happens to a file a copy
                        // cut short). Its complete records stand.
                        return Ok(Rec::Done);
                    }
                    self.refill()?;
                }
                // Nothing more committed; while the program runs, a record
                // cut short is one not committed yet (it is committed whole).
                Ok(Step::End { words }) | Ok(Step::NeedMore { words }) => {
                    self.pos += words;
                    if again {
                        again = false;
                        self.refill()?;
                        continue;
                    }
                    return Ok(self.waiting());
                }
                Err((at, e)) => return Err(self.corrupt(self.pos + at, e)),
            }
        }
    }

    /// What running out of words means: more may come while the program
    /// runs, unless the thread ended.
    fn waiting(&self) -> Rec {
        if self.live.is_some() && !self.over {
            Rec::Wait
        } else {
            Rec::Done
        }
    }

    /// Continues reading at word `word` of the file.
    fn seek(&mut self, word: u64) -> Result<()> {
        self.pos = 0;
        self.end = 0;
        self.base = word;
        if self.live.is_none() && word * 8 >= self.size {
            self.eof = true;
            return Ok(());
        }
        self.eof = false;
        self.refill()
    }

    /// The program ended and the tails were settled: the rest comes from
    /// the file alone, from where the decoding is.
    fn settled(&mut self) -> Result<()> {
        self.live = None;
        self.size = self
            .file
            .metadata()
            .with_context(|| format!("cannot read {}", self.path.display()))?
            .len();
        // Words read from the tail but not decoded may be stale.
        self.end = self.pos;
        self.eof = false;
        Ok(())
    }

    /// Moves the undecoded words to the front and reads more after them
    /// (while the program runs, reads the undecoded words again too).
    #[cold]
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.live.is_some() {
            self.end = 0;
            return self.read_live();
        }
        if self.end == self.buf.len() {
            // One record never spans more than a buffer; a full buffer of
            // undecodable words would be a decoder error before this.
            return Err(self.corrupt(0, "a record longer than the read buffer"));
        }
        self.read_file(u64::MAX)
    }

    /// Reads words from the thread's tail, or from its `.bin` for the
    /// chunks the tail has moved past.
    fn read_live(&mut self) -> Result<()> {
        let cw = CHUNK_WORDS as u64;
        loop {
            let at = self.base + self.end as u64;
            let Some(tail) = &self.live else {
                return Ok(());
            };
            let (c, held) = (at / cw, tail.chunk());
            if c < held {
                // Chunks before the tail's are whole in the `.bin`.
                return self.read_file(held * cw);
            }
            if c > held {
                return Ok(());
            }
            let from = (at - c * cw) as usize;
            if let Some(n) = tail.copy(c, from, &mut self.buf[self.end..]) {
                self.end += n;
                return Ok(());
            }
        }
    }

    /// Reads the file's words from `base + end` on, up to word `limit`
    /// (u64::MAX: to the end, which is then `eof`).
    fn read_file(&mut self, limit: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let at = (self.base + self.end as u64) * 8;
        let room = (self.buf.len() - self.end) * 8;
        let want =
            room.min(usize::try_from(limit.saturating_mul(8).saturating_sub(at)).unwrap_or(room));
        let bytes: &mut [u8] = &mut bytemuck_words(&mut self.buf[self.end..])[..want];
        let mut got = 0;
        while got < bytes.len() {
            let n = self
                .file
                .read_at(&mut bytes[got..], at + got as u64)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if n == 0 {
                self.eof = limit == u64::MAX;
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
            let read = at + got as u64;
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
///
/// With `running`, the program is still running (until `running` turns
/// false): the merge reads the files as the threads write them and hands
/// on every event it knows no other can come before (see [`Merge::poll`]);
/// once the program ended it settles the tails and goes on from the files.
/// `f` then also gets the run's `modules` listing before the first event,
/// and again before the first event read after the listing changed (a
/// `dlopen`): an event's addresses are named with the listing of when it
/// was recorded.
pub fn merge(dir: &Path, running: Option<&AtomicBool>, f: &mut impl Merged) -> Result<Stacks> {
    let live = running.and_then(|r| Live::wait(dir, r));
    let mut streams = Vec::new();
    if live.is_none() {
        let files = thread_files(dir)?;
        let block = read_block(files.len());
        for (tid, path) in files {
            streams.push(Stream::open(tid, path, block, None)?);
        }
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(QUEUE);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<Event>>();
    std::thread::scope(|scope| {
        let merger = std::thread::Builder::new()
            .name("cprace-merge".into())
            .spawn_scoped(scope, move || {
                let listing = running.is_some().then(|| Listing {
                    path: dir.join("modules"),
                    seen: None,
                    text: String::new(),
                });
                Merge::new(streams, dir).order(live, listing, &full_tx, &empty_rx)
            })
            .context("cannot start the merge thread")?;
        let mut r = Ok(());
        // The caller's copy of the stacks, grown with each batch.
        let mut mine = Stacks::default();
        mine.intern(0, 0);
        for (mut batch, nodes, listing) in full_rx.iter() {
            for (parent, pc) in nodes {
                mine.intern(parent, pc);
            }
            if let Some(l) = listing
                && let Err(e) = f.listing(&l)
            {
                r = Err(e);
                break;
            }
            if let Err(e) = batch
                .iter()
                .enumerate()
                .try_for_each(|(i, e)| f.event(e, batch.get(i + AHEAD), &mine))
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

/// What [`merge`] hands its events to.
pub trait Merged {
    /// An event, the one [`AHEAD`] events later, and the stacks so far.
    fn event(&mut self, e: &Event, ahead: Option<&Event>, stacks: &Stacks) -> Result<()>;
    /// The run's `modules` listing, as it is from the next event on (only
    /// while the program runs).
    fn listing(&mut self, _listing: &str) -> Result<()> {
        Ok(())
    }
}

impl<F: FnMut(&Event, Option<&Event>, &Stacks) -> Result<()>> Merged for F {
    fn event(&mut self, e: &Event, ahead: Option<&Event>, stacks: &Stacks) -> Result<()> {
        self(e, ahead, stacks)
    }
}

/// A batch of merged events, the stacks `(id, parent/pc)` defined since
/// the last batch, and the `modules` listing when it changed.
type Batch = (Vec<Event>, Vec<(u32, u64)>, Option<String>);

/// The `modules` file of a running program, watched for changes.
struct Listing {
    path: PathBuf,
    /// Its length, modification time and inode when last read.
    seen: Option<(u64, i64, i64, u64)>,
    text: String,
}

impl Listing {
    /// The listing when it changed since the last call (the first time:
    /// the listing), else None.
    fn changed(&mut self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&self.path).ok()?;
        let now = (m.len(), m.mtime(), m.mtime_nsec(), m.ino());
        if self.seen == Some(now) {
            return None;
        }
        let text = std::fs::read_to_string(&self.path).ok()?;
        self.seen = Some(now);
        (text != self.text).then(|| {
            self.text = text;
            self.text.clone()
        })
    }
}

/// Words read from each of `files` thread files at a time.
fn read_block(files: usize) -> usize {
    (BUFFERS / 8 / files.max(1)).clamp(1 << 10, BLOCK / 8)
}

/// Words read from a thread's files at a time while the program runs.
const LIVE_BLOCK: usize = 1 << 13;
/// The longest pause of a merge that waits for the program's threads.
const MAX_PAUSE: Duration = Duration::from_millis(2);

/// A run whose program is still running.
struct Live<'a> {
    running: &'a AtomicBool,
    control: live::Control,
    /// Thread ids below this have their streams.
    next_tid: u32,
    /// What threads without a stream yet may still write: their next
    /// records' least merge key and stream index.
    unknown: (u64, usize),
}

impl<'a> Live<'a> {
    /// Waits for the runtime's control file; None when the program ended
    /// without one (the files are then read whole).
    fn wait(dir: &Path, running: &'a AtomicBool) -> Option<Live<'a>> {
        loop {
            if let Some(control) = live::Control::open(dir) {
                return Some(Live {
                    running,
                    control,
                    next_tid: 0,
                    unknown: (0, 0),
                });
            }
            if !running.load(Ordering::Acquire) {
                return None;
            }
            std::thread::sleep(MAX_PAUSE);
        }
    }
}

/// The merge's state (on its own thread).
struct Merge<'a> {
    dir: &'a Path,
    /// By thread id.
    streams: Vec<Stream>,
    /// Each stream's next event, when it is in the heap.
    heads: Vec<Event>,
    /// The streams with a head: (merge key, index).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The streams waiting for their thread (the program runs): (least key
    /// of their next record, index).
    waiting: Vec<(u64, usize)>,
    /// The least of `waiting`.
    wait_min: (u64, usize),
    /// The global order's numbers read so far: every `seq` and number
    /// decoded is below this.
    seen: u64,
    stacks: Stacks,
}

/// The global order's numbers a record of merge key `key` shows began.
#[inline]
fn seen_by(key: u64) -> u64 {
    (key >> 1) + (key & 1)
}

impl<'a> Merge<'a> {
    fn new(streams: Vec<Stream>, dir: &'a Path) -> Merge<'a> {
        let mut stacks = Stacks::default();
        stacks.intern(0, 0);
        let n = streams.len();
        Merge {
            dir,
            streams,
            heads: vec![Event::default(); n],
            heap: BinaryHeap::new(),
            waiting: (0..n).map(|i| (0, i)).collect(),
            wait_min: (0, 0),
            seen: 0,
            stacks,
        }
    }

    /// Files stream `i`'s next step.
    fn place(&mut self, i: usize, next: Next) {
        match next {
            Next::Head((key, e)) => {
                self.seen = self.seen.max(seen_by(key));
                self.heap.push(Reverse((key, i)));
                self.heads[i] = e;
            }
            Next::Wait(bound) => {
                self.waiting.push((bound, i));
                self.wait_min = self.wait_min.min((bound, i));
            }
            // Its buffer goes.
            Next::Done => self.streams[i].buf = Vec::new(),
        }
    }

    /// Asks every waiting stream for its next step again (`parked` for
    /// one whose thread is parked: its records then come after `seen`).
    fn ask_waiting(&mut self, live: bool) -> Result<()> {
        let snap = self.seen;
        for (_, i) in std::mem::take(&mut self.waiting) {
            let s = &mut self.streams[i];
            // Read before the thread's words are read again.
            let parks = s.live.as_ref().map_or(0, |t| t.parks());
            s.parked = (live && parks & 1 == 1).then_some((snap, parks));
            let next = s.next(&mut self.stacks)?;
            self.streams[i].parked = None;
            self.place(i, next);
        }
        self.wait_min = self
            .waiting
            .iter()
            .copied()
            .min()
            .unwrap_or((u64::MAX, usize::MAX));
        Ok(())
    }

    /// While the program runs: opens the streams of threads that started,
    /// asks the waiting streams again, and says how far the merge may go.
    /// A thread's records come in its own order, each with a `seq` at
    /// least its last one's; a parked thread's, or a thread's not started
    /// yet, after every number read before (the runtime's `buffer.rs`).
    fn poll(&mut self, live: &mut Live<'_>) -> Result<()> {
        let snap = self.seen;
        let started = live.control.threads();
        while u64::from(live.next_tid) < started {
            let tid = live.next_tid;
            let path = self.dir.join(format!("t{tid}.tail"));
            // A thread whose tail is not made (or sized) yet: wait for it.
            let Some(tail) = live::Tail::open(&path) else {
                break;
            };
            let s = Stream::open(tid, path.with_extension("bin"), LIVE_BLOCK, Some(tail))?;
            self.streams.push(s);
            self.heads.push(Event::default());
            self.waiting.push((0, self.streams.len() - 1));
            live.next_tid += 1;
        }
        live.unknown = if u64::from(live.next_tid) < started {
            (0, 0)
        } else {
            (snap << 1, self.streams.len())
        };
        self.ask_waiting(true)
    }

    /// The program ended: the tails go to their `.bin` files, the streams
    /// read on from those, and threads never seen running get streams.
    fn settle(&mut self, live: &Live<'_>) -> Result<()> {
        settle_tails(self.dir)?;
        for s in &mut self.streams {
            s.settled()?;
        }
        let files = thread_files(self.dir)?;
        let block = read_block(files.len());
        for (tid, path) in files {
            if tid >= live.next_tid {
                self.streams.push(Stream::open(tid, path, block, None)?);
                self.heads.push(Event::default());
                self.waiting.push((0, self.streams.len() - 1));
            }
        }
        self.ask_waiting(false)
    }

    /// The merge proper: sends the events to `full` in the global order, in
    /// batches (reusing those that come back on `empty`), and returns the
    /// stacks, each batch with the stacks defined since the last. Stops
    /// quietly when the receiver is gone.
    fn order(
        mut self,
        mut live: Option<Live<'_>>,
        mut listing: Option<Listing>,
        full: &mpsc::SyncSender<Batch>,
        empty: &mpsc::Receiver<Vec<Event>>,
    ) -> Result<Stacks> {
        match &mut live {
            Some(l) => self.poll(l)?,
            None => self.ask_waiting(false)?,
        }
        let mut batch = Vec::with_capacity(BATCH);
        let mut sent = 1;
        let new_nodes = |stacks: &Stacks, sent: &mut usize| {
            let n = stacks.nodes[*sent..].to_vec();
            *sent = stacks.nodes.len();
            n
        };
        // Hands over the batch when full (or `now`); false when the
        // receiver is gone.
        // The listing is looked at after the batch's records were read:
        // the runtime lists an object before its code runs.
        let mut send = |batch: &mut Vec<Event>, stacks: &Stacks, sent: &mut usize, now: bool| {
            if batch.len() < BATCH && !now {
                return true;
            }
            let full_one = std::mem::replace(
                batch,
                empty
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH)),
            );
            let changed = listing.as_mut().and_then(Listing::changed);
            full.send((full_one, new_nodes(stacks, sent), changed))
                .is_ok()
        };
        let mut pause = Duration::ZERO;
        loop {
            let limit = match &live {
                Some(l) => self.wait_min.min(l.unknown),
                None => (u64::MAX, usize::MAX),
            };
            let Some(&Reverse(top)) = self.heap.peek().filter(|Reverse(t)| *t < limit) else {
                let Some(l) = &mut live else {
                    break;
                };
                // Waiting for the program: what is merged goes on now.
                if !batch.is_empty() && !send(&mut batch, &self.stacks, &mut sent, true) {
                    return Ok(self.stacks);
                }
                if !l.running.load(Ordering::Acquire) {
                    self.settle(l)?;
                    live = None;
                    continue;
                }
                let before = (limit, self.heap.len());
                self.poll(l)?;
                let now = (self.wait_min.min(l.unknown), self.heap.len());
                if now == before {
                    pause = (pause * 2).clamp(Duration::from_micros(50), MAX_PAUSE);
                    std::thread::sleep(pause);
                } else {
                    pause = Duration::ZERO;
                }
                continue;
            };
            self.heap.pop();
            let i = top.1;
            // Stay on this thread while its events come before every other
            // head and every waiting thread's next.
            let bound = self
                .heap
                .peek()
                .map_or((u64::MAX, usize::MAX), |Reverse(b)| *b)
                .min(limit);
            batch.push(self.heads[i]);
            if !send(&mut batch, &self.stacks, &mut sent, false) {
                return Ok(self.stacks);
            }
            loop {
                let s = &mut self.streams[i];
                // Accesses go straight into the batch (see `Stream::access`).
                let (key, e) = match s.access() {
                    Some(a) => (a.seq << 1, s.access_event(a)),
                    None => match s.next_slow(&mut self.stacks)? {
                        Next::Head(h) => h,
                        other => {
                            self.place(i, other);
                            break;
                        }
                    },
                };
                if (key, i) >= bound {
                    self.place(i, Next::Head((key, e)));
                    break;
                }
                self.seen = self.seen.max(seen_by(key));
                batch.push(e);
                if !send(&mut batch, &self.stacks, &mut sent, false) {
                    return Ok(self.stacks);
                }
            }
        }
        if !batch.is_empty() {
            send(&mut batch, &self.stacks, &mut sent, true);
        }
        Ok(self.stacks)
    }
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
        merge(dir, None, &mut |e: &Event,
                               _: Option<&Event>,
                               _: &Stacks| {
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
        let stacks = merge(
            dir.path(),
            None,
            &mut |e: &Event, _: Option<&Event>, _: &Stacks| {
                events.push(*e);
                Ok(())
            },
        )
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
        let r = merge(
            dir.path(),
            None,
            &mut |_: &Event, _: Option<&Event>, _: &Stacks| {
                seen += 1;
                if seen == 10 {
                    anyhow::bail!("stop");
                }
                Ok(())
            },
        );
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
