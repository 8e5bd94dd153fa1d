//! Lowered events to a trace file: names for threads, locks, variables and
//! locations ([`Namer`]), written as STD lines ([`StdWriter`]) or RapidBin
//! ([`RapidBinWriter`]), the formats RAPID reads.
//!
//! STD and RapidBin name a variable, not bytes of it: a memory cell's
//! variable is named by the address of the first byte an access touches
//! (its global, else the address in hex, then `~N` when the memory was
//! freed or allocated N times before), so accesses to distinct fields of
//! one 8-byte word stay distinct variables, and accesses that overlap
//! without starting at the same address are distinct too (cprace's own
//! format keeps the bytes).

use std::io::Write;

use anyhow::Result;
use rustc_hash::FxHashMap;

use super::lower::{LOp, Lowered, Lowerer, Var};
use super::symbols::Symbolizer;
use crate::trace::intern::Arena;

/// What a recording held, for the summary line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Trace events written.
    pub events: u64,
    /// Threads named (that made events, or were forked or joined).
    pub threads: u64,
    /// Data reads and writes.
    pub accesses: u64,
    /// Atomic reads and writes (atomics, semaphores, barriers, mutex
    /// objects, ...).
    pub volatiles: u64,
    /// Acquires and releases.
    pub locks: u64,
    /// Forks and joins.
    pub forks_joins: u64,
    /// Heap blocks allocated.
    pub allocations: u64,
    /// Repeated accesses left out (see [`crate::trace::reduce`]).
    pub repeats: u64,
}

/// An event with its names as ids into [`Namer`]'s tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    /// Thread id (index into `threads`).
    pub thread: u32,
    /// Operation: RapidBin's code (0 acq, 1 rel, 2 r, 3 w, 4 fork, 5 join),
    /// or 6 volatile read, 7 volatile write, 8 relaxed atomic read, 9
    /// relaxed atomic write (which RapidBin cannot hold).
    pub op: u8,
    /// Lock, variable or thread id, by operation.
    pub target: u32,
    /// Location id (index into `locations`; 0 is the empty location).
    pub loc: u32,
}

/// Operation codes of [`Named::op`] besides RapidBin's.
pub const OP_VREAD: u8 = 6;
/// See [`OP_VREAD`].
pub const OP_VWRITE: u8 = 7;
/// See [`OP_VREAD`].
pub const OP_AREAD: u8 = 8;
/// See [`OP_VREAD`].
pub const OP_AWRITE: u8 = 9;
/// A lock request that never returned (`req`): the program was stopped
/// while the thread waited for the lock.
pub const OP_REQUEST: u8 = 10;

/// Appends `0x` and `v` in lowercase hex without leading zeros (as `{v:#x}`).
fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - (v | 1).leading_zeros()).div_ceil(4);
    out.push_str("0x");
    for i in (0..digits).rev() {
        out.push(char::from(DIGITS[(v >> (i * 4)) as usize & 15]));
    }
}

/// Names the run's threads, locks, variables and locations once each, and
/// turns lowered events into ids into its tables: the work every text
/// output format shares.
pub struct Namer {
    sym: Symbolizer,
    /// (variable, first byte) -> name id.
    shapes: FxHashMap<(u32, u8), u32>,
    /// Locks named per address.
    lock_gens: FxHashMap<u64, u32>,
    /// Thread ids of the lowerer -> name.
    pub threads: Vec<String>,
    /// Lock names, by lowerer lock id.
    pub locks: Vec<String>,
    /// Variable names, by id, back to back.
    pub variables: Arena,
    loc_ids: FxHashMap<u64, u32>,
    /// Direct-mapped cache in front of `loc_ids`: (pc, id).
    loc_cache: Vec<(u64, u32)>,
    /// Location texts, by id; 0 is the empty location.
    pub locations: Vec<String>,
    /// Totals so far.
    pub counts: Counts,
}

impl Namer {
    /// A namer naming addresses with `sym`.
    pub fn new(sym: Symbolizer) -> Namer {
        let mut loc_ids = FxHashMap::default();
        loc_ids.insert(0, 0);
        Namer {
            sym,
            shapes: FxHashMap::default(),
            lock_gens: FxHashMap::default(),
            threads: Vec::new(),
            locks: Vec::new(),
            variables: Arena::default(),
            loc_ids,
            loc_cache: vec![(u64::MAX, 0); LOC_CACHE],
            locations: vec![String::new()],
            counts: Counts::default(),
        }
    }

