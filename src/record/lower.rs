//! Recorded events to trace events: the model of C/C++ memory and
//! synchronization that every relation then analyses.
//!
//! - Memory is named by 8-byte cell: an access becomes an event on its cell
//!   with a mask of the bytes it touches (two when it straddles cells), so
//!   conflicts are decided byte by byte. A freed or newly allocated block's
//!   cells are new variables (a new generation), so a reused block never
//!   shares variables with the object freed before.
//! - Atomic operations are accesses that conflict with plain accesses but
//!   not with each other: acquire (and stronger) loads and release (and
//!   stronger) stores also synchronize (volatile reads and writes, `vr`,
//!   `vw`); relaxed ones do not (`ar`, `aw`). A read-modify-write is its
//!   read, then its write. A release fence makes the thread's later relaxed
//!   stores release; an acquire fence acquires, where it stands, every
//!   variable the thread loaded relaxed since its last acquire fence.
//! - Locks: an acquire or release also reads the lock's first byte
//!   atomically, so destroying or re-initializing a mutex in use is a race;
//!   `*_init`/`*_destroy` write the object. The shared side of an rwlock is
//!   modelled by volatile variables: a reader reads `L.w` when it gets the
//!   lock and writes `L.r.T<t>` when it releases it; a writer reads every
//!   `L.r.T<t>` after it gets the lock and writes `L.w` before releasing.
//! - A free is a write of the whole block. A thread that ends holding locks
//!   releases them (a robust mutex's next owner gets it with EOWNERDEAD).
//!
//! The lowering keeps the trace well formed whatever the event files hold:
//! a release of a lock the thread does not hold, a fork of a thread that
//! already ran, and events of a joined thread are dropped and counted; an
//! acquire of a lock another thread holds starts a new lock.

use std::collections::BTreeMap;

use cprace_events::{
    Atomic, AtomicOp, Kind, LOCK_OWNER_DEAD, LOCK_RW, LOCK_SHARED, MAX_RANGE, Object, ObjectOp,
    SYNC_MEMORY,
};
use rustc_hash::FxHashMap;

use super::events::{Event, What};
use super::shadow::Shadow;
use crate::trace::reduce::Reducer;

/// What a trace event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LOp {
    /// Plain read.
    Read,
    /// Plain write.
    Write,
    /// Relaxed atomic read (no synchronization).
    AtomicRead,
    /// Relaxed atomic write (no synchronization).
    AtomicWrite,
    /// Acquiring atomic read (a volatile read).
    VolatileRead,
    /// Releasing atomic write (a volatile write).
    VolatileWrite,
    /// Lock acquire.
    Acquire,
    /// Lock release.
    Release,
    /// Thread creation.
    Fork,
    /// Thread join.
    Join,
    /// A lock requested and never obtained (the thread's last event).
    Request,
}

impl LOp {
    /// True for the ops whose target is a variable.
    pub fn on_variable(self) -> bool {
        matches!(
            self,
            LOp::Read
                | LOp::Write
                | LOp::AtomicRead
                | LOp::AtomicWrite
                | LOp::VolatileRead
                | LOp::VolatileWrite
        )
    }
}

/// One trace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lowered {
    /// Thread (dense id).
    pub thread: u32,
    /// What it does.
    pub op: LOp,
    /// Variable, lock or thread id, by op.
    pub target: u32,
    /// Bytes of the variable's cell touched (bit i: byte i); 0xff for
    /// variables that are not memory cells.
    pub mask: u8,
    /// How many variables, from `target` on, the event stands for: a
    /// range access on consecutive variables is one lowered event, its
    /// first variable touched as `mask` says, its last as `last_mask`, the
    /// ones between whole. 1 for every other event.
    pub run: u32,
    /// Bytes of the last variable's cell touched (`mask` when `run` is 1).
    pub last_mask: u8,
    /// The instrumented code's pc (0: none).
    pub pc: u64,
    /// The call stack (a [`super::events::Stacks`] id).
    pub stack: u32,
}

