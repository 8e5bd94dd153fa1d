//! The `vc` WCP engine: Algorithm 1 of wcp-2017, streaming, one pass.
//!
//! See the [module docs](super) for the semantics and the two corrections to the
//! printed algorithm. Layout notes:
//!
//! - Per thread: local clock `N`, HBv clock `H` (with `H[t] = N`), WCP-predecessor
//!   clock `P`; the event time is `C = P[t := N]`. `N` ticks lazily before the
//!   first event after a release, fork or volatile access (the only events WCP
//!   or HBv edges leave a thread from), so one epoch's events are interchangeable.
//! - Per lock: `H_l`, `P_l` of its last release, and one shared release log
//!   instead of the paper's per-thread `Acq_l(t)`/`Rel_l(t)` queues: a record
//!   `(thread, N of the acquire, H of the release)` per critical section, and per
//!   thread a cursor into it. A thread's queue is the log past its cursor, so
//!   each time is stored once rather than once per thread; the log is trimmed
//!   behind the slowest live thread.
//! - Per (lock, variable): the rule-(a) clocks `L^r`, `L^w`. Releases of one lock
//!   are HB-ordered, so the join the paper keeps equals the latest qualifying
//!   release's `H`; we keep that and the latest one by a *different* thread,
//!   which is what an access of the last releaser's own thread may use.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::json;
use smallvec::SmallVec;

use crate::engine::clock::{Published, VectorClock};
use crate::engine::history::AccessHistory;
use crate::engine::paged::{Paged, Rows};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Event, EventId, Op, ThreadId};

const NONE: u32 = u32::MAX;

/// By default a lock's log is only trimmed once it holds this many records.
const TRIM_MIN_RECORDS: usize = 1 << 12;

/// Rule-(a) state of one (lock, variable) pair: four clocks, each shared with
/// the `H` of the release it stands for (an O(1) copy):
///
/// - `R_LAST`/`W_LAST`: `H` of the latest release of the lock whose critical
///   section read / wrote the variable (with its thread and local time), and
/// - R_OTHER/W_OTHER: the latest such release by a thread other than that
///   one, which is what an access of the last releaser's own thread may join.
///
/// Releases of one lock are HB-ordered, so these latest times equal the joins
/// `L^r`, `L^w` of the paper.
#[derive(Clone, Debug)]
struct Slot {
    /// (thread, local time) of each clock's release; thread NONE when unset.
    who: [(u32, u32); 4],
    /// Each the `H` of its release, shared by every slot that release
    /// updated: a section touching thousands of variables (zstd hashes its
    /// input under one mutex) made as many copies of one clock, 160 of a
    /// slot's 200 bytes. Set whenever `who`'s thread is.
    clocks: [Option<Arc<VectorClock>>; 4],
    /// Ids of the last critical sections that recorded a read / write here.
    marks: [u32; 2],
}

const R_LAST: usize = 0;
const W_LAST: usize = 2;
const READ_MARK: usize = 0;
const WRITE_MARK: usize = 1;

/// All (lock, variable) slots.
#[derive(Clone, Debug, Default)]
struct SlotTable {
    slots: Vec<Slot>,
    /// Slots of retired variables, to be used again.
    free: Vec<u32>,
}

const EMPTY_SLOT: Slot = Slot {
    who: [(NONE, 0); 4],
    clocks: [None, None, None, None],
    marks: [0; 2],
};

impl SlotTable {
    fn push(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        self.slots.push(EMPTY_SLOT);
        self.slots.len() as u32 - 1
    }

    /// Slot `s` is no one's any more: emptied (its clocks dropped) and
    /// used again by a later [`SlotTable::push`].
    fn release(&mut self, s: u32) {
        self.slots[s as usize] = EMPTY_SLOT;
        self.free.push(s);
    }

    /// Join into `p` the clock of kind `last` (R_LAST or W_LAST) that an access
    /// of thread `t` may use. Skipped when `p` already knows that release: then
    /// it is WCP-before the access, so its whole `H` is in `p` already (Lemmas
    /// C.8 and C.9 of the paper).
    #[inline]
    fn join_into(&self, slot: u32, last: usize, t: u32, p: &mut VectorClock) {
        let rec = &self.slots[slot as usize];
        let c = if rec.who[last].0 == t { last + 1 } else { last };
        let (u, n) = rec.who[c];
        if u != NONE
            && p.get(u) < n
            && let Some(clock) = &rec.clocks[c]
        {
            p.join(clock);
        }
    }

