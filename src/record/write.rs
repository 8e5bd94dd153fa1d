//! Recorded events to a trace: thread, lock and variable names and locations
//! ([`Namer`]), written as STD lines ([`StdWriter`]) or RapidBin
//! ([`RapidBinWriter`]).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use rustc_hash::FxHashMap;

use super::events::{self, Event};
use super::shadow::Shadow;
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
    /// Volatile reads and writes (atomics, semaphores, barriers, ...).
    pub volatiles: u64,
    /// Acquires and releases.
    pub locks: u64,
    /// Forks and joins.
    pub forks_joins: u64,
    /// Heap blocks freed (not trace events).
    pub frees: u64,
}

/// An event with its names as ids into [`Namer`]'s tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Named {
    /// Thread id (index into `threads`).
    pub thread: u32,
    /// Operation: RapidBin's code (0 acq, 1 rel, 2 r, 3 w, 4 fork, 5 join),
    /// or 6 volatile read, 7 volatile write (which RapidBin cannot hold).
    pub op: u8,
    /// Lock, variable or thread id, by operation.
    pub target: u32,
    /// Location id (index into `locations`; 0 is the empty location).
    pub loc: u32,
}

/// Operation codes of [`Named::op`] besides RapidBin's.
pub(crate) const OP_VREAD: u8 = 6;
/// See [`OP_VREAD`].
pub(crate) const OP_VWRITE: u8 = 7;

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
/// turns events into ids into its tables: the work every output format shares.
pub(crate) struct Namer {
    sym: Symbolizer,
    /// Freed heap ranges: start -> (end, number of the free), disjoint; a
    /// later free replaces the parts of earlier ones it covers. A variable
    /// is its address plus the number of the last free covering it, so a
    /// reused block never shares variables with the object freed before.
    freed: BTreeMap<u64, (u64, u64)>,
    thread_ids: Vec<u32>,
    /// The last (recorder thread, id) an event came from: most events come
    /// from the thread of the one before.
    last_thread: Option<(u32, u32)>,
    lock_ids: FxHashMap<u64, u32>,
    /// Memory variables by address (the ids of a freed range are cleared:
    /// the next access there names a new variable).
    shadow: Shadow,
    /// A synchronization object's variables, by (address, `arg`).
    sync_ids: FxHashMap<(u64, u32), u32>,
    loc_ids: FxHashMap<u64, u32>,
    /// Direct-mapped cache in front of `loc_ids`: (pc, id).
    loc_cache: Vec<(u64, u32)>,
    /// Thread names, by id.
    pub threads: Vec<String>,
    /// Lock names, by id.
    pub locks: Vec<String>,
    /// Variable names, by id, back to back (a run names millions; two ids
    /// may share a name: then they are one variable of the trace, as in STD).
    pub variables: Arena,
    /// Location texts, by id; 0 is the empty location.
    pub locations: Vec<String>,
    /// Totals so far.
    pub counts: Counts,
}

impl Namer {
    /// A namer naming addresses with `sym`.
    pub(crate) fn new(sym: Symbolizer) -> Namer {
        let mut loc_ids = FxHashMap::default();
        loc_ids.insert(0, 0);
        Namer {
            sym,
            freed: BTreeMap::new(),
            thread_ids: Vec::new(),
            last_thread: None,
            lock_ids: FxHashMap::default(),
            shadow: Shadow::default(),
            sync_ids: FxHashMap::default(),
            loc_ids,
            loc_cache: vec![(u64::MAX, 0); LOC_CACHE],
            threads: Vec::new(),
            locks: Vec::new(),
            variables: Arena::default(),
            locations: vec![String::new()],
            counts: Counts::default(),
        }
    }

    fn thread(&mut self, tid: u32) -> u32 {
        let i = tid as usize;
        if self.thread_ids.len() <= i {
            self.thread_ids.resize(i + 1, u32::MAX);
        }
        if self.thread_ids[i] == u32::MAX {
            self.thread_ids[i] = self.threads.len() as u32;
            self.threads.push(format!("T{tid}"));
            self.counts.threads = self.threads.len() as u64;
        }
        self.thread_ids[i]
    }

    /// The id of the thread that made an event.
    #[inline(always)]
    fn event_thread(&mut self, tid: u32) -> u32 {
        match self.last_thread {
            Some((t, id)) if t == tid => id,
            _ => {
                let id = self.thread(tid);
                self.last_thread = Some((tid, id));
                id
            }
        }
    }

    /// Name of a lock or synchronization object: its global, else its address.
    fn object_name(&self, addr: u64) -> String {
        self.sym
            .global(addr)
            .unwrap_or_else(|| format!("{addr:#x}"))
    }