impl Lowered {
    /// The events this one stands for, one per variable.
    pub fn singles(&self) -> impl Iterator<Item = Lowered> + '_ {
        (0..self.run).map(move |i| {
            let mask = if i == 0 {
                self.mask
            } else if i + 1 == self.run {
                self.last_mask
            } else {
                0xff
            };
            Lowered {
                target: self.target.wrapping_add(i),
                mask,
                run: 1,
                last_mask: mask,
                ..*self
            }
        })
    }
}

/// Consecutive variables `target..target + n` touched by one access (see
/// [`Lowered::run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    target: u32,
    mask: u8,
    n: u32,
    last_mask: u8,
}

impl Span {
    /// One variable, `mask` its bytes touched.
    fn one(target: u32, mask: u8) -> Span {
        Span {
            target,
            mask,
            n: 1,
            last_mask: mask,
        }
    }
}

/// What a variable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// The 8-byte memory cell at `addr` (8-aligned), in its `gen`th
    /// lifetime (0: never freed or allocated over).
    Cell {
        /// The cell's address.
        addr: u64,
        /// Number of the last free or allocation covering it.
        generation: u32,
    },
    /// A synchronization object that is not memory (a file descriptor, a
    /// fiber, an annotation's key).
    Key(u64),
    /// The writer side of rwlock `lock` (its address).
    RwWriter(u64),
    /// The reader side of rwlock `lock` held by recorder thread `tid`.
    RwReader(u64, u32),
}

/// Variables by dense id, in runs: a recording names millions of cells, in
/// the order of first access, mostly one after the other (a loop over an
/// array, a `memcpy`), so consecutive ids on consecutive cells of one
/// generation are one run of 24 bytes instead of 16 bytes an id.
#[derive(Debug, Default)]
pub struct Vars {
    /// (first id, count, first variable); only cells make runs longer
    /// than one.
    runs: Vec<(u32, u32, Var)>,
    len: u32,
}

impl Vars {
    /// Adds `v`, the next id (returned).
    fn push(&mut self, v: Var) -> u32 {
        let id = self.len;
        self.len += 1;
        if let (
            Some((_, n, Var::Cell { addr, generation })),
            Var::Cell {
                addr: a,
                generation: g,
            },
        ) = (self.runs.last_mut(), v)
            && *generation == g
            && addr.checked_add(8 * u64::from(*n)) == Some(a)
        {
            *n += 1;
        } else {
            self.runs.push((id, 1, v));
        }
        id
    }

    /// Variable `id`. The newest runs are looked at first: who asks is
    /// usually naming a variable just made.
    #[inline]
    pub fn get(&self, id: u32) -> Option<Var> {
        let r = match self.runs.last() {
            Some(&(first, _, _)) if first <= id => self.runs.len() - 1,
            _ => self.runs.partition_point(|r| r.0 <= id).checked_sub(1)?,
        };
        let (first, n, v) = self.runs[r];
        let k = id.checked_sub(first).filter(|&k| k < n)?;
        Some(match v {
            Var::Cell { addr, generation } => Var::Cell {
                addr: addr + 8 * u64::from(k),
                generation,
            },
            other => other,
        })
    }
}

/// What lowering dropped to keep the trace well formed (each is a sign of a
/// corrupt or cut recording).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Releases of locks the thread did not hold.
    pub releases: u64,
    /// Acquires of locks another thread held.
    pub acquires: u64,
    /// Forks of threads that had already run, and second joins.
    pub forks_joins: u64,
    /// Events of threads after they were joined.
    pub after_join: u64,
}

impl Dropped {
    /// Total dropped.
    pub fn total(&self) -> u64 {
        self.releases + self.acquires + self.forks_joins + self.after_join
    }
}

/// Trace events emitted, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoweredCounts {
    /// Plain reads and writes.
    pub accesses: u64,
    /// Atomic reads and writes.
    pub atomics: u64,
    /// Acquires and releases.
    pub locks: u64,
    /// Forks and joins.
    pub forks_joins: u64,
}

impl LoweredCounts {
    fn add(&mut self, o: &LoweredCounts) {
        self.accesses += o.accesses;
        self.atomics += o.atomics;
        self.locks += o.locks;
        self.forks_joins += o.forks_joins;
    }
}

/// A heap block's life, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Start address.
    pub addr: u64,
    /// Requested size.
    pub size: u64,
    /// Allocating thread (dense id).
    pub thread: u32,
    /// Where it was allocated.
    pub pc: u64,
    /// The allocating call stack.
    pub stack: u32,
    /// By operator new (else malloc and friends).
    pub new: bool,
    /// The number of trace events (requests aside) before it.
    pub at: u32,
}