    /// A release by `t` (clock `h`, local time `n`) of a section that accessed
    /// the slot's variable: it becomes the latest of kind `last`.
    fn update(&mut self, slot: u32, last: usize, t: u32, n: u32, h: &Arc<VectorClock>) {
        let rec = &mut self.slots[slot as usize];
        if rec.who[last].0 != t && rec.who[last].0 != NONE {
            rec.who[last + 1] = rec.who[last];
            // Moved, not copied: the old `last` becomes `other` (one shared
            // clock's count fewer to raise and drop per variable).
            rec.clocks.swap(last, last + 1);
        }
        rec.who[last] = (t, n);
        rec.clocks[last] = Some(Arc::clone(h));
    }

    /// Record that critical section `cs` accessed the slot; true the first time.
    #[inline]
    fn mark(&mut self, slot: u32, which: usize, cs: u32) -> bool {
        let m = &mut self.slots[slot as usize].marks[which];
        let first = *m != cs;
        *m = cs;
        first
    }
}

/// An open critical section.
#[derive(Clone, Debug, Default)]
struct OpenCs {
    lock: u32,
    /// `N` of the acquire.
    n_acq: u32,
    /// Unique id (for de-duplicating the recorded slots).
    id: u32,
    /// Stamp of the first entry of its thread's access log it covers: the
    /// section accessed the variables of the entries from there on.
    from: u64,
}

#[derive(Clone, Debug, Default)]
struct ThreadState {
    known: bool,
    started: bool,
    joined: bool,
    tick: bool,
    n: u32,
    h: VectorClock,
    /// `h` as of its last change other than its own entry, shared by the
    /// atomics this thread accessed since (see [`Published`]).
    snap: Option<Arc<VectorClock>>,
    p: VectorClock,
    held: Vec<OpenCs>,
    /// Variables accessed while some section was open (rule-(a) key, write,
    /// stamp), in stamp order: one entry per access rather than one per
    /// access and enclosing section, so deep nesting costs memory linear in
    /// the accesses (a section's variables are read off the log at its
    /// release). Emptied when no section is open.
    log: Vec<(u32, bool, u64)>,
    /// Absolute record index into each lock's log: the front of this thread's queue.
    cursors: Vec<u64>,
    /// Per lock, absolute indices of this thread's own records its cursor has
    /// not passed yet (for the queue statistic).
    own: Vec<VecDeque<u64>>,
}

/// Release log of one lock: one record `(thread, N of the acquire, H of the
/// release)` per critical section, `H` shared with the releaser's clock.
#[derive(Clone, Debug, Default)]
struct Log {
    records: Vec<(u32, u32, VectorClock)>,
    /// Absolute index of `records[0]`.
    base: u64,
    next_trim: usize,
}

impl Log {
    fn end(&self) -> u64 {
        self.base + self.records.len() as u64
    }
}

#[derive(Clone, Debug, Default)]
struct LockState {
    h: VectorClock,
    p: VectorClock,
    log: Log,
    holder: Option<u32>,
}

/// Rule (a)'s state of one key (a variable) accessed inside a critical
/// section.
#[derive(Clone, Debug)]
struct KeyState {
    /// Per kind (read, write), the thread and stamp of the key's latest log
    /// entry: an access needs no new entry when its thread logged the key
    /// after the latest acquire it still holds.
    logged: [(u32, u64); 2],
    /// The locks with a slot for the key (what rule (a) may join), with
    /// their slots, sorted by lock.
    locks: SmallVec<[(u32, u32); 2]>,
}

impl KeyState {
    /// The slot of lock `l` for this key, if it has one.
    #[inline]
    fn slot(&self, l: u32) -> Option<u32> {
        let i = self.locks.binary_search_by_key(&l, |&(m, _)| m).ok()?;
        Some(self.locks[i].1)
    }
}

impl Default for KeyState {
    fn default() -> Self {
        KeyState {
            logged: [(NONE, 0); 2],
            locks: SmallVec::new(),
        }
    }
}

