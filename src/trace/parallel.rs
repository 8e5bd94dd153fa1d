//! Parsing text traces on every core.
//!
//! A text trace's cost is in its lines: finding the fields and turning names
//! into ids. Finding fields needs nothing but the line; ids are dense in
//! order of first appearance, which only a pass in order can give. So the
//! calling thread reads the input in blocks of whole lines and hands them
//! round-robin to workers; each worker scans its blocks with the format's
//! line scanner and names the events in tables of its own (local ids), then
//! sends back the events, the names new to it in that block (in their order
//! of appearance) and any error. The calling thread takes the blocks back in
//! input order, gives each block's new names their global ids, renumbers the
//! events through a per-worker vector, validates them in order and hands
//! them on. A name new to the trace in some block is new to the worker that
//! parsed it, so the global ids are those of one pass in order (a worker
//! whose tables grow large starts them afresh after a block: every name of
//! its next block is then new to it, which keeps that true); errors are
//! taken in input order, so the first error of such a pass is the one
//! returned, with the same line and text.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::error::LoadError;
use super::intern::{Interner, Key};
use super::line_cache::{LineCache, LineIds};
use super::lines::{MAX_LINE, too_long, utf8_block};
use super::model::{Event, EventId, Names, TargetKind};
use super::validate::{Builder, Named, Namer, PlainLine, Push, TextEvent, check_fields, named};

/// What scanning a block gives: nothing, or the first error.
pub(crate) type Scanned = Result<(), LoadError>;

/// A text format's line scanner.
pub(crate) trait Scan: Sync {
    /// Parse the whole lines of `text`, counting them in `n` (see
    /// [`super::lines::for_each_block`]) and handing their events to `p`.
    fn scan<P: Push>(&self, file: &str, text: &str, n: &mut u64, p: &mut P) -> Scanned;
}

/// Bytes read for one block (more when a line is longer).
const BLOCK: usize = 1 << 18;
/// Blocks handed to a worker and not yet taken back, at most.
const AHEAD: usize = 2;
/// Workers at most.
const MAX_WORKERS: usize = 8;
/// Blocks parsed in one pass before the workers start (4 MB): on two cores
/// workers, their tables and the merge cost more than they saved on inputs
/// up to about this size (the Java Grande `series` trace, 1.4 MB, read 11 %
/// faster in one pass with a third less CPU; 8 MB of `sor` as fast).
const ONE_PASS: usize = 16;
/// Names a worker keeps before it starts its tables afresh (after a block):
/// a worker's tables repeat the global ones, and traces name variables by
/// the hundred thousand.
const LOCAL_NAMES: usize = 1 << 14;
/// Array slots a worker's tables keep beyond two a name (the merge's tables
/// keep 1M): arrays the worker meets far apart spill to its name table
/// instead. With the 1M budget each worker faulted in up to about 18 MB of
/// family vectors between fresh starts; `crypt`'s HB peaked at 68 MB.
const LOCAL_BUDGET: usize = 1 << 16;

/// Parse the text read from `r` with `scan`, feeding `b`: on one worker per
/// core when the input is larger than one block, leaving out the cores that
/// `busy` threads feeding `r` keep busy. On two cores with a decompressor
/// that is one pass here: the workers, the merge and the decompressor on
/// one core lost more than the second parser gained (every Java Grande
/// trace read 5-22 % faster from xz in one pass, with less CPU).
pub(crate) fn parse<R: Read, S: FnMut(EventId, &Event), C: Scan>(
    r: R,
    b: &mut Builder<'_, S>,
    scan: &C,
    busy: usize,
) -> Result<(), LoadError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(busy)
        .min(MAX_WORKERS);
    parse_with(r, b, scan, (BLOCK, workers, LOCAL_NAMES, ONE_PASS))
}