    /// Name of a lock or synchronization object: its global, else its address.
    fn object_name(&self, addr: u64) -> String {
        self.sym
            .global(addr)
            .unwrap_or_else(|| format!("{addr:#x}"))
    }

    fn thread(&mut self, low: &Lowerer, id: u32) -> u32 {
        while self.threads.len() <= id as usize {
            let tid = low.thread_tids[self.threads.len()];
            self.threads.push(format!("T{tid}"));
        }
        self.counts.threads = self.threads.len() as u64;
        id
    }

    fn lock(&mut self, low: &Lowerer, id: u32) -> u32 {
        while self.locks.len() <= id as usize {
            let addr = low.locks[self.locks.len()];
            let mut name = self.object_name(addr);
            // A robust mutex taken from a dead owner goes on as a new lock.
            let g = self.lock_gens.entry(addr).or_insert(0);
            let again = *g;
            *g += 1;
            if again != 0 {
                name.push_str(&format!("~{again}"));
            }
            self.locks.push(name);
        }
        id
    }

    /// The id of the variable name of `var` touched at the bytes of `mask`.
    fn variable(&mut self, low: &Lowerer, var: u32, mask: u8) -> u32 {
        let first = mask.trailing_zeros().min(7) as u8;
        if let Some(&id) = self.shapes.get(&(var, first)) {
            return id;
        }
        let sym = &self.sym;
        let rw_name = |lock: u64| sym.global(lock).unwrap_or_else(|| format!("{lock:#x}"));
        let id = match low.vars.get(var).expect("the lowering made it") {
            Var::Cell { addr, generation } => {
                let a = addr + u64::from(first);
                self.variables.push_with(|text| {
                    if !sym.global_into(a, text) {
                        push_hex(text, a);
                    }
                    if generation != 0 {
                        let _ = std::fmt::Write::write_fmt(text, format_args!("~{generation}"));
                    }
                })
            }
            Var::Key(k) => self.variables.push_with(|text| {
                text.push_str("key:");
                push_hex(text, k);
            }),
            Var::RwWriter(l) => {
                let n = rw_name(l);
                self.variables.push_with(|text| {
                    text.push_str(&n);
                    text.push_str(".w");
                })
            }
            Var::RwReader(l, t) => {
                let n = rw_name(l);
                self.variables.push_with(|text| {
                    let _ = std::fmt::Write::write_fmt(text, format_args!("{n}.r.T{t}"));
                })
            }
        };
        self.shapes.insert((var, first), id);
        id
    }

    #[inline(always)]
    fn location(&mut self, pc: u64) -> u32 {
        let slot = pc as usize & (LOC_CACHE - 1);
        if self.loc_cache[slot].0 == pc {
            return self.loc_cache[slot].1;
        }
        let id = self.location_slow(pc);
        self.loc_cache[slot] = (pc, id);
        id
    }

    fn location_slow(&mut self, pc: u64) -> u32 {
        if let Some(&id) = self.loc_ids.get(&pc) {
            return id;
        }
        let mut text = Vec::new();
        self.sym.location(pc, &mut text);
        let id = self.locations.len() as u32;
        self.locations
            .push(String::from_utf8_lossy(&text).into_owned());
        self.loc_ids.insert(pc, id);
        id
    }

    /// The named trace event `e` is, or None (a request, which STD and
    /// RapidBin cannot hold).
    #[inline(always)]
    pub fn event(&mut self, low: &Lowerer, e: &Lowered) -> Option<Named> {
        let (op, target) = match e.op {
            LOp::Read => (2, self.variable(low, e.target, e.mask)),
            LOp::Write => (3, self.variable(low, e.target, e.mask)),
            LOp::VolatileRead => (OP_VREAD, self.variable(low, e.target, e.mask)),
            LOp::AtomicRead => (OP_AREAD, self.variable(low, e.target, e.mask)),
            LOp::VolatileWrite => (OP_VWRITE, self.variable(low, e.target, e.mask)),
            LOp::AtomicWrite => (OP_AWRITE, self.variable(low, e.target, e.mask)),
            LOp::Acquire => (0, self.lock(low, e.target)),
            LOp::Release => (1, self.lock(low, e.target)),
            LOp::Fork => (4, self.thread(low, e.target)),
            LOp::Join => (5, self.thread(low, e.target)),
            LOp::Request => (OP_REQUEST, self.lock(low, e.target)),
        };
        match op {
            2 | 3 => self.counts.accesses += 1,
            0 | 1 => self.counts.locks += 1,
            4 | 5 => self.counts.forks_joins += 1,
            OP_REQUEST => {}
            _ => self.counts.volatiles += 1,
        }
        self.counts.events += 1;
        let thread = self.thread(low, e.thread);
        let loc = self.location(e.pc);
        Some(Named {
            thread,
            op,
            target,
            loc,
        })
    }
}