/// What an atomic variable's hard edges need (see [`WcpVc::volatile_access`]).
#[derive(Clone, Debug, Default)]
struct VolatileState {
    /// `H` of the latest write, and of the latest write by a thread other
    /// than that one. The writes of a variable are totally ordered by HBv,
    /// so these stand for every earlier write.
    last_write: Option<Published>,
    other_write: Option<Published>,
    /// `H` of each thread's latest read since the latest write: mostly one
    /// (a counter read back, a flag polled by one thread), kept inline; a
    /// vector's first allocation held four.
    reads: SmallVec<[Published; 1]>,
}

/// One thread's latest atomic write and access of a variable, each with
/// whether it was relaxed: the sources of `RelaxedEdge` (rules/wcp.dl).
/// Kept apart (in [`WcpVc`]'s `latest`) only once they can no longer be
/// read off the variable's [`VolatileState`] (see [`VolatileState::derived`]),
/// so a variable only ever accessed the same way by one thread at a time (a
/// block of `std::atomic`s stored once) pays nothing for them.
#[derive(Clone, Debug)]
struct Latest {
    thread: u32,
    write: Option<Published>,
    write_relaxed: bool,
    any: Option<Published>,
    any_relaxed: bool,
}

impl VolatileState {
    /// While every access was volatile, each thread's latest write is
    /// `last_write` or `other_write` (the latest write by another thread)
    /// and its latest access is its read since then, else that write; true
    /// until a write drops what a thread did last (another thread's read
    /// since the latest write, or `other_write`), see [`Self::displaces`].
    fn derived(&self) -> Vec<Latest> {
        let mut out: Vec<Latest> = Vec::new();
        for h in [&self.last_write, &self.other_write].into_iter().flatten() {
            out.push(Latest {
                thread: h.thread,
                write: Some(h.clone()),
                write_relaxed: false,
                any: Some(h.clone()),
                any_relaxed: false,
            });
        }
        for r in &self.reads {
            match out.iter_mut().find(|e| e.thread == r.thread) {
                Some(e) => e.any = Some(r.clone()),
                None => out.push(Latest {
                    thread: r.thread,
                    write: None,
                    write_relaxed: false,
                    any: Some(r.clone()),
                    any_relaxed: false,
                }),
            }
        }
        out
    }

    /// Whether a volatile write by `t` drops a thread's latest access from
    /// the fields [`Self::derived`] reads.
    fn displaces(&self, t: u32) -> bool {
        self.reads.iter().any(|r| r.thread != t)
            || self.last_write.as_ref().is_some_and(|h| h.thread != t)
                && self.other_write.as_ref().is_some_and(|h| h.thread != t)
    }
}

/// Thread `t`'s `H` now, as its atomic accesses keep it.
fn sent(ts: &mut ThreadState, t: u32) -> Published {
    let h = &ts.h;
    Published::of(&mut ts.snap, t, h.get(t), || h.clone())
}

/// Join the hard edge from a volatile access (its thread's `H`, `h`) into
/// an access of thread `t`: its `H` goes into both `H` and `P` (anything
/// HBv-before the source is WCP-before the target). Skipped when `P`
/// already knows the source (its own entry, `h.own`): then its whole `H` is
/// in `P` and `H` already.
fn join_hard(ts: &mut ThreadState, t: u32, h: &Published) {
    if h.thread != t && ts.p.get(h.thread) < h.own {
        h.join_into(&mut ts.h);
        h.join_into(&mut ts.p);
        ts.snap = None;
    }
}

/// The hard edges of a volatile access by `t` (see [`WcpVc::atomic_access`]),
/// then it is the latest of its kind.
fn volatile_edges(ts: &mut ThreadState, st: &mut VolatileState, t: u32, write: bool) {
    let other = match (&st.last_write, &st.other_write) {
        (Some(h), _) if h.thread != t => Some(h),
        (_, Some(h)) => Some(h),
        _ => None,
    };
    if let Some(h) = other {
        join_hard(ts, t, h);
    }
    if write {
        for h in &st.reads {
            join_hard(ts, t, h);
        }
        st.reads.clear();
        let mine = sent(ts, t);
        match &mut st.last_write {
            Some(h) if h.thread == t => *h = mine,
            last => st.other_write = last.replace(mine),
        }
    } else {
        let mine = sent(ts, t);
        match st.reads.iter_mut().find(|h| h.thread == t) {
            Some(h) => *h = mine,
            None => st.reads.push(mine),
        }
    }
}