/// [`parse`] with blocks of `block` bytes, `workers` workers, at most about
/// `local_names` names in a worker's tables, and the first `one_pass` blocks
/// parsed here in one pass (tests use tiny blocks and tables to cross many
/// block boundaries and fresh starts, and switch to the workers anywhere).
pub(crate) fn parse_with<R: Read, S: FnMut(EventId, &Event), C: Scan>(
    r: R,
    b: &mut Builder<'_, S>,
    scan: &C,
    (block, workers, local_names, one_pass): (usize, usize, usize, usize),
) -> Result<(), LoadError> {
    let file = b.file();
    let mut blocks = Blocks::new(r, block);
    let mut line_no = 0u64;
    let mut piece = blocks.next(Vec::new());
    // A small input (the start of any; all of it on one core, or when one
    // block is left): one pass here. The workers then go on where it
    // stopped, with the names it gave ids already in `b`'s tables.
    let mut parsed = 0usize;
    while workers <= 1 || parsed < one_pass || blocks.done() {
        match piece {
            None => return Ok(()),
            Some(Piece::Lines(buf)) => {
                utf8_block(file, &buf, &mut line_no, &mut |n, s| {
                    scan.scan(file, s, n, b)
                })?;
                parsed += 1;
                piece = blocks.next(buf);
            }
            Some(p) => return Err(p.error(file, line_no)),
        }
    }
    // Input is left (`blocks.done()` is false): the workers take it from `piece` on.
    std::thread::scope(|s| {
        let mut jobs: Vec<SyncSender<Job>> = Vec::with_capacity(workers);
        let mut results: Vec<Receiver<Done>> = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_tx, job_rx) = sync_channel::<Job>(AHEAD);
            let (done_tx, done_rx) = sync_channel::<Done>(AHEAD);
            s.spawn(move || work(file, scan, local_names, job_rx, done_tx));
            jobs.push(job_tx);
            results.push(done_rx);
        }
        let mut remaps: Vec<Remap> = (0..workers).map(|_| Remap::default()).collect();
        let mut spare: Vec<Job> = Vec::new();
        let mut inflight: VecDeque<Slot> = VecDeque::new();
        let (mut next_worker, mut reading) = (0usize, true);
        let mut pending = piece;
        loop {
            while reading && inflight.len() < AHEAD * workers {
                let piece = match pending.take() {
                    Some(p) => Some(p),
                    None => {
                        let buf = spare.last_mut().map(|j| std::mem::take(&mut j.buf));
                        blocks.next(buf.unwrap_or_default())
                    }
                };
                match piece {
                    None => reading = false,
                    Some(Piece::Lines(buf)) => {
                        let mut job = spare.pop().unwrap_or_default();
                        job.buf = buf;
                        // Never blocks: a worker has at most AHEAD blocks out.
                        if jobs[next_worker].send(job).is_err() {
                            break;
                        }
                        inflight.push_back(Slot::Worker(next_worker));
                        next_worker = (next_worker + 1) % workers;
                    }
                    Some(p) => {
                        inflight.push_back(Slot::Stop(p));
                        reading = false;
                    }
                }
            }
            let Some(slot) = inflight.pop_front() else {
                return Ok(());
            };
            let w = match slot {
                Slot::Worker(w) => w,
                Slot::Stop(p) => return Err(p.error(file, line_no)),
            };
            let Ok(mut done) = results[w].recv() else {
                // The worker panicked; the scope passes its panic on.
                return Err(LoadError::new(file, line_no, b"", "parser thread failed"));
            };
            merge(b, &mut remaps[w], &done, line_no)?;
            if done.fresh {
                remaps[w] = Remap::default();
            }
            if let Some(mut e) = done.error.take() {
                e.line += line_no;
                return Err(e);
            }
            line_no += done.lines;
            spare.push(Job {
                buf: done.buf,
                events: done.events,
                starts: done.starts,
            });
        }
    })
}

/// Give the new names of a block parsed by one worker their global ids,
/// then validate and hand on its events; `base` is the number of lines
/// before the block.
fn merge<S: FnMut(EventId, &Event)>(
    b: &mut Builder<'_, S>,
    remap: &mut Remap,
    done: &Done,
    base: u64,
) -> Result<(), LoadError> {
    let names = &mut b.names;
    let tables: [&mut Interner; 4] = [
        &mut names.threads,
        &mut names.locks,
        &mut names.vars,
        &mut names.locs,
    ];
    for ((table, ids), new) in tables.into_iter().zip(&mut remap.ids).zip(&done.new) {
        let mut start = 0;
        for &end in &new.ends {
            ids.push(table.intern(&new.text[start..end as usize]));
            start = end as usize;
        }
    }
    let [threads, locks, vars, locs] = &remap.ids;
    for (j, ev) in done.events.iter().enumerate() {
        let t = threads[ev.thread as usize];
        let target = match ev.op.target_kind() {
            TargetKind::Variable => vars[ev.target as usize],
            TargetKind::Lock => locks[ev.target as usize],
            TargetKind::Thread => threads[ev.target as usize],
        };
        let loc = locs[ev.loc as usize];
        if let Err(p) = b.push_ids(t, ev.op, target, loc) {
            let start = done.starts[j] as usize;
            let buf = &done.buf;
            let line = base + 1 + memchr::memchr_iter(b'\n', &buf[..start]).count() as u64;
            let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
            return Err(b.error(line, &buf[start..end], p));
        }
    }
    Ok(())
}