#[derive(Default)]
struct ThreadState {
    /// Dense id.
    id: u32,
    /// Locks held (addresses), innermost last, with their depth.
    held: Vec<(u64, u32)>,
    forked: bool,
    started: bool,
    joined: bool,
    /// A release fence was seen: later relaxed stores release.
    released: bool,
    /// Variables loaded relaxed since the last acquire fence.
    relaxed_loads: Vec<(u32, u8)>,
}

/// Turns recorded events into trace events, naming threads, locks and
/// variables with dense ids.
#[derive(Default)]
pub struct Lowerer {
    threads: FxHashMap<u32, ThreadState>,
    /// Recorder id of each dense thread id.
    pub thread_tids: Vec<u32>,
    /// Lock addresses by dense id.
    pub locks: Vec<u64>,
    lock_ids: FxHashMap<u64, u32>,
    /// Current holder (recorder tid) and depth of each lock.
    holders: FxHashMap<u64, (u32, u32)>,
    /// Variables by dense id.
    pub vars: Vars,
    /// Cell index (address / 8) -> variable id.
    cells: Shadow,
    /// Freed or allocated ranges: start -> (end, generation), disjoint.
    gens: BTreeMap<u64, (u64, u32)>,
    generation: u32,
    other_vars: FxHashMap<Var, u32>,
    /// Readers ever seen per rwlock address (recorder tids).
    readers: FxHashMap<u64, Vec<u32>>,
    /// Heap blocks in order of allocation.
    pub blocks: Vec<Block>,
    /// Heap frees in order (the size is the usable size).
    pub frees: Vec<Block>,
    /// Trace events emitted so far (requests aside).
    pub emitted: u64,
    /// Events emitted, by kind.
    pub counts: LoweredCounts,
    /// Thread names set by the program: (dense id, name).
    pub names: Vec<(u32, String)>,
    /// Benign ranges: (start, end).
    pub benign: Vec<(u64, u64)>,
    /// Thread starts: dense id -> (stack lo, stack hi, tls lo, tls hi).
    pub stacks: FxHashMap<u32, [u64; 4]>,
    /// The kernel's id of each thread (dense id -> tid), when recorded.
    pub os_tids: FxHashMap<u32, u32>,
    /// Parent (dense id) and creation pc/stack of each forked thread.
    pub created: FxHashMap<u32, (u32, u64, u32)>,
    /// What was dropped.
    pub dropped: Dropped,
    /// Drops repeated accesses (`record --analyze hb|wcp` without a trace
    /// file: see [`crate::trace::reduce`]).
    pub reduce: Option<Reducer>,
    /// Cell variables no later event touches (their memory was allocated
    /// again, so its cells are new variables), in no order; whoever lowers
    /// takes them after each event (see [`crate::trace::cprace_bin::RETIRE`]).
    pub retired: Vec<u32>,
    /// Freed blocks whose cells are still kept.
    pub(crate) freed: Freed,
    /// Per variable in some thread's `relaxed_loads`, in how many (a
    /// retirement looks every retired variable up here: building the set
    /// of them at each retirement cost a thread pool's lowering a third of
    /// its time).
    relaxed: FxHashMap<u32, u32>,
}

/// Freed blocks whose cells stay the block's variables, oldest first, so
/// that a use after the free meets the free. A block glibc gives back
/// with `munmap` (128 KiB and up) is mapped at a new address next time, so
/// no allocation ever renews its cells: once later frees have passed twice
/// the recorder's quarantine (64 MiB and 65,536 blocks, `recorder/src/heap.rs`:
/// the block has certainly left it for glibc), its cells are retired and a
/// later access of those bytes is a new variable, as it would be after a
/// new allocation. A C++ test suite freeing vectors of millions of atomics
/// otherwise kept every one it ever had.
#[derive(Debug)]
pub(crate) struct Freed {
    /// (start, end, generation of the allocation) of each block kept.
    blocks: std::collections::VecDeque<(u64, u64, u32)>,
    bytes: u64,
    /// Most bytes and blocks kept (tests shrink them).
    pub(crate) max_bytes: u64,
    pub(crate) max_blocks: usize,
}