/// The edges of an atomic access by `t` with a relaxed side (rules/wcp.dl,
/// `RelaxedEdge`): from each other thread's latest earlier atomic access of
/// the variable it may take one from (a write when it reads, any when it
/// writes), when that or this access is relaxed and `H` already orders it
/// before this one. Only `P` learns from them: `H` already knows the
/// source. Then this access is the latest of its thread.
fn relaxed_edges(
    ts: &mut ThreadState,
    latest: &mut Vec<Latest>,
    t: u32,
    write: bool,
    relaxed: bool,
) {
    let mut mine = None;
    for (i, e) in latest.iter().enumerate() {
        if e.thread == t {
            mine = Some(i);
            continue;
        }
        let (src, src_relaxed) = if write {
            (&e.any, e.any_relaxed)
        } else {
            (&e.write, e.write_relaxed)
        };
        if let Some(h) = src
            && (relaxed || src_relaxed)
            && ts.h.get(h.thread) >= h.own
            && ts.p.get(h.thread) < h.own
        {
            h.join_into(&mut ts.p);
        }
    }
    let h = sent(ts, t);
    let i = mine.unwrap_or_else(|| {
        latest.push(Latest {
            thread: t,
            write: None,
            write_relaxed: false,
            any: None,
            any_relaxed: false,
        });
        latest.len() - 1
    });
    let me = &mut latest[i];
    if write {
        me.write = Some(h.clone());
        me.write_relaxed = relaxed;
    }
    me.any = Some(h);
    me.any_relaxed = relaxed;
}

/// Streaming WCP race detector (Algorithm 1 of wcp-2017).
pub struct WcpVc {
    pub(crate) history: AccessHistory,
    pub(crate) report: Report,
    threads: Vec<ThreadState>,
    locks: Vec<LockState>,
    slots: SlotTable,
    /// Per variable: its row in `keys`, u32::MAX before its first access
    /// inside a critical section, in pages freed when their variables are
    /// retired. Not a hash map: an access under a lock looks its key up,
    /// and a map's probe missed the cache twice where this misses once, in
    /// the order the program touched its memory (zstd's WCP spent a fifth
    /// of its detector's time on the probes). Not a vector of states: a
    /// program with millions of variables may touch a few thousand of them
    /// under a lock (BS::thread_pool's tests: 52,000 keys used of about 100
    /// million).
    key_row: Paged<u32>,
    /// Per rule-(a) key (see [`WcpVc::access`]) accessed inside a critical
    /// section, what rule (a) needs of it.
    keys: Rows<KeyState>,
    /// Stamps of log entries, over all threads.
    stamp: u64,
    /// Per variable: its row in `volatiles`, u32::MAX before its first
    /// atomic access (4 bytes a plain variable, not a whole state), in
    /// pages freed when their variables are retired.
    volatile_row: Paged<u32>,
    /// Per atomic variable: the sources of its hard edges.
    volatiles: Rows<VolatileState>,
    /// A bit per row of `volatiles`: whether `latest` holds its sources of
    /// `RelaxedEdge`.
    explicit: Vec<u64>,
    /// Per row with its bit set, each thread's latest atomic accesses.
    latest: FxHashMap<u32, Vec<Latest>>,
    cs_count: u32,
    known_threads: i64,
    /// Total length of the paper's Acq/Rel queues (over threads seen so far).
    queue_len: i64,
    queue_max: i64,
    /// Times a thread's queue began before the trimmed part of a log.
    truncated: u64,
    trim_min: usize,
}

/// The row in `keys` of rule-(a) key `x`, made (empty) when it has none.
#[inline]
fn key_row_of(key_row: &mut Paged<u32>, keys: &mut Rows<KeyState>, x: u32) -> u32 {
    let (r, live) = key_row.slot(x as usize);
    if *r == NONE {
        *r = keys.put(KeyState::default());
        *live += 1;
    }
    *r
}

/// Mutable references to two distinct elements.
fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    debug_assert_ne!(a, b);
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

impl WcpVc {
    /// A detector pairing accesses less than `window` events apart (the
    /// relation itself is always computed over the whole trace).
    pub fn new(window: Option<u64>) -> Self {
        Self::with_trim_threshold(window, TRIM_MIN_RECORDS)
    }