/// One worker: scan each block it gets, name its events in local tables.
fn work<C: Scan>(
    file: &str,
    scan: &C,
    local_names: usize,
    jobs: Receiver<Job>,
    done: SyncSender<Done>,
) {
    let mut local = Local {
        file: file.to_string(),
        names: Names::with_family_budget(LOCAL_BUDGET),
        ..Local::default()
    };
    for job in jobs {
        let before = local.lens();
        local.events = job.events;
        local.events.clear();
        local.starts = job.starts;
        local.starts.clear();
        let mut lines = 0u64;
        let res = utf8_block(file, &job.buf, &mut lines, &mut |n, s| {
            scan.scan(file, s, n, &mut local)
        });
        let n = &local.names;
        let tables = [&n.threads, &n.locks, &n.vars, &n.locs];
        let new = std::array::from_fn(|i| NewNames::since(tables[i], before[i]));
        // The next block's names get local ids afresh, and so does the remap.
        let fresh = local.lens().iter().sum::<usize>() > local_names;
        if fresh {
            local.names.clear();
            local.namer.clear();
        }
        let d = Done {
            buf: job.buf,
            events: std::mem::take(&mut local.events),
            starts: std::mem::take(&mut local.starts),
            lines,
            new,
            error: res.err(),
            fresh,
        };
        if done.send(d).is_err() {
            return;
        }
    }
}

/// A block for a worker, with vectors to fill (recycled).
#[derive(Default)]
struct Job {
    buf: Vec<u8>,
    events: Vec<Event>,
    starts: Vec<u32>,
}

/// A worker's block, parsed.
struct Done {
    /// The block's text.
    buf: Vec<u8>,
    /// Its events, in local ids.
    events: Vec<Event>,
    /// Where each event's line starts in `buf`.
    starts: Vec<u32>,
    /// Lines in the block.
    lines: u64,
    /// Names the worker first saw in this block, per table (threads, locks,
    /// variables, locations), in local id order.
    new: [NewNames; 4],
    /// The first error in the block, its line counted from the block's start.
    error: Option<LoadError>,
    /// The worker starts its tables afresh after this block.
    fresh: bool,
}

/// Names back to back.
#[derive(Default)]
struct NewNames {
    text: String,
    ends: Vec<u32>,
}

impl NewNames {
    /// The names of `table` from id `from` on.
    fn since(table: &Interner, from: usize) -> NewNames {
        let mut n = NewNames::default();
        for name in (from..table.len()).filter_map(|i| table.get_index(i)) {
            n.text.push_str(name);
            n.ends.push(n.text.len() as u32);
        }
        n
    }
}

/// A worker's local id → global id, per table (threads, locks, variables,
/// locations).
struct Remap {
    ids: [Vec<u32>; 4],
}

impl Default for Remap {
    fn default() -> Self {
        // Location 0 is the empty location in every table.
        Remap {
            ids: [Vec::new(), Vec::new(), Vec::new(), vec![0]],
        }
    }
}

/// A worker's tables and the events of its current block.
#[derive(Default)]
struct Local {
    /// The file errors name.
    file: String,
    names: Names,
    namer: Namer,
    events: Vec<Event>,
    starts: Vec<u32>,
}

impl Local {
    fn lens(&self) -> [usize; 4] {
        let n = &self.names;
        [n.threads.len(), n.locks.len(), n.vars.len(), n.locs.len()]
    }

    #[inline(always)]
    fn add(&mut self, start: usize, (thread, target, loc): (u32, u32, u32), op: super::Op) {
        self.events.push(Event {
            thread,
            target,
            loc,
            op,
            mask: 0,
        });
        self.starts.push(start as u32);
    }
}

impl Push for Local {
    fn push_at(&mut self, start: usize, e: TextEvent<'_>) -> Result<(), String> {
        let op = check_fields(e.thread, e.op, e.target)?;
        let (thread, target, loc) = (named(e.thread), named(e.target), named(e.loc));
        let ids = self.namer.ids(&mut self.names, thread, op, target, loc)?;
        self.add(start, ids, op);
        Ok(())
    }

    #[inline(always)]
    fn push_line(&mut self, block: &[u8], line: u64, f: &PlainLine) -> Result<LineIds, LoadError> {
        let name = |(s, e): (usize, usize)| Named::new(&block[s..e], Key::in_buf(block, s, e - s));
        let (thread, target, loc) = (name(f.thread), name(f.target), name(f.loc));
        let ids = self
            .namer
            .ids(&mut self.names, thread, f.op, target, loc)
            .map_err(|p| LoadError::new(&self.file, line, &block[f.start..f.end], p))?;
        self.add(f.start, ids, f.op);
        Ok(LineIds {
            thread: ids.0,
            op: f.op,
            target: ids.1,
            loc: ids.2,
        })
    }