    fn lock(&mut self, addr: u64) -> u32 {
        if let Some(&id) = self.lock_ids.get(&addr) {
            return id;
        }
        let id = self.locks.len() as u32;
        self.locks.push(self.object_name(addr));
        self.lock_ids.insert(addr, id);
        id
    }

    /// The number of the last free covering `addr` (0: none).
    #[inline]
    fn generation(&self, addr: u64) -> u64 {
        if self.freed.is_empty() {
            return 0;
        }
        match self.freed.range(..=addr).next_back() {
            Some((_, &(end, n))) if addr < end => n,
            _ => 0,
        }
    }

    /// The id of the memory variable at `addr`, accessed by recorder
    /// thread `tid`.
    #[inline(always)]
    fn memory(&mut self, addr: u64, tid: u32) -> u32 {
        match self.shadow.get(addr, tid) {
            Some(id) => id,
            None => self.new_memory(addr, tid),
        }
    }

    /// Names the memory variable at `addr`: its global, else its address,
    /// then `~N` when free number N last covered it.
    #[inline(never)]
    fn new_memory(&mut self, addr: u64, tid: u32) -> u32 {
        let n = self.generation(addr);
        let sym = &self.sym;
        let id = self.variables.push_with(|text| {
            if !sym.global_into(addr, text) {
                push_hex(text, addr);
            }
            if n != 0 {
                let _ = std::fmt::Write::write_fmt(text, format_args!("~{n}"));
            }
        });
        self.shadow.set(addr, tid, id);
        id
    }