/// Entries of [`Namer`]'s location cache (a power of two).
const LOC_CACHE: usize = 1 << 12;

/// Bytes a writer gathers before handing them to its output.
const CHUNK: usize = 1 << 20;

/// Writes named events as STD lines.
pub struct StdWriter {
    buf: Vec<u8>,
}

impl Default for StdWriter {
    fn default() -> Self {
        StdWriter {
            buf: Vec::with_capacity(CHUNK + 4096),
        }
    }
}

impl StdWriter {
    /// Appends the line of `e`, flushing to `out` when the buffer is full.
    #[inline]
    pub fn event<W: Write + ?Sized>(
        &mut self,
        n: &Namer,
        e: Named,
        out: &mut W,
    ) -> std::io::Result<()> {
        let target = match e.op {
            0 | 1 | OP_REQUEST => n.locks[e.target as usize].as_bytes(),
            4 | 5 => n.threads[e.target as usize].as_bytes(),
            _ => n
                .variables
                .get(e.target as usize)
                .unwrap_or_default()
                .as_bytes(),
        };
        self.line(n, e, target, out)
    }

    #[inline(always)]
    fn line<W: Write + ?Sized>(
        &mut self,
        n: &Namer,
        e: Named,
        target: &[u8],
        out: &mut W,
    ) -> std::io::Result<()> {
        const OPS: [&[u8]; 11] = [
            b"|acq(", b"|rel(", b"|r(", b"|w(", b"|fork(", b"|join(", b"|vr(", b"|vw(", b"|ar(",
            b"|aw(", b"|req(",
        ];
        let b = &mut self.buf;
        b.extend_from_slice(n.threads[e.thread as usize].as_bytes());
        b.extend_from_slice(OPS[e.op as usize]);
        b.extend_from_slice(target);
        b.extend_from_slice(b")|");
        b.extend_from_slice(n.locations[e.loc as usize].as_bytes());
        b.push(b'\n');
        if b.len() >= CHUNK {
            out.write_all(b)?;
            b.clear();
        }
        Ok(())
    }

    /// Writes what is buffered.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.buf.clear();
        out.flush()
    }
}

/// Writes named events as RapidBin (see `crate::trace::rapid_bin`).
pub struct RapidBinWriter {
    buf: Vec<u8>,
}

impl Default for RapidBinWriter {
    fn default() -> Self {
        RapidBinWriter {
            buf: Vec::with_capacity(CHUNK),
        }
    }
}

impl RapidBinWriter {
    /// Appends `e`, or says why RapidBin cannot hold it.
    #[inline(always)]
    pub fn event(
        &mut self,
        n: &Namer,
        e: Named,
        out: &mut impl Write,
    ) -> Result<std::io::Result<()>, String> {
        use crate::trace::rapid_bin::{MAX_LOCATIONS, MAX_THREADS};
        if e.op == OP_REQUEST {
            return Err(format!(
                "the run ended with a thread blocked waiting for lock `{}` (a `req` event), which RapidBin has no operation for",
                n.locks.get(e.target as usize).map_or("", String::as_str)
            ));
        }
        if e.op >= OP_VREAD {
            return Err(format!(
                "the run made volatile accesses (atomics, semaphores, barriers, rwlock reads, ...; the first is `{}`), which RapidBin has no operation for",
                n.variables.get(e.target as usize).unwrap_or_default()
            ));
        }
        if e.thread as usize >= MAX_THREADS || (e.op >= 4 && e.target as usize >= MAX_THREADS) {
            return Err(format!("the run has more than {MAX_THREADS} threads"));
        }
        if e.loc as usize >= MAX_LOCATIONS {
            return Err(format!(
                "the run has more than {} locations",
                MAX_LOCATIONS - 1
            ));
        }
        let w = crate::trace::rapid_bin::word(e.thread, u64::from(e.op), e.target, e.loc);
        self.buf.extend_from_slice(&w.to_be_bytes());
        if self.buf.len() >= CHUNK {
            let r = out.write_all(&self.buf);
            self.buf.clear();
            return Ok(r);
        }
        Ok(Ok(()))
    }