impl Default for Freed {
    fn default() -> Self {
        Freed {
            blocks: Default::default(),
            bytes: 0,
            max_bytes: 2 * (64 << 20),
            max_blocks: 2 << 16,
        }
    }
}

impl Freed {
    /// The oldest block, once more are kept than the limits allow.
    fn over(&mut self) -> Option<(u64, u64, u32)> {
        if self.bytes <= self.max_bytes && self.blocks.len() <= self.max_blocks {
            return None;
        }
        let b = self.blocks.pop_front()?;
        self.bytes -= b.1 - b.0;
        Some(b)
    }
}

/// Whether `reduce` drops the trace event `op` on `span` of `thread`,
/// lowered from `e` (every event is told to it: see [`Reducer`]).
fn repeated(reduce: &mut Reducer, thread: u32, op: LOp, span: Span, e: &Event) -> bool {
    let plain = matches!(op, LOp::Read | LOp::Write);
    if plain && span.n == 1 {
        return reduce.repeat(
            thread,
            op == LOp::Write,
            span.target,
            span.mask,
            e.pc,
            e.stack,
        );
    }
    if op.on_variable() {
        for v in span.target..span.target.wrapping_add(span.n) {
            reduce.touch(thread, v);
        }
    }
    if !plain {
        reduce.other(thread);
    }
    false
}

/// The bytes of a cell an access of `size` bytes at `addr` touches, split
/// by cell: (cell address, mask) pairs.
pub(super) fn cells(addr: u64, size: u64) -> impl Iterator<Item = (u64, u8)> {
    let end = addr.saturating_add(size);
    let first = addr & !7;
    (first..end)
        .step_by(8)
        .map(move |cell| (cell, cell_mask(addr, end, cell)))
}

/// The bytes of the 8-byte cell at `cell` that `addr..end` covers (bit i:
/// byte i).
#[inline]
fn cell_mask(addr: u64, end: u64, cell: u64) -> u8 {
    let lo = addr.max(cell) - cell;
    let hi = end.min(cell + 8) - cell;
    if hi - lo == 8 {
        0xff
    } else {
        (((1u16 << (hi - lo)) - 1) << lo) as u8
    }
}

impl Lowerer {
    /// The dense id of recorder thread `tid`.
    fn thread(&mut self, tid: u32) -> &mut ThreadState {
        let n = self.thread_tids.len() as u32;
        let tids = &mut self.thread_tids;
        self.threads.entry(tid).or_insert_with(|| {
            tids.push(tid);
            ThreadState {
                id: n,
                ..ThreadState::default()
            }
        })
    }

    fn lock(&mut self, addr: u64) -> u32 {
        if let Some(&id) = self.lock_ids.get(&addr) {
            return id;
        }
        let id = self.locks.len() as u32;
        self.locks.push(addr);
        self.lock_ids.insert(addr, id);
        id
    }

    fn generation(&self, cell: u64) -> u32 {
        match self.gens.range(..=cell).next_back() {
            Some((_, &(end, g))) if cell < end => g,
            _ => 0,
        }
    }

    /// The variable of the memory cell at `cell` (8-aligned).
    #[inline]
    fn cell(&mut self, cell: u64, tid: u32) -> u32 {
        if let Some(id) = self.cells.get(cell >> 3, tid) {
            return id;
        }
        let generation = if self.gens.is_empty() {
            0
        } else {
            self.generation(cell)
        };
        let id = self.vars.push(Var::Cell {
            addr: cell,
            generation,
        });
        self.cells.set(cell >> 3, tid, id);
        id
    }

    fn other(&mut self, v: Var) -> u32 {
        if let Some(&id) = self.other_vars.get(&v) {
            return id;
        }
        let id = self.vars.push(v);
        self.other_vars.insert(v, id);
        id
    }