    #[inline(always)]
    fn push_known(
        &mut self,
        _block: &[u8],
        _line: u64,
        (start, _): (usize, usize),
        ids: LineIds,
    ) -> Result<(), LoadError> {
        self.add(start, (ids.thread, ids.target, ids.loc), ids.op);
        Ok(())
    }

    #[inline(always)]
    fn lines(&mut self) -> &mut LineCache {
        &mut self.namer.lines
    }
}

/// What is queued for the merge, in input order.
enum Slot {
    /// A block given to this worker.
    Worker(usize),
    /// Reading stopped here.
    Stop(Piece),
}

/// What the reader yields.
enum Piece {
    /// Whole lines (the last block may lack its final `\n`).
    Lines(Vec<u8>),
    /// A line longer than [`MAX_LINE`] starts here: its first bytes.
    TooLong(Vec<u8>),
    /// Reading failed.
    Failed(std::io::Error),
}

impl Piece {
    /// The error a reading stop is, after `lines` lines.
    fn error(self, file: &str, lines: u64) -> LoadError {
        match self {
            Piece::TooLong(text) => too_long(file, lines + 1, &text),
            Piece::Failed(e) => LoadError::new(file, lines + 1, b"", format!("read error: {e}")),
            Piece::Lines(_) => LoadError::new(file, lines + 1, b"", "internal: lines"),
        }
    }
}

/// The input in blocks of whole lines, a leading byte-order mark dropped.
struct Blocks<R> {
    r: R,
    size: usize,
    /// The partial line after the last block.
    carry: Vec<u8>,
    eof: bool,
    first: bool,
    /// A read error to report once the lines before it are handed out.
    failed: Option<std::io::Error>,
    /// Nothing more to hand out.
    over: bool,
}

impl<R: Read> Blocks<R> {
    fn new(r: R, size: usize) -> Self {
        Blocks {
            r,
            size: size.max(1),
            carry: Vec::new(),
            eof: false,
            first: true,
            failed: None,
            over: false,
        }
    }

    /// Whether the input is all handed out.
    fn done(&self) -> bool {
        self.over || (self.eof && self.carry.is_empty() && self.failed.is_none())
    }

    /// The next piece, in `buf` (reused); None at the end.
    fn next(&mut self, mut buf: Vec<u8>) -> Option<Piece> {
        if self.over {
            return None;
        }
        if let Some(e) = self.failed.take() {
            self.over = true;
            return Some(Piece::Failed(e));
        }
        buf.clear();
        buf.append(&mut self.carry);
        // The first block is long enough to tell a byte-order mark.
        let mut want = if self.first {
            self.size.max(3)
        } else {
            self.size
        };
        loop {
            if !self.eof && buf.len() < want {
                let ask = (want - buf.len()) as u64;
                // Room for the block at once: grown by `read_to_end` from
                // nothing, the first block was copied and faulted in again
                // at every doubling.
                buf.reserve(ask as usize);
                match (&mut self.r).take(ask).read_to_end(&mut buf) {
                    Ok(n) => self.eof = (n as u64) < ask,
                    Err(e) => {
                        self.failed = Some(e);
                        self.eof = true;
                    }
                }
            }
            if self.first {
                self.first = false;
                if buf.starts_with(b"\xEF\xBB\xBF") {
                    buf.drain(..3);
                }
            }
            if self.eof {
                if self.failed.is_some() {
                    // The complete lines read before the error come first;
                    // the partial line after them is not read.
                    return match memchr::memrchr(b'\n', &buf) {
                        Some(i) => {
                            buf.truncate(i + 1);
                            Some(Piece::Lines(buf))
                        }
                        None => {
                            self.over = true;
                            self.failed.take().map(Piece::Failed)
                        }
                    };
                }
                self.over = true;
                return (!buf.is_empty()).then_some(Piece::Lines(buf));
            }
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => {
                    self.carry.extend_from_slice(&buf[i + 1..]);
                    buf.truncate(i + 1);
                    return Some(Piece::Lines(buf));
                }
                None if buf.len() > MAX_LINE => {
                    self.over = true;
                    buf.truncate(200);
                    return Some(Piece::TooLong(buf));
                }
                None => want = buf.len() + self.size,
            }
        }
    }
}