    /// Writes what is buffered.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.buf.clear();
        out.flush()
    }

    /// The header of a trace of `events` events named by `n`.
    pub fn header(n: &Namer, events: u64) -> [u8; crate::trace::rapid_bin::HEADER_LEN] {
        crate::trace::rapid_bin::header(n.threads.len(), n.locks.len(), n.variables.len(), events)
    }

    /// Writes the side file of names (`TRACE.names.json`) for `n`'s tables
    /// to `out`, from the tables as they stand (no copy of millions of names).
    pub fn write_side(n: &Namer, out: &mut impl Write) -> std::io::Result<()> {
        crate::trace::rapid_bin::write_side(&n.threads, &n.locks, &n.variables, &n.locations, out)?;
        out.flush()
    }
}

/// A `Write` whose bytes a thread of its own writes to a file: the kernel's
/// copy of a trace of hundreds of MB into the page cache then runs beside
/// the naming instead of after each chunk of it.
pub struct ThreadWriter {
    buf: Vec<u8>,
    full: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    empty: std::sync::mpsc::Receiver<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl ThreadWriter {
    /// Writes to `file` from a new thread.
    pub fn new(file: std::fs::File) -> std::io::Result<ThreadWriter> {
        ThreadWriter::teed(file, None)
    }

    /// Writes to `file` from a new thread, and the same bytes to `tee`
    /// after them (dropped when the thread ends, so that its reader sees
    /// the end then, whether the writing succeeded or not).
    pub fn teed(
        mut file: std::fs::File,
        mut tee: Option<Box<dyn Write + Send>>,
    ) -> std::io::Result<ThreadWriter> {
        let (full, full_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let (empty_tx, empty) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("cprace-write".into())
            .spawn(move || {
                for mut chunk in full_rx {
                    file.write_all(&chunk)?;
                    if let Some(t) = &mut tee {
                        t.write_all(&chunk)?;
                    }
                    chunk.clear();
                    let _ = empty_tx.send(chunk);
                }
                if let Some(t) = &mut tee {
                    t.flush()?;
                }
                file.flush()
            })?;
        Ok(ThreadWriter {
            buf: Vec::with_capacity(CHUNK),
            full: Some(full),
            empty,
            thread: Some(thread),
        })
    }

    fn send(&mut self) -> std::io::Result<()> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        let sent = self.full.as_ref().is_some_and(|f| f.send(chunk).is_ok());
        if sent {
            Ok(())
        } else {
            // The thread stopped on an error: finish says which.
            self.finish()
        }
    }

    /// Writes what is left and waits for the thread: its first error, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() && self.full.is_some() {
            let chunk = std::mem::take(&mut self.buf);
            let _ = self.full.as_ref().map(|f| f.send(chunk));
        }
        self.full = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("the writing thread panicked")),
            None => Err(std::io::Error::other(
                "the trace's writing thread had stopped",
            )),
        }
    }
}