    /// Like [`WcpVc::new`], but a lock's release log is trimmed once it holds
    /// `records` records (tests use tiny values so trimming happens all the time).
    pub fn with_trim_threshold(window: Option<u64>, records: usize) -> Self {
        WcpVc {
            history: AccessHistory::new(window),
            report: Report::new(Relation::Wcp, Engine::Vc, window, 0),
            threads: Vec::new(),
            locks: Vec::new(),
            slots: SlotTable::default(),
            key_row: Paged::new(NONE),
            keys: Rows::default(),
            stamp: 0,
            volatile_row: Paged::new(u32::MAX),
            volatiles: Rows::default(),
            explicit: Vec::new(),
            latest: FxHashMap::default(),
            cs_count: 0,
            known_threads: 0,
            queue_len: 0,
            queue_max: 0,
            truncated: 0,
            trim_min: records,
        }
    }

    /// Make thread `t` known. A forked thread's queues start where its parent's
    /// are: everything the parent already dequeued is ordered before the fork,
    /// hence before the child, and would be dequeued by it at once.
    fn register(&mut self, t: usize, parent: Option<usize>) {
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, ThreadState::default);
        }
        if self.threads[t].known {
            return;
        }
        let cursors = parent
            .map(|p| self.threads[p].cursors.clone())
            .unwrap_or_default();
        let ts = &mut self.threads[t];
        ts.known = true;
        ts.n = 1;
        ts.h = VectorClock::default();
        ts.h.set(t as u32, 1);
        ts.snap = None;
        ts.cursors = cursors;
        // The paper's queues of a new thread hold every other thread's critical
        // sections it has not dequeued (including open ones: their Acq entries).
        let mut backlog = 0i64;
        // A thread becoming known has no critical section of its own yet.
        for (l, lk) in self.locks.iter().enumerate() {
            let from = ts.cursors.get(l).copied().unwrap_or(0).max(lk.log.base);
            backlog += 2 * (lk.log.end() - from) as i64;
            backlog += i64::from(lk.holder.is_some_and(|h| h != t as u32));
        }
        self.known_threads += 1;
        self.add_queue(backlog);
    }

    #[inline]
    fn add_queue(&mut self, n: i64) {
        self.queue_len += n;
        self.queue_max = self.queue_max.max(self.queue_len);
    }

    /// Forgets variables no later event touches (see
    /// [`crate::engine::detector::Detector::retire`]): their access
    /// histories, their rule-(a) keys with the slots of each key's locks,
    /// and an atomic's hard-edge sources (its row used again). A key an
    /// open section logged comes back, empty, at its release: state no
    /// access asks for again.
    pub fn retire(&mut self, vars: &[u32]) {
        self.history.retire(vars);
        for &v in vars {
            // An atomic's hard-edge sources: emptied, the row used again.
            if let Some(r) = self.volatile_row.retire(v as usize, |&r| r != u32::MAX) {
                self.volatiles[r as usize] = VolatileState::default();
                self.volatiles.free(r);
                if let Some(word) = self.explicit.get_mut(r as usize / 64) {
                    *word &= !(1 << (r % 64));
                }
                self.latest.remove(&r);
            }
            if let Some(r) = self.key_row.retire(v as usize, |&r| r != NONE) {
                for (_, s) in std::mem::take(&mut self.keys[r as usize]).locks {
                    self.slots.release(s);
                }
                self.keys.free(r);
            }
        }
    }

    /// Feed the next event (`id` is its 0-based position in the trace).
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let t = ev.thread as usize;
        if self.threads.get(t).is_none_or(|s| !s.known) {
            self.register(t, None);
        }
        let ts = &mut self.threads[t];
        ts.started = true;
        if ts.tick {
            ts.tick = false;
            ts.n += 1;
            ts.h.set(ev.thread, ts.n);
        }
        match ev.op {
            Op::Read | Op::Write => self.access(id, ev),
            // An atomic access takes its edges first (its check comes after
            // them), then is an access like any other.
            Op::VolatileWrite | Op::VolatileRead | Op::AtomicWrite | Op::AtomicRead => {
                let relaxed = matches!(ev.op, Op::AtomicWrite | Op::AtomicRead);
                self.atomic_access(ev.thread, ev.target, ev.op.is_write(), relaxed);
                self.access(id, ev);
            }
            Op::Acquire => self.acquire(ev.thread, ev.target),
            Op::Release => self.release(ev.thread, ev.target),
            Op::Fork => self.fork(t, ev.target as usize),
            Op::Join => self.join(t, ev.target as usize),
            Op::ReentrantAcquire | Op::ReentrantRelease | Op::Request => {}
        }
    }

    /// Lines 11-12: join the rule-(a) clocks of every enclosing lock, record the
    /// variable in the open critical sections, then check for races with `C`.
    ///
    /// Rule (a) counts atomic accesses like plain ones (rules/wcp.dl,
    /// `Conflicting`): two atomic accesses never race, but a section whose
    /// atomic read saw another section's atomic write cannot move before it.
    /// Bytes are not looked at, which only adds edges (each between two
    /// sections of one lock, so within HB: no race HB sees is lost).
    fn access(&mut self, id: EventId, ev: &Event) {
        let t = ev.thread;
        let write = ev.op.is_write();
        let key = ev.target;
        let WcpVc {
            threads,
            locks,
            slots,
            key_row,
            keys,
            stamp,
            history,
            report,
            ..
        } = self;
        let ts = &mut threads[t as usize];
        if let Some(last) = ts.held.last() {
            let mut join = |s: u32| {
                slots.join_into(s, W_LAST, t, &mut ts.p);
                if write {
                    slots.join_into(s, R_LAST, t, &mut ts.p);
                }
            };
            let r = key_row_of(key_row, keys, key);
            let k = &mut keys[r as usize];
            // Only locks with a slot for the key can contribute: walk the
            // shorter of those and the held ones.
            if k.locks.len() < ts.held.len() {
                for &(l, s) in &k.locks {
                    if locks[l as usize].holder == Some(t) {
                        join(s);
                    }
                }
            } else {
                for cs in &ts.held {
                    if let Some(s) = k.slot(cs.lock) {
                        join(s);
                    }
                }
            }
            let seen = &mut k.logged[usize::from(write)];
            if seen.0 != t || seen.1 < last.from {
                *seen = (t, *stamp);
                ts.log.push((key, write, *stamp));
                *stamp += 1;
            }
        }
        // C = P[t := N]: another thread's access with local time c is ordered
        // before this one iff c <= P[u] (Theorem 2 of the paper).
        let p = &ts.p;
        if let Some(r) = history.access(id, ev, ts.n, |u, c| c <= p.get(u)) {
            report.push(r);
        }
    }

    fn lock(&mut self, l: u32) -> &mut LockState {
        let l = l as usize;
        if self.locks.len() <= l {
            self.locks.resize_with(l + 1, LockState::default);
        }
        &mut self.locks[l]
    }

    /// Lines 1-3.
    fn acquire(&mut self, t: ThreadId, l: u32) {
        self.lock(l).holder = Some(t);
        self.cs_count += 1;
        let id = self.cs_count;
        let lk = &self.locks[l as usize];
        let ts = &mut self.threads[t as usize];
        ts.h.join(&lk.h);
        ts.snap = None;
        ts.p.join(&lk.p);
        ts.held.push(OpenCs {
            lock: l,
            n_acq: ts.n,
            id,
            from: self.stamp,
        });
        self.add_queue(self.known_threads - 1);
    }

    /// Lines 4-10.
    fn release(&mut self, t: ThreadId, l: u32) {
        let ti = t as usize;
        let Some(pos) = self.threads[ti].held.iter().rposition(|c| c.lock == l) else {
            return; // validation guarantees a matching acquire
        };
        self.lock(l).holder = None;
        let WcpVc {
            threads,
            locks,
            slots,
            key_row,
            keys,
            trim_min,
            ..
        } = self;
        let lk = &mut locks[l as usize];
        let ts = &mut threads[ti];
        let cs = ts.held.remove(pos);
        // Rule (b): dequeue every earlier critical section on l whose acquire is
        // WCP-before this release (N_acq <= P[u]), joining its release time.
        // The queue includes this thread's own earlier sections (see module docs).
        if ts.cursors.len() <= l as usize {
            ts.cursors.resize(l as usize + 1, 0);
        }
        if ts.own.len() <= l as usize {
            ts.own.resize_with(l as usize + 1, VecDeque::new);
        }
        let mut cur = ts.cursors[l as usize];
        if cur < lk.log.base {
            cur = lk.log.base;
            self.truncated += 1;
        }
        let mut i = (cur - lk.log.base) as usize;
        // Releases of one lock are HB-ordered and `P` is closed under HB on
        // the left, so the records whose release `P` already knows form a
        // prefix of the log; they are dequeued with no join (their acquires
        // are known too). Binary search it: a thread first seen late would
        // otherwise walk the whole history of the lock (quadratic with
        // 100,000 threads passing one lock along).
        let known = |r: &(u32, u32, VectorClock)| ts.p.get(r.0) >= r.2.get(r.0);
        if lk.log.records.get(i).is_some_and(known) {
            i += lk.log.records[i..].partition_point(known);
        }
        while let Some((u, n_acq, h)) = lk.log.records.get(i) {
            if *n_acq > ts.p.get(*u) {
                break;
            }
            if ts.p.get(*u) < h.get(*u) {
                ts.p.join(h);
            }
            i += 1;
        }
        let new_cur = lk.log.base + i as u64;
        // The queue statistic counts other threads' sections only.
        let own = &mut ts.own[l as usize];
        let mut own_passed = 0u64;
        while own.front().is_some_and(|&j| j < new_cur) {
            own.pop_front();
            own_passed += 1;
        }
        let dequeued_other = (new_cur - cur).saturating_sub(own_passed) as i64;
        cur = new_cur;
        ts.cursors[l as usize] = cur;
        // Rule (a) clocks: the variables the section accessed are the log
        // entries stamped since its acquire.
        let first = ts.log.partition_point(|e| e.2 < cs.from);
        // This release's `H`, made once for every slot it updates.
        let mut shared: Option<Arc<VectorClock>> = None;
        for &(x, w, _) in &ts.log[first..] {
            // A key retired while the section was open comes back, empty.
            let r = key_row_of(key_row, keys, x);
            let k = &mut keys[r as usize];
            let s = match k.locks.binary_search_by_key(&l, |&(m, _)| m) {
                Ok(i) => k.locks[i].1,
                Err(i) => {
                    let s = slots.push();
                    k.locks.insert(i, (l, s));
                    s
                }
            };
            let (mark, last) = if w {
                (WRITE_MARK, W_LAST)
            } else {
                (READ_MARK, R_LAST)
            };
            if slots.mark(s, mark, cs.id) {
                let h = shared.get_or_insert_with(|| Arc::new(ts.h.clone()));
                slots.update(s, last, t, ts.n, h);
            }
        }
        if ts.held.is_empty() {
            ts.log.clear();
        }
        lk.h.clone_from(&ts.h);
        lk.p.clone_from(&ts.p);
        ts.own[l as usize].push_back(lk.log.end());
        lk.log.records.push((t, cs.n_acq, ts.h.clone()));
        ts.tick = true;
        if lk.log.records.len() >= lk.log.next_trim.max(*trim_min) {
            Self::trim(threads, l as usize, &mut lk.log);
        }
        self.queue_len -= 2 * dequeued_other;
        self.add_queue(self.known_threads - 1);
    }

    /// Drop the log prefix every live thread has dequeued.
    fn trim(threads: &[ThreadState], l: usize, log: &mut Log) {
        let min = threads
            .iter()
            .filter(|s| s.known && !s.joined)
            .map(|s| s.cursors.get(l).copied().unwrap_or(0))
            .min()
            .unwrap_or(log.end())
            .max(log.base);
        let dead = (min - log.base) as usize;
        log.records.drain(..dead);
        log.base = min;
        log.next_trim = 2 * log.records.len();
    }

    /// Fork: a hard edge into the child's first event, in both H and P.
    fn fork(&mut self, t: usize, c: usize) {
        if c == t {
            return;
        }
        let fresh = self.threads.get(c).is_none_or(|s| !s.known);
        self.register(c, Some(t));
        let (parent, child) = two_mut(&mut self.threads, t, c);
        if fresh {
            child.h.clone_from(&parent.h);
            child.h.set(c as u32, child.n);
            child.p.clone_from(&parent.h);
        } else if !child.started {
            child.h.join(&parent.h);
            child.p.join(&parent.h);
        }
        child.snap = None;
        parent.tick = true;
    }

    /// Join: a hard edge from the child's last event, if it had any.
    fn join(&mut self, t: usize, c: usize) {
        if c == t || c >= self.threads.len() || !self.threads[c].known {
            return;
        }
        let (parent, child) = two_mut(&mut self.threads, t, c);
        child.joined = true;
        if child.started {
            parent.h.join(&child.h);
            parent.p.join(&child.h);
            parent.snap = None;
        }
    }

    /// An atomic access. A volatile one takes hard edges from every earlier
    /// volatile access of the variable by another thread (for a read the
    /// writes, for a write every access), then becomes a source itself.
    /// Then, where either side is relaxed, [`relaxed_edges`].
    ///
    /// Linear: every earlier write by another thread is HBv-before the latest
    /// one (`last_write`, or `other_write` when that is this thread's own). A
    /// read by another thread before the latest write is HBv-before that write
    /// when another thread wrote it, and otherwise reached this thread's `P`
    /// already at that write (its own hard edge); so a write only needs the
    /// reads since the latest write, kept one per thread and dropped at the
    /// write.
    fn atomic_access(&mut self, t: ThreadId, v: u32, write: bool, relaxed: bool) {
        let (row, live) = self.volatile_row.slot(v as usize);
        if *row == u32::MAX {
            *live += 1;
            *row = self.volatiles.put(VolatileState::default());
        }
        let r = *row;
        let (word, bit) = (r as usize / 64, 1u64 << (r % 64));
        let ts = &mut self.threads[t as usize];
        let st = &mut self.volatiles[r as usize];
        let mut explicit = self.explicit.get(word).is_some_and(|w| w & bit != 0);
        if !explicit && (relaxed || write && st.displaces(t)) {
            if self.explicit.len() <= word {
                self.explicit.resize(word + 1, 0);
            }
            self.explicit[word] |= bit;
            self.latest.insert(r, st.derived());
            explicit = true;
        }
        if !relaxed {
            volatile_edges(ts, st, t, write);
        }
        if explicit && let Some(latest) = self.latest.get_mut(&r) {
            relaxed_edges(ts, latest, t, write, relaxed);
        }
        // Both kinds of access are now sources of edges leaving the thread.
        ts.tick = true;
    }

    /// The finished report, with the paper's queue statistic.
    pub fn finish(mut self) -> Report {
        let events = self.report.events.max(1) as f64;
        let s = &mut self.report.stats;
        s.insert("critical_sections".into(), json!(self.cs_count));
        s.insert("max_queue_length".into(), json!(self.queue_max));
        s.insert(
            "max_queue_fraction".into(),
            json!(self.queue_max as f64 / events),
        );
        if self.truncated > 0 {
            self.report.notes.push(format!(
                "{} rule-(b) queue scans of threads first seen late (without a fork) started after \
                 already-trimmed release history; orderings through those critical sections may be missed",
                self.truncated
            ));
        }
        self.report.normalize();
        let report = std::mem::take(&mut self.report);
        crate::alloc::drop_later(self, report.events > crate::alloc::BIG);
        report
    }
}

