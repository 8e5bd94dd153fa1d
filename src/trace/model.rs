//! The trace model: events, operations and interned names.

/// Dense id of an event: its 0-based position in the input trace.
pub type EventId = u32;
/// Dense id of a thread (index into [`Names::threads`]).
pub type ThreadId = u32;

/// What an event does. `target` of the [`Event`] names a variable for
/// accesses, a lock for `Acquire`/`Release` and a thread for `Fork`/`Join`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    /// Data read of a variable (`r`).
    Read,
    /// Data write of a variable (`w`).
    Write,
    /// Lock acquire (`acq`).
    Acquire,
    /// Lock release (`rel`).
    Release,
    /// Start of a child thread (`fork`).
    Fork,
    /// Wait for a child thread to finish (`join`).
    Join,
    /// Volatile read (`vr`).
    VolatileRead,
    /// Volatile write (`vw`).
    VolatileWrite,
    /// A re-entrant acquire of a lock the thread already holds. Kept so event ids
    /// stay input positions and `convert` is lossless; every analysis ignores it.
    ReentrantAcquire,
    /// The release matching a [`Op::ReentrantAcquire`]; ignored by analyses.
    ReentrantRelease,
    /// Relaxed atomic read (`ar`): an access that synchronizes nothing and
    /// conflicts only with plain writes (C/C++ `memory_order_relaxed`).
    AtomicRead,
    /// Relaxed atomic write (`aw`): conflicts only with plain accesses.
    AtomicWrite,
    /// A blocked lock request (`req`): the thread asked for lock `target` and
    /// the trace ended before it got it (a recorder stopped a hung program).
    /// Only legal as a thread's last event. The deadlock analysis reads it;
    /// every race analysis ignores it, as it ignores re-entrant acquires.
    Request,
}

impl Op {
    /// Every op, in declaration order: `ALL[op as usize] == op`.
    pub(crate) const ALL: [Op; 13] = [
        Op::Read,
        Op::Write,
        Op::Acquire,
        Op::Release,
        Op::Fork,
        Op::Join,
        Op::VolatileRead,
        Op::VolatileWrite,
        Op::ReentrantAcquire,
        Op::ReentrantRelease,
        Op::AtomicRead,
        Op::AtomicWrite,
        Op::Request,
    ];

    /// Parse the textual op used by every input format.
    pub fn parse(s: &str) -> Option<Op> {
        Op::parse_bytes(s.as_bytes())
    }

    /// [`Op::parse`] on bytes.
    #[inline]
    pub(crate) fn parse_bytes(s: &[u8]) -> Option<Op> {
        Some(match s {
            b"r" => Op::Read,
            b"w" => Op::Write,
            b"acq" => Op::Acquire,
            b"rel" => Op::Release,
            b"fork" => Op::Fork,
            b"join" => Op::Join,
            b"vr" => Op::VolatileRead,
            b"vw" => Op::VolatileWrite,
            b"ar" => Op::AtomicRead,
            b"aw" => Op::AtomicWrite,
            b"req" => Op::Request,
            _ => return None,
        })
    }

    /// The textual name written back by `convert` and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "r",
            Op::Write => "w",
            Op::Acquire | Op::ReentrantAcquire => "acq",
            Op::Release | Op::ReentrantRelease => "rel",
            Op::Fork => "fork",
            Op::Join => "join",
            Op::VolatileRead => "vr",
            Op::VolatileWrite => "vw",
            Op::AtomicRead => "ar",
            Op::AtomicWrite => "aw",
            Op::Request => "req",
        }
    }

    /// Plain data access (`r`, `w`): the accesses that race with any
    /// conflicting access.
    pub fn is_access(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }

    /// Atomic access (`vr`, `vw`, `ar`, `aw`): races only with a
    /// conflicting plain access, never with another atomic one.
    pub fn is_atomic(self) -> bool {
        matches!(
            self,
            Op::VolatileRead | Op::VolatileWrite | Op::AtomicRead | Op::AtomicWrite
        )
    }

    /// Any access of a variable, plain or atomic: the events races are
    /// reported on.
    pub fn is_memory(self) -> bool {
        self.is_access() || self.is_atomic()
    }

    /// Writes (plain, volatile or relaxed atomic).
    pub fn is_write(self) -> bool {
        matches!(self, Op::Write | Op::VolatileWrite | Op::AtomicWrite)
    }

    /// Volatile access.
    pub(crate) fn is_volatile(self) -> bool {
        matches!(self, Op::VolatileRead | Op::VolatileWrite)
    }

    /// Which name table `target` indexes.
    pub fn target_kind(self) -> TargetKind {
        match self {
            Op::Read
            | Op::Write
            | Op::VolatileRead
            | Op::VolatileWrite
            | Op::AtomicRead
            | Op::AtomicWrite => TargetKind::Variable,
            Op::Acquire
            | Op::Release
            | Op::ReentrantAcquire
            | Op::ReentrantRelease
            | Op::Request => TargetKind::Lock,
            Op::Fork | Op::Join => TargetKind::Thread,
        }
    }
}

/// The namespace an event's target lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A variable id.
    Variable,
    /// A lock id.
    Lock,
    /// A thread id.
    Thread,
}