    /// The id of a synchronization object's variable (`arg` 0: the object,
    /// 1: its writers' side, t + 2: thread t's reads).
    fn sync_variable(&mut self, addr: u64, arg: u32) -> u32 {
        if let Some(&id) = self.sync_ids.get(&(addr, arg)) {
            return id;
        }
        let name = self.object_name(addr);
        let id = self.variables.push_with(|text| {
            text.push_str(&name);
            match arg {
                0 => {}
                1 => text.push_str(".w"),
                t => {
                    let _ = std::fmt::Write::write_fmt(text, format_args!(".r.T{}", t - 2));
                }
            }
        });
        self.sync_ids.insert((addr, arg), id);
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

    fn free(&mut self, addr: u64, size: u64) {
        self.counts.frees += 1;
        let n = self.counts.frees;
        let end = addr.saturating_add(size);
        if end == addr {
            return;
        }
        if let Some((&s, &(e, k))) = self.freed.range(..addr).next_back()
            && e > addr
        {
            self.freed.insert(s, (addr, k));
            if e > end {
                self.freed.insert(end, (e, k));
            }
        }
        let inside: Vec<u64> = self.freed.range(addr..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((e, k)) = self.freed.remove(&s)
                && e > end
            {
                self.freed.insert(end, (e, k));
            }
        }
        self.freed.insert(addr, (end, n));
        self.shadow.clear(addr, end);
    }

    /// The trace event `e` is, or None (FREE notes and unknown kinds).
    #[inline(always)]
    pub(crate) fn event(&mut self, e: &Event) -> Option<Named> {
        let (op, target) = match e.kind {
            events::READ | events::WRITE | events::VREAD | events::VWRITE => {
                let op = match e.kind {
                    events::READ => 2,
                    events::WRITE => 3,
                    events::VREAD => OP_VREAD,
                    _ => OP_VWRITE,
                };
                (op, self.memory(e.addr, e.tid))
            }
            events::SYNC_VREAD => (OP_VREAD, self.sync_variable(e.addr, e.arg)),
            events::SYNC_VWRITE => (OP_VWRITE, self.sync_variable(e.addr, e.arg)),
            events::ACQUIRE => (0, self.lock(e.addr)),
            events::RELEASE => (1, self.lock(e.addr)),
            events::FORK => (4, self.thread(e.addr as u32)),
            events::JOIN => (5, self.thread(e.addr as u32)),
            events::FREE => {
                self.free(e.addr, e.pc);
                return None;
            }
            _ => return None,
        };
        match op {
            2 | 3 => self.counts.accesses += 1,
            0 | 1 => self.counts.locks += 1,
            4 | 5 => self.counts.forks_joins += 1,
            _ => self.counts.volatiles += 1,
        }
        self.counts.events += 1;
        let thread = self.event_thread(e.tid);
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
pub(crate) struct StdWriter {
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
    pub(crate) fn event<W: Write + ?Sized>(
        &mut self,
        n: &Namer,
        e: Named,
        out: &mut W,
    ) -> std::io::Result<()> {
        let target = match e.op {
            0 | 1 => n.locks[e.target as usize].as_bytes(),
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
        const OPS: [&[u8]; 8] = [
            b"|acq(", b"|rel(", b"|r(", b"|w(", b"|fork(", b"|join(", b"|vr(", b"|vw(",
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
    pub(crate) fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.buf.clear();
        out.flush()
    }
}

/// Writes named events as RapidBin (see `crate::trace::rapid_bin`).
pub(crate) struct RapidBinWriter {
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
    pub(crate) fn event(
        &mut self,
        n: &Namer,
        e: Named,
        out: &mut impl Write,
    ) -> Result<std::io::Result<()>, String> {
        use crate::trace::rapid_bin::{MAX_LOCATIONS, MAX_THREADS};
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
    pub(crate) fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.buf.clear();
        out.flush()
    }

    /// The header of a trace of `events` events named by `n`.
    pub(crate) fn header(n: &Namer, events: u64) -> [u8; crate::trace::rapid_bin::HEADER_LEN] {
        crate::trace::rapid_bin::header(n.threads.len(), n.locks.len(), n.variables.len(), events)
    }

    /// Writes the side file of names (`TRACE.names.json`) for `n`'s tables
    /// to `out`, from the tables as they stand (no copy of millions of names).
    pub(crate) fn write_side(n: &Namer, out: &mut impl Write) -> std::io::Result<()> {
        crate::trace::rapid_bin::write_side(&n.threads, &n.locks, &n.variables, &n.locations, out)?;
        out.flush()
    }
}

/// A `Write` whose bytes a thread of its own writes to a file: the kernel's
/// copy of a trace of hundreds of MB into the page cache then runs beside
/// the naming instead of after each chunk of it.
pub(crate) struct ThreadWriter {
    buf: Vec<u8>,
    full: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    empty: std::sync::mpsc::Receiver<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl ThreadWriter {
    /// Writes to `file` from a new thread.
    pub(crate) fn new(mut file: std::fs::File) -> std::io::Result<ThreadWriter> {
        let (full, full_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let (empty_tx, empty) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("cprace-write".into())
            .spawn(move || {
                for mut chunk in full_rx {
                    file.write_all(&chunk)?;
                    chunk.clear();
                    let _ = empty_tx.send(chunk);
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
    pub(crate) fn finish(&mut self) -> std::io::Result<()> {
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

    fn ev(tid: u32, kind: u8, addr: u64, pc: u64) -> Event {
        Event {
            tid,
            kind,
            arg: 0,
            addr,
            pc,
        }
    }

    fn lines(events: &[Event]) -> Vec<String> {
        let mut n = Namer::new(Symbolizer::from_listing(""));
        let mut w = StdWriter::default();
        let mut out = Vec::new();
        for e in events {
            if let Some(e) = n.event(e) {
                w.event(&n, e, &mut out).unwrap();
            }
        }
        w.finish(&mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
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
    fn a_freed_and_reused_block_holds_new_variables() {
        let got = lines(&[
            ev(1, events::WRITE, 0x1000, 0),
            ev(1, events::WRITE, 0x1008, 0),
            ev(1, events::WRITE, 0x2000, 0),
            ev(1, events::FREE, 0x1000, 16),
            ev(2, events::WRITE, 0x1000, 0),
            ev(2, events::READ, 0x1008, 0),
            ev(2, events::READ, 0x2000, 0),
            ev(2, events::FREE, 0x1000, 16),
            ev(3, events::READ, 0x1000, 0),
        ]);
        assert_eq!(
            got,
            [
                "T1|w(0x1000)|",
                "T1|w(0x1008)|",
                "T1|w(0x2000)|",
                "T2|w(0x1000~1)|",
                "T2|r(0x1008~1)|",
                "T2|r(0x2000)|",
                "T3|r(0x1000~2)|",
            ]
        );
    }

    #[test]
    fn sync_objects_name_their_volatile_variables() {
        let mut e = ev(1, events::SYNC_VWRITE, 0x40, 0);
        let mut r = ev(2, events::SYNC_VREAD, 0x40, 0);
        let mut got = lines(&[e, r]);
        e.arg = 1;
        r.arg = 3;
        got.extend(lines(&[e, r]));
        assert_eq!(
            got,
            [
                "T1|vw(0x40)|",
                "T2|vr(0x40)|",
                "T1|vw(0x40.w)|",
                "T2|vr(0x40.r.T1)|"
            ]
        );
    }
}