/// Analyse an in-memory trace with the `vc` engine.
pub fn analyze(trace: &crate::trace::Trace, window: Option<u64>) -> Report {
    let mut vc = WcpVc::new(window);
    for (i, ev) in trace.events.iter().enumerate() {
        vc.event(i as EventId, ev);
    }
    vc.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_atomic_costs_wcp_64_bytes() {
        // One per atomic variable (30 million in a C++ test suite): 160
        // bytes each while the published clocks were inline.
        assert_eq!(std::mem::size_of::<super::VolatileState>(), 64);
    }

    #[test]
    fn rule_a_keeps_state_only_for_keys_accessed_under_a_lock() {
        use crate::trace::{Event, Op};
        // 100,000 variables written outside any section, then the last one
        // (plainly and atomically) inside one: rule (a) needs that one key.
        // A vector indexed by key held 200,000 entries here (about 100
        // million in BS::thread_pool's tests).
        let ev = |thread, op, target| Event {
            thread,
            target,
            loc: 0,
            op,
            mask: 0,
        };
        let mut w = super::WcpVc::new(None);
        let mut id = 0;
        let mut push = |w: &mut super::WcpVc, e: Event| {
            w.event(id, &e);
            id += 1;
        };
        for x in 0..100_000 {
            push(&mut w, ev(0, Op::Write, x));
        }
        push(&mut w, ev(0, Op::Acquire, 0));
        push(&mut w, ev(0, Op::Write, 99_999));
        push(&mut w, ev(0, Op::AtomicWrite, 99_999));
        push(&mut w, ev(0, Op::Release, 0));
        let rows: Vec<u32> = (0..100_000)
            .filter_map(|x| w.key_row.get(x).copied().filter(|&r| r != super::NONE))
            .collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(w.keys[rows[0] as usize].locks.as_slice(), [(0, 0)]);
    }
}
