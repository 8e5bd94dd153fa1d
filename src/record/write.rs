//! Recorded events to a trace: thread, lock and variable names and locations
//! ([`Namer`]), written as STD lines ([`StdWriter`]) or RapidBin
//! ([`RapidBinWriter`]).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use rustc_hash::FxHashMap;

use super::events::{self, Event};
use super::symbols::Symbolizer;

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
pub struct Named {
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
pub const OP_VREAD: u8 = 6;
/// See [`OP_VREAD`].
pub const OP_VWRITE: u8 = 7;

/// Where a variable comes from: memory (address, number of the last free
/// covering it) or a synchronization object's variable (address, `arg`).
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
enum VarKey {
    Memory(u64, u64),
    Sync(u64, u32),
}

/// An entry of [`Namer`]'s variable cache: memory variable `id` is `addr`
/// under free number `n`, which was the last free covering it when `frees`
/// blocks had been freed (so until the next free, `addr` is `id`).
#[derive(Clone, Copy)]
struct VarSlot {
    addr: u64,
    frees: u64,
    n: u64,
    id: u32,
}

/// Names the run's threads, locks, variables and locations once each, and
/// turns events into ids into its tables: the work every output format shares.
pub struct Namer {
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
    var_ids: FxHashMap<VarKey, u32>,
    /// Memory variables no free has covered (most of them), by address: a
    /// map of 16-byte entries, half those of `var_ids`, so runs with
    /// millions of variables probe and grow half the memory.
    fresh_ids: FxHashMap<u64, u32>,
    /// Direct-mapped cache in front of `var_ids` for memory variables:
    /// most accesses hit a recent address.
    var_cache: Vec<VarSlot>,
    loc_ids: FxHashMap<u64, u32>,
    /// Direct-mapped cache in front of `loc_ids`: (pc, id).
    loc_cache: Vec<(u64, u32)>,
    /// Thread names, by id.
    pub threads: Vec<String>,
    /// Lock names, by id.
    pub locks: Vec<String>,
    /// Variable names, by id (two ids may share a name: then they are one
    /// variable of the trace, as in STD).
    pub variables: Vec<String>,
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
            freed: BTreeMap::new(),
            thread_ids: Vec::new(),
            last_thread: None,
            lock_ids: FxHashMap::default(),
            var_ids: FxHashMap::default(),
            fresh_ids: FxHashMap::default(),
            // No free count reaches u64::MAX: every entry starts empty.
            var_cache: vec![
                VarSlot {
                    addr: 0,
                    frees: u64::MAX,
                    n: u64::MAX,
                    id: 0
                };
                VAR_CACHE
            ],
            loc_ids,
            loc_cache: vec![(u64::MAX, 0); LOC_CACHE],
            threads: Vec::new(),
            locks: Vec::new(),
            variables: Vec::new(),
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

    /// The id of the memory variable at `addr` (under the number of the
    /// last free covering it), accessed by recorder thread `tid`.
    #[inline(always)]
    fn memory(&mut self, addr: u64, tid: u32) -> u32 {
        // Neighbouring addresses in neighbouring slots, and a part of the
        // cache per thread (modulo VAR_CACHE_PARTS): threads' heaps put
        // their objects at the same offsets (glibc aligns them to 64 MiB).
        let slot = (tid as usize % VAR_CACHE_PARTS) * VAR_CACHE_PART
            + ((addr >> 2) as usize & (VAR_CACHE_PART - 1));
        let c = self.var_cache[slot];
        if c.addr == addr && c.frees == self.counts.frees {
            return c.id;
        }
        let n = self.generation(addr);
        let id = if c.addr == addr && c.n == n {
            c.id
        } else {
            self.variable(VarKey::Memory(addr, n))
        };
        self.var_cache[slot] = VarSlot {
            addr,
            frees: self.counts.frees,
            n,
            id,
        };
        id
    }

    fn variable(&mut self, key: VarKey) -> u32 {
        let known = match key {
            VarKey::Memory(addr, 0) => self.fresh_ids.get(&addr),
            _ => self.var_ids.get(&key),
        };
        if let Some(&id) = known {
            return id;
        }
        let name = match key {
            // Its global, else its address, then `~N` when free number N
            // last covered it.
            VarKey::Memory(addr, n) => {
                let mut name = Vec::with_capacity(24);
                if !self.sym.global_into(addr, &mut name) {
                    let _ = write!(name, "{addr:#x}");
                }
                if n != 0 {
                    let _ = write!(name, "~{n}");
                }
                String::from_utf8(name)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            }
            VarKey::Sync(addr, arg) => {
                let mut name = self.object_name(addr);
                match arg {
                    0 => {}
                    1 => name.push_str(".w"),
                    t => name.push_str(&format!(".r.T{}", t - 2)),
                }
                name
            }
        };
        let id = self.variables.len() as u32;
        self.variables.push(name);
        match key {
            VarKey::Memory(addr, 0) => self.fresh_ids.insert(addr, id),
            _ => self.var_ids.insert(key, id),
        };
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
    }

    /// The trace event `e` is, or None (FREE notes and unknown kinds).
    #[inline(always)]
    pub fn event(&mut self, e: &Event) -> Option<Named> {
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
            events::SYNC_VREAD => (OP_VREAD, self.variable(VarKey::Sync(e.addr, e.arg))),
            events::SYNC_VWRITE => (OP_VWRITE, self.variable(VarKey::Sync(e.addr, e.arg))),
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

/// Parts of [`Namer`]'s variable cache and entries of each (a power of two).
const VAR_CACHE_PARTS: usize = 4;
const VAR_CACHE_PART: usize = 1 << 13;
const VAR_CACHE: usize = VAR_CACHE_PARTS * VAR_CACHE_PART;

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
        const OPS: [&[u8]; 8] = [
            b"|acq(", b"|rel(", b"|r(", b"|w(", b"|fork(", b"|join(", b"|vr(", b"|vw(",
        ];
        let target = match e.op {
            0 | 1 => &n.locks[e.target as usize],
            4 | 5 => &n.threads[e.target as usize],
            _ => &n.variables[e.target as usize],
        };
        let b = &mut self.buf;
        b.extend_from_slice(n.threads[e.thread as usize].as_bytes());
        b.extend_from_slice(OPS[e.op as usize]);
        b.extend_from_slice(target.as_bytes());
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
        if e.op >= OP_VREAD {
            return Err(format!(
                "the run made volatile accesses (atomics, semaphores, barriers, rwlock reads, ...; the first is `{}`), which RapidBin has no operation for",
                n.variables[e.target as usize]
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