/// One event. 16 bytes: the loaded trace costs 16 bytes per event plus name tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// Thread performing the event.
    pub thread: ThreadId,
    /// Variable, lock or thread id, depending on `op`.
    pub target: u32,
    /// Interned program location (id 0 is the empty location).
    pub loc: u32,
    /// The operation.
    pub op: Op,
    /// For an access, the bytes of its variable it touches (bit i: byte i
    /// of an 8-byte memory cell, in traces of recorded C/C++ programs); 0
    /// means the whole variable (every text format).
    pub mask: u8,
}

impl Event {
    /// The bytes touched, 0xff for the whole variable.
    #[inline(always)]
    pub fn bytes(&self) -> u8 {
        if self.mask == 0 { 0xff } else { self.mask }
    }

    /// True when `self` and `other` conflict: accesses of one variable by
    /// different threads, touching a common byte, at least one a write, not
    /// both atomic (two atomic accesses never race).
    #[inline]
    pub fn conflicts(&self, other: &Event) -> bool {
        self.op.is_memory()
            && other.op.is_memory()
            && self.thread != other.thread
            && self.target == other.target
            && self.bytes() & other.bytes() != 0
            && (self.op.is_write() || other.op.is_write())
            && !(self.op.is_atomic() && other.op.is_atomic())
    }
}

pub use super::intern::Interner;

/// Intern `name` in `table`, returning its dense id.
pub(crate) fn intern(table: &mut Interner, name: &str) -> u32 {
    table.intern(name)
}

/// The original names behind the dense ids.
#[derive(Clone, Debug)]
pub struct Names {
    /// Thread names.
    pub threads: Interner,
    /// Lock names.
    pub locks: Interner,
    /// Variable names (data and volatile).
    pub vars: Interner,
    /// Program locations; id 0 is always the empty location.
    pub locs: Interner,
}

impl Names {
    /// Empty tables (but the empty location) whose array families keep at
    /// most `budget` slots beyond two a name (see
    /// [`Interner::with_family_budget`]).
    pub(crate) fn with_family_budget(budget: usize) -> Names {
        Names::with_tables(|| Interner::with_family_budget(budget))
    }

    /// Tables made by `table`, the empty location interned.
    fn with_tables(table: impl Fn() -> Interner) -> Names {
        let mut locs = table();
        locs.intern("");
        Names {
            threads: table(),
            locks: table(),
            vars: table(),
            locs,
        }
    }

    /// No names but the empty location, keeping the tables' allocations.
    pub(crate) fn clear(&mut self) {
        for t in [
            &mut self.threads,
            &mut self.locks,
            &mut self.vars,
            &mut self.locs,
        ] {
            t.clear();
        }
        self.locs.intern("");
    }
}

impl Default for Names {
    fn default() -> Self {
        Names::with_tables(Interner::default)
    }
}

impl Names {
    /// Name of thread `t`.
    pub fn thread(&self, t: u32) -> &str {
        self.threads.get_index(t as usize).map_or("?", |s| s)
    }
    /// Name of lock `l`.
    pub fn lock(&self, l: u32) -> &str {
        self.locks.get_index(l as usize).map_or("?", |s| s)
    }
    /// Name of variable `v` (a recorded program's heap or stack cell gets
    /// its name, the address, made here).
    pub fn var(&self, v: u32) -> std::borrow::Cow<'_, str> {
        self.vars
            .name(v as usize)
            .unwrap_or(std::borrow::Cow::Borrowed("?"))
    }
    /// Location text of `l` (empty when unknown).
    pub fn loc(&self, l: u32) -> &str {
        self.locs.get_index(l as usize).map_or("", |s| s)
    }
    /// Name of an event's target, looked up in the table its op uses.
    pub fn target(&self, ev: &Event) -> std::borrow::Cow<'_, str> {
        match ev.op.target_kind() {
            TargetKind::Variable => self.var(ev.target),
            TargetKind::Lock => self.lock(ev.target).into(),
            TargetKind::Thread => self.thread(ev.target).into(),
        }
    }
}

/// Counters gathered while loading and validating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Re-entrant acquires filtered (with their matching releases).
    pub reentrant_acquires: u64,
    /// Releases of a lock that was not the innermost one held (legal for
    /// java.util.concurrent locks, accepted with a warning).
    pub out_of_nesting_releases: u64,
    /// Deepest lock nesting seen in any thread.
    pub max_nesting: u32,
    /// Critical sections still open when the trace ended.
    pub unreleased_at_end: u64,
}

/// A loaded, validated trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Events in trace order; the index is the event id.
    pub events: Vec<Event>,
    /// Name tables.
    pub names: Names,
    /// What validation counted.
    pub stats: LoadStats,
}

impl Trace {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }
    /// True when the trace has no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    /// Number of threads.
    pub fn num_threads(&self) -> usize {
        self.names.threads.len()
    }
    /// Number of locks.
    pub fn num_locks(&self) -> usize {
        self.names.locks.len()
    }
    /// Number of variables.
    pub fn num_vars(&self) -> usize {
        self.names.vars.len()
    }
}