    /// Starts a new generation for the cells of `addr..addr + size`.
    fn renew(&mut self, addr: u64, size: u64) {
        let start = addr & !7;
        let end = addr.saturating_add(size).saturating_add(7) & !7;
        if end <= start {
            return;
        }
        self.generation += 1;
        let g = self.generation;
        if let Some((&s, &(e, k))) = self.gens.range(..start).next_back()
            && e > start
        {
            self.gens.insert(s, (start, k));
            if e > end {
                self.gens.insert(end, (e, k));
            }
        }
        let inside: Vec<u64> = self.gens.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((e, k)) = self.gens.remove(&s)
                && e > end
            {
                self.gens.insert(end, (e, k));
            }
        }
        self.gens.insert(start, (end, g));
        let before = self.retired.len();
        self.cells.clear(start >> 3, end >> 3, &mut self.retired);
        // A variable a thread loaded relaxed stays: its next acquire fence
        // still acquires it (the release its load read from), freed or not.
        if self.retired.len() > before && !self.relaxed.is_empty() {
            let mut new = self.retired.split_off(before);
            new.retain(|v| !self.relaxed.contains_key(v));
            self.retired.append(&mut new);
        }
    }

    /// Keeps the cells of the block the recording saw allocated at `addr`,
    /// just freed, and retires those of the oldest block kept when there
    /// are too many (see [`Freed`]), unless an allocation renewed any of
    /// its bytes since (its cells are new variables already).
    fn keep_freed(&mut self, addr: u64) {
        let start = addr & !7;
        let Some(&(end, g)) = self.gens.get(&start) else {
            return;
        };
        self.freed.blocks.push_back((start, end, g));
        self.freed.bytes += end - start;
        while let Some((s, e, g)) = self.freed.over() {
            if self.gens.get(&s) == Some(&(e, g)) {
                self.renew(s, e - s);
            }
        }
    }

    /// Bytes from `addr` that the free of a block of usable size `size`
    /// writes: cut to the allocation the recording saw at `addr` (the bytes
    /// the program asked for, in whole cells), or to [`MAX_RANGE`] bytes
    /// when it saw none (a block allocated before the recording began).
    /// A free's size word alone never decides how many accesses the trace
    /// gets: a corrupt one cannot stand for terabytes of writes.
    fn freed_extent(&self, addr: u64, size: u64) -> u64 {
        let known = match self.gens.get(&(addr & !7)) {
            Some(&(end, _)) => end.saturating_sub(addr),
            None => MAX_RANGE,
        };
        size.min(known)
    }

    /// Starts loading what lowering `e` will look up first (the variable
    /// id of an access's cell), given a few events ahead of it.
    #[inline(always)]
    pub fn prefetch(&self, e: &Event) {
        if let What::Access { .. } = e.what {
            self.cells.prefetch(e.addr >> 3, e.tid);
        }
    }

    /// Moves the variables retired since the last call into `into` (its
    /// contents replaced), sorted.
    pub fn take_retired(&mut self, into: &mut Vec<u32>) {
        into.clear();
        std::mem::swap(into, &mut self.retired);
        into.sort_unstable();
    }

    /// Lowers `e`, handing each trace event to `out`.
    pub fn event(&mut self, e: &Event, out: &mut impl FnMut(Lowered)) {
        if self.reduce.is_none() {
            // Moving the reducer out and back cost a copy of it an event.
            return self.lower(e, &mut None, out);
        }
        // Out of `self` while `self` lowers (the arms return early).
        let mut reduce = self.reduce.take();
        self.lower(e, &mut reduce, out);
        self.reduce = reduce;
    }

    fn lower(&mut self, e: &Event, reduce: &mut Option<Reducer>, out: &mut impl FnMut(Lowered)) {
        let ts = self.thread(e.tid);
        if ts.joined {
            self.dropped.after_join += 1;
            return;
        }
        ts.started = true;
        let thread = ts.id;
        let at = self.emitted.min(u64::from(u32::MAX)) as u32;
        let mut count = 0u64;
        let mut counts = LoweredCounts::default();
        let mut put = |thread: u32, op: LOp, span: Span| {
            if let Some(r) = reduce
                && repeated(r, thread, op, span, e)
            {
                return;
            }
            let n = u64::from(span.n);
            if op != LOp::Request {
                count += n;
            }
            match op {
                LOp::Read | LOp::Write => counts.accesses += n,
                LOp::Acquire | LOp::Release => counts.locks += n,
                LOp::Fork | LOp::Join => counts.forks_joins += n,
                LOp::Request => {}
                _ => counts.atomics += n,
            }
            out(Lowered {
                thread,
                op,
                target: span.target,
                mask: span.mask,
                run: span.n,
                last_mask: span.last_mask,
                pc: e.pc,
                stack: e.stack,
            })
        };
        match e.what {
            // One cell (nearly every access): no span to grow, and `put`
            // called here rather than through `memory`'s `dyn` callback.
            What::Access { write, size } if (e.addr & 7) + u64::from(size) <= 8 => {
                let op = if write { LOp::Write } else { LOp::Read };
                let cell = e.addr & !7;
                let v = self.cell(cell, e.tid);
                put(
                    thread,
                    op,
                    Span::one(v, cell_mask(e.addr, e.addr + u64::from(size), cell)),
                );
                self.emitted += count;
                self.counts.add(&counts);
                return;
            }
            _ => {}
        }
        let emit = &mut |op: LOp, span: Span| put(thread, op, span);
        match e.what {
            What::Access { write, size } => {
                let op = if write { LOp::Write } else { LOp::Read };
                self.memory(e.tid, op, e.addr, u64::from(size), emit);
            }
            What::Request(l) => {
                let id = self.lock(l.addr);
                emit(LOp::Request, Span::one(id, 0xff));
            }
            What::Long(l) => match l.kind {
                Kind::Atomic => {
                    if let Some(a) = Atomic::from_flags(l.flags) {
                        self.atomic(e, a, emit);
                    }
                }
                Kind::Acquire => {
                    self.memory(e.tid, LOp::AtomicRead, l.addr, 1, emit);
                    self.acquire(e.tid, l.addr, l.flags, emit);
                }
                Kind::Release => {
                    self.memory(e.tid, LOp::AtomicRead, l.addr, 1, emit);
                    self.release(e.tid, l.addr, l.flags, emit);
                }
                Kind::Fork => {
                    let child = l.addr as u32;
                    let cs = self.thread(child);
                    if cs.started || cs.forked || cs.joined || child == e.tid {
                        self.dropped.forks_joins += 1;
                        return;
                    }
                    cs.forked = true;
                    let cid = cs.id;
                    self.created.insert(cid, (thread, e.pc, e.stack));
                    emit(LOp::Fork, Span::one(cid, 0xff));
                }
                Kind::Join => {
                    let child = l.addr as u32;
                    if child == e.tid || self.thread(child).joined {
                        self.dropped.forks_joins += 1;
                        return;
                    }
                    let cs = self.thread(child);
                    cs.joined = true;
                    let cid = cs.id;
                    emit(LOp::Join, Span::one(cid, 0xff));
                }
                // A thread that ends holding a lock never releases it (a
                // robust mutex's next owner gets it with EOWNERDEAD, which
                // orders nothing): see `acquire`.
                Kind::ThreadEnd => {}
                Kind::Alloc => {
                    self.renew(l.addr, l.extra[0]);
                    self.blocks.push(Block {
                        addr: l.addr,
                        size: l.extra[0],
                        thread,
                        pc: e.pc,
                        stack: e.stack,
                        new: l.flags == cprace_events::Alloc::New.flags(),
                        at,
                    });
                }
                Kind::Free => {
                    self.frees.push(Block {
                        addr: l.addr,
                        size: l.extra[0],
                        thread,
                        pc: e.pc,
                        stack: e.stack,
                        new: l.flags == cprace_events::Alloc::New.flags(),
                        at,
                    });
                    // A write of the whole block: a use racing with the
                    // free (before or after it) conflicts with it. The
                    // cells stay what they were until an allocation
                    // hands the memory out again.
                    let size = self.freed_extent(l.addr, l.extra[0]);
                    self.memory(e.tid, LOp::Write, l.addr, size, emit);
                    self.keep_freed(l.addr);
                }
                Kind::Range => {
                    let op = if l.flags & cprace_events::RANGE_WRITE != 0 {
                        LOp::Write
                    } else {
                        LOp::Read
                    };
                    self.memory(e.tid, op, l.addr, l.extra[0], emit);
                }
                Kind::SyncRead | Kind::SyncWrite => {
                    let op = if l.kind == Kind::SyncRead {
                        LOp::VolatileRead
                    } else {
                        LOp::VolatileWrite
                    };
                    if l.arg == SYNC_MEMORY {
                        self.memory(e.tid, op, l.addr, 1, emit);
                    } else {
                        let v = self.other(Var::Key(l.addr));
                        emit(op, Span::one(v, 0xff));
                    }
                }
                Kind::Object => {
                    let Some(o) = Object::from_flags(l.flags) else {
                        return;
                    };
                    match o.op {
                        ObjectOp::Init | ObjectOp::Destroy => {
                            self.memory(e.tid, LOp::Write, l.addr, l.extra[0], emit)
                        }
                        ObjectOp::Use => self.memory(e.tid, LOp::AtomicRead, l.addr, 1, emit),
                    }
                }
                Kind::ThreadName => {
                    let mut bytes = [0u8; 16];
                    bytes[..8].copy_from_slice(&l.extra[0].to_le_bytes());
                    bytes[8..].copy_from_slice(&l.extra[1].to_le_bytes());
                    let n = bytes.iter().position(|&b| b == 0).unwrap_or(16);
                    let name = String::from_utf8_lossy(&bytes[..n]).into_owned();
                    let id = self.thread(l.addr as u32).id;
                    self.names.retain(|(t, _)| *t != id);
                    self.names.push((id, name));
                }
                Kind::ThreadStart => {
                    self.stacks
                        .insert(thread, [l.addr, l.extra[0], l.extra[1], l.extra[2]]);
                    if l.arg != 0 {
                        self.os_tids.insert(thread, l.arg);
                    }
                }
                Kind::Benign => {
                    self.benign
                        .push((l.addr, l.addr.saturating_add(l.extra[0])));
                }
            },
        }
        self.emitted += count;
        self.counts.add(&counts);
    }

    /// Events on the memory `addr..addr + size`, one per cell.
    fn memory(&mut self, tid: u32, op: LOp, addr: u64, size: u64, emit: &mut dyn FnMut(LOp, Span)) {
        // Cells whose variables are consecutive go out as one span (a
        // range's cells usually are: declared together, in order).
        let mut span: Option<Span> = None;
        let end = addr.saturating_add(size);
        let mut cell = addr & !7;
        while cell < end {
            let mask = cell_mask(addr, end, cell);
            // Whole cells whose variables continue the span: walked in the
            // shadow a line at a time.
            if let Some(s) = &mut span
                && mask == 0xff
                && (s.n == 1 || s.last_mask == 0xff)
            {
                let whole = ((end - cell) / 8).min(u64::from(u32::MAX - s.n));
                let n = self
                    .cells
                    .count_from(cell >> 3, tid, s.target.wrapping_add(s.n), whole);
                if n > 0 {
                    s.n += n as u32;
                    s.last_mask = 0xff;
                    cell += 8 * n;
                    continue;
                }
            }
            let v = self.cell(cell, tid);
            if let Some(s) = &mut span {
                // The first cell may be partial, the ones between not.
                if (s.n == 1 || s.last_mask == 0xff)
                    && v == s.target.wrapping_add(s.n)
                    && s.n < u32::MAX
                {
                    s.n += 1;
                    s.last_mask = mask;
                } else {
                    emit(op, *s);
                    *s = Span::one(v, mask);
                }
            } else {
                span = Some(Span::one(v, mask));
            }
            // The last cell of the address space ends the range.
            let Some(next) = cell.checked_add(8) else {
                break;
            };
            cell = next;
        }
        if let Some(s) = span {
            emit(op, s);
        }
    }

    fn atomic(&mut self, e: &Event, a: Atomic, emit: &mut dyn FnMut(LOp, Span)) {
        let size = 1u64 << a.log2size;
        let tid = e.tid;
        let load = |s: &mut Self, emit: &mut dyn FnMut(LOp, Span)| {
            let op = if a.order.acquires() {
                LOp::VolatileRead
            } else {
                LOp::AtomicRead
            };
            for (cell, mask) in cells(e.addr, size) {
                let v = s.cell(cell, tid);
                if op == LOp::AtomicRead {
                    let ts = s.thread(tid);
                    if !ts.relaxed_loads.contains(&(v, mask)) {
                        ts.relaxed_loads.push((v, mask));
                        *s.relaxed.entry(v).or_default() += 1;
                    }
                }
                emit(op, Span::one(v, mask));
            }
        };
        let store = |s: &mut Self, emit: &mut dyn FnMut(LOp, Span)| {
            let op = if a.order.releases() || s.thread(tid).released {
                LOp::VolatileWrite
            } else {
                LOp::AtomicWrite
            };
            for (cell, mask) in cells(e.addr, size) {
                let v = s.cell(cell, tid);
                emit(op, Span::one(v, mask));
            }
        };
        match a.op {
            AtomicOp::Load | AtomicOp::FailedCas => load(self, emit),
            AtomicOp::Store => store(self, emit),
            AtomicOp::Rmw => {
                load(self, emit);
                store(self, emit);
            }
            AtomicOp::Fence => {
                if a.order.releases() {
                    self.thread(tid).released = true;
                }
                if a.order.acquires() {
                    let loads = std::mem::take(&mut self.thread(tid).relaxed_loads);
                    for &(v, _) in &loads {
                        if let Some(n) = self.relaxed.get_mut(&v) {
                            *n -= 1;
                            if *n == 0 {
                                self.relaxed.remove(&v);
                            }
                        }
                    }
                    for (v, mask) in loads {
                        emit(LOp::VolatileRead, Span::one(v, mask));
                    }
                }
            }
        }
    }

    fn acquire(&mut self, tid: u32, addr: u64, flags: u16, emit: &mut dyn FnMut(LOp, Span)) {
        if flags & LOCK_SHARED != 0 {
            let readers = self.readers.entry(addr).or_default();
            if !readers.contains(&tid) {
                readers.push(tid);
            }
            let v = self.other(Var::RwWriter(addr));
            emit(LOp::VolatileRead, Span::one(v, 0xff));
            return;
        }
        match self.holders.get(&addr).copied() {
            Some((h, _)) if h != tid => {
                // Held by another thread: one that died holding a robust
                // mutex (this acquire got EOWNERDEAD), or a recording cut
                // or corrupt. Nothing released it, so nothing orders the
                // two: the lock goes on as a new lock (a new id), the old
                // one staying held by the dead owner.
                if flags & LOCK_OWNER_DEAD == 0 {
                    self.dropped.acquires += 1;
                }
                self.lock_ids.remove(&addr);
                self.holders.insert(addr, (tid, 1));
            }
            Some((h, d)) => {
                self.holders.insert(addr, (h, d + 1));
            }
            None => {
                self.holders.insert(addr, (tid, 1));
            }
        }
        let id = self.lock(addr);
        let ts = self.thread(tid);
        match ts.held.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, d)) => *d += 1,
            None => ts.held.push((addr, 1)),
        }
        emit(LOp::Acquire, Span::one(id, 0xff));
        if flags & LOCK_RW != 0 {
            let readers = self.readers.get(&addr).cloned().unwrap_or_default();
            for t in readers {
                let v = self.other(Var::RwReader(addr, t));
                emit(LOp::VolatileRead, Span::one(v, 0xff));
            }
        }
    }

    fn release(&mut self, tid: u32, addr: u64, flags: u16, emit: &mut dyn FnMut(LOp, Span)) {
        if flags & LOCK_SHARED != 0 {
            let v = self.other(Var::RwReader(addr, tid));
            emit(LOp::VolatileWrite, Span::one(v, 0xff));
            return;
        }
        match self.holders.get(&addr).copied() {
            Some((h, d)) if h == tid => {
                if d > 1 {
                    self.holders.insert(addr, (h, d - 1));
                } else {
                    self.holders.remove(&addr);
                }
            }
            _ => {
                self.dropped.releases += 1;
                return;
            }
        }
        let ts = self.thread(tid);
        if let Some(i) = ts.held.iter().rposition(|(a, _)| *a == addr) {
            if ts.held[i].1 > 1 {
                ts.held[i].1 -= 1;
            } else {
                ts.held.remove(i);
            }
        }
        if flags & LOCK_RW != 0 {
            let v = self.other(Var::RwWriter(addr));
            emit(LOp::VolatileWrite, Span::one(v, 0xff));
        }
        let id = self.lock(addr);
        emit(LOp::Release, Span::one(id, 0xff));
    }
}