impl Write for ThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ThreadWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.buf.clear();
            let _ = self.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::{Event, What};
    use crate::record::lower::{Var, cells};
    use cprace_events::{Kind, Long};

    fn access(tid: u32, write: bool, addr: u64, size: u8) -> Event {
        Event {
            tid,
            what: What::Access { write, size },
            addr,
            pc: 0,
            stack: 0,
        }
    }

    fn long(tid: u32, kind: Kind, flags: u16, addr: u64, arg: u32, extra: u64) -> Event {
        Event {
            tid,
            what: What::Long(Long {
                kind,
                flags,
                pending: false,
                addr,
                pc: 0,
                arg,
                extra: [extra, 0, 0],
            }),
            addr,
            pc: 0,
            stack: 0,
        }
    }

    fn lines(events: &[Event]) -> Vec<String> {
        lines_with(Lowerer::default(), events)
    }

    fn lines_with(mut low: Lowerer, events: &[Event]) -> Vec<String> {
        let mut n = Namer::new(Symbolizer::from_listing(""));
        let mut w = StdWriter::default();
        let mut out = Vec::new();
        for e in events {
            let mut lowered = Vec::new();
            low.event(e, &mut |l| lowered.push(l));
            for l in lowered.iter().flat_map(|l| l.singles()) {
                if let Some(e) = n.event(&low, &l) {
                    w.event(&n, e, &mut out).unwrap();
                }
            }
        }
        w.finish(&mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    /// A range becomes spans of consecutive variables (one lowered event
    /// each) whose singles are the range's cells in order, first and last
    /// partial; cells met before, alone, are not consecutive and split it.
    #[test]
    fn ranges_lower_to_spans_of_their_cells() {
        let range =
            |addr: u64, size: u64| long(0, Kind::Range, cprace_events::RANGE_WRITE, addr, 0, size);
        let mut low = Lowerer::default();
        let mut out = Vec::new();
        // Cells 0x1010 and 0x1030 first, alone: the range's cells around
        // them are new, so its variables run 2..5, 0, 6, 1, 7...
        for e in [access(0, true, 0x1010, 8), access(0, true, 0x1030, 8)] {
            low.event(&e, &mut |l| out.push(l));
        }
        out.clear();
        low.event(&range(0x1004, 0x1000), &mut |l| out.push(l));
        let singles: Vec<(u32, u8)> = out
            .iter()
            .flat_map(|l| l.singles())
            .map(|l| (l.target, l.mask))
            .collect();
        let cells: Vec<(u64, u8)> = cells(0x1004, 0x1000).collect();
        assert_eq!(singles.len(), cells.len());
        assert_eq!(singles[0], (2, 0xf0));
        assert_eq!(singles[cells.len() - 1].1, 0x0f);
        for (&(v, m), &(cell, mask)) in singles.iter().zip(&cells) {
            assert_eq!(m, mask);
            assert_eq!(
                low.vars.get(v).unwrap(),
                Var::Cell {
                    addr: cell,
                    generation: 0
                }
            );
        }
        let runs: Vec<(u32, u32)> = out.iter().map(|l| (l.target, l.run)).collect();
        assert_eq!(runs, [(2, 2), (0, 1), (4, 3), (1, 1), (7, 506)]);
        // The same range again: its variables, in the same spans.
        let mut again = Vec::new();
        low.event(&range(0x1004, 0x1000), &mut |l| again.push(l));
        assert_eq!(again, out);
        // Part of it: the part of its spans.
        let mut part = Vec::new();
        low.event(&range(0x1008, 0x20), &mut |l| part.push(l));
        let p: Vec<(u32, u32)> = part.iter().map(|l| (l.target, l.run)).collect();
        assert_eq!(p, [(3, 1), (0, 1), (4, 2)]);
    }

    #[test]
    fn thread_writer_writes_everything_and_reports_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut w = ThreadWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
        let data: Vec<u8> = (0..3 * CHUNK + 5).map(|i| (i % 251) as u8).collect();
        for part in data.chunks(4096) {
            w.write_all(part).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
        // A device that is always full: the error comes back, not lost.
        if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
            let mut w = ThreadWriter::new(full).unwrap();
            let r = (0..8).try_for_each(|_| w.write_all(&data));
            assert!(r.is_err() || w.finish().is_err());
        }
    }

    #[test]
    fn a_free_writes_its_block_and_a_new_allocation_holds_new_variables() {
        let got = lines(&[
            access(1, true, 0x1000, 8),
            access(1, true, 0x1008, 4),
            access(1, true, 0x2000, 8),
            long(1, Kind::Free, 0, 0x1000, 0, 16),
            long(2, Kind::Alloc, 0, 0x1000, 0, 16),
            access(2, true, 0x1000, 8),
            access(2, false, 0x100c, 4),
            access(2, false, 0x2000, 8),
            long(2, Kind::Free, 0, 0x1000, 0, 16),
            // A use after the free is the freed block's variable.
            access(3, false, 0x1000, 8),
            long(3, Kind::Alloc, 0, 0x1000, 0, 16),
            access(3, false, 0x1000, 8),
        ]);
        assert_eq!(
            got,
            [
                "T1|w(0x1000)|",
                "T1|w(0x1008)|",
                "T1|w(0x2000)|",
                "T1|w(0x1000)|",
                "T1|w(0x1008)|",
                "T2|w(0x1000~1)|",
                "T2|r(0x100c~1)|",
                "T2|r(0x2000)|",
                "T2|w(0x1000~1)|",
                "T2|w(0x1008~1)|",
                "T3|r(0x1000~1)|",
                "T3|r(0x1000~2)|",
            ]
        );
    }

    #[test]
    fn a_freed_block_is_retired_once_enough_frees_came_after_it() {
        // Two blocks kept at most: the third free retires the first block
        // (a later use of its bytes is a new variable), the fourth retires
        // nothing of the second, which was allocated again meanwhile.
        let mut low = Lowerer::default();
        low.freed.max_blocks = 2;
        let got = lines_with(
            low,
            &[
                long(1, Kind::Alloc, 0, 0x1000, 0, 8),
                long(1, Kind::Alloc, 0, 0x2000, 0, 8),
                long(1, Kind::Alloc, 0, 0x3000, 0, 8),
                long(1, Kind::Free, 0, 0x1000, 0, 8),
                long(1, Kind::Free, 0, 0x2000, 0, 8),
                access(2, false, 0x1000, 8),
                long(1, Kind::Alloc, 0, 0x2000, 0, 8),
                long(1, Kind::Free, 0, 0x3000, 0, 8),
                access(2, false, 0x1000, 8),
                access(2, false, 0x2000, 8),
                access(2, false, 0x3000, 8),
                long(1, Kind::Alloc, 0, 0x4000, 0, 8),
                long(1, Kind::Free, 0, 0x4000, 0, 8),
                access(2, false, 0x2000, 8),
                access(2, false, 0x3000, 8),
            ],
        );
        assert_eq!(
            got,
            [
                "T1|w(0x1000~1)|",
                "T1|w(0x2000~2)|",
                // Still kept: the free's variable.
                "T2|r(0x1000~1)|",
                "T1|w(0x3000~3)|",
                // Retired by the third free (0x2000 was allocated again).
                "T2|r(0x1000~5)|",
                "T2|r(0x2000~4)|",
                "T2|r(0x3000~3)|",
                "T1|w(0x4000~6)|",
                // The block at 0x2000 was allocated again: kept as it is.
                "T2|r(0x2000~4)|",
                "T2|r(0x3000~3)|",
            ]
        );
    }

    #[test]
    fn accesses_are_split_by_cell_and_locks_read_their_object() {
        let got = lines(&[
            access(1, true, 0x1006, 4),
            long(1, Kind::Acquire, 0, 0x40, 0, 0),
            long(1, Kind::Release, 0, 0x40, 0, 0),
            long(1, Kind::Release, 0, 0x40, 0, 0),
        ]);
        assert_eq!(
            got,
            [
                "T1|w(0x1006)|",
                "T1|w(0x1008)|",
                "T1|ar(0x40)|",
                "T1|acq(0x40)|",
                "T1|ar(0x40)|",
                "T1|rel(0x40)|",
                // A release of a lock not held is dropped (its object
                // access stays).
                "T1|ar(0x40)|",
            ]
        );
    }

    #[test]
    fn sync_objects_name_their_volatile_variables() {
        let got = lines(&[
            long(1, Kind::SyncWrite, 0, 0x40, cprace_events::SYNC_KEY, 0),
            long(2, Kind::SyncRead, 0, 0x40, cprace_events::SYNC_KEY, 0),
            long(
                1,
                Kind::Acquire,
                cprace_events::LOCK_RW | cprace_events::LOCK_SHARED,
                0x80,
                0,
                0,
            ),
            long(
                1,
                Kind::Release,
                cprace_events::LOCK_RW | cprace_events::LOCK_SHARED,
                0x80,
                0,
                0,
            ),
            long(2, Kind::Acquire, cprace_events::LOCK_RW, 0x80, 0, 0),
        ]);
        assert_eq!(
            got,
            [
                "T1|vw(key:0x40)|",
                "T2|vr(key:0x40)|",
                "T1|ar(0x80)|",
                "T1|vr(0x80.w)|",
                "T1|ar(0x80)|",
                "T1|vw(0x80.r.T1)|",
                "T2|ar(0x80)|",
                "T2|acq(0x80)|",
                "T2|vr(0x80.r.T1)|",
            ]
        );
    }
}
