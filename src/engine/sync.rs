//! Synchronization points and their HB vector clocks.
//!
//! The CP fixpoint only ever relates synchronization events: acquires, releases,
//! forks, joins, atomic accesses (relaxed ones synchronize nothing, under HB
//! as under HBv, but CP keeps a pair with a relaxed side that HBv orders, so
//! they are points too), the first and last events of
//! forked/joined threads (ends of fork/join edges) and the last event of
//! critical sections never released. One streaming HB pass stores the vector clock of each such
//! point, so any HB test between them is a clock lookup: `x <=HB y` iff
//! `V(y)[thread(x)] >= local(x)`.
//!
//! The clocks are [`VectorClock`]s of the one clock module (`crate::engine::clock`),
//! with its conventions except one: an entry is the 1-based *position* of the
//! latest known event within its thread (every event ticks, as the fixpoint
//! relates single events, not epochs). A point stores its clock by sharing
//! (O(1)), so memory follows the distinct blocks alive: 100,000 threads
//! passing one lock along cost one path of blocks per point, not a row of
//! 100,000 entries.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::engine::clock::{Published, VectorClock};
use crate::engine::paged::{Paged, Rows};
use crate::facts::Facts;
use crate::trace::{EventId, Op, Trace};

/// Sentinel for "no slot".
pub const NONE: u32 = u32::MAX;

/// Which volatile edges the clocks follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VolatileOrder {
    /// HB (the Java memory model): a volatile write -> every later volatile
    /// read of the same variable.
    #[default]
    WriteRead,
    /// HBv, the order CP and WCP compose with: additionally every volatile
    /// access -> every later volatile write of the same variable (read ->
    /// write and write -> write). Together: every pair of volatile accesses
    /// of a variable, at least one a write, in trace order. Relaxed atomic
    /// accesses (`ar`, `aw`) have no edge in either order (docs/src/semantic-decisions.md, "Semantic
    /// decisions").
    Conflicting,
}

/// The synchronization points of a trace with their HB clocks.
#[derive(Clone, Debug, Default)]
pub struct SyncPoints {
    /// Event id of each point, ascending. A point's index here is its *slot*.
    pub events: Vec<EventId>,
    /// Thread of each point.
    pub thread: Vec<u32>,
    /// 1-based position of each point within its thread.
    pub local: Vec<u32>,
    /// Threads in the trace (clock width).
    pub nthreads: usize,
    /// HB clocks (HBv clocks under [`VolatileOrder::Conflicting`]), one per
    /// slot (sharing blocks with each other).
    pub hb: Vec<VectorClock>,
    /// The volatile edges `hb` follows.
    pub order: VolatileOrder,
}

impl SyncPoints {
    /// Collect the points of `trace` (plus `extra` events, e.g. ordered races)
    /// and compute their HB clocks in one pass.
    pub fn new(trace: &Trace, facts: &Facts, extra: &[EventId]) -> SyncPoints {
        Self::build(trace, facts, extra, VolatileOrder::WriteRead, &[])
    }

    /// [`SyncPoints::new`] with clocks following the volatile edges of `order`
    /// and the `edges` `(e1, e2)`, `e1 < e2` (ordered races of
    /// `--order-races`: hard edges, so the clocks flow along them too; their
    /// ends become points).
    pub fn with_order(
        trace: &Trace,
        facts: &Facts,
        edges: &[(EventId, EventId)],
        order: VolatileOrder,
    ) -> SyncPoints {
        let extra: Vec<EventId> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        Self::build(trace, facts, &extra, order, edges)
    }

    /// The points of `trace` when it is a stretch of a longer trace (the
    /// streaming engine's buffer, see [`Carried`]): `facts` name events by
    /// their ids in the whole trace, and so do the points; clocks are
    /// `carried`'s (the stream steps each event once, as it arrives) and a
    /// pinned acquire keeps the clock it had.
    /// The first event of each thread in the stretch is a point as well, so
    /// every event has a point of its thread at or before it carrying its
    /// clock (the race pass needs one, and a stretch may start after a fork).
    pub(crate) fn carried(trace: &Trace, facts: &Facts, carried: &Carried) -> SyncPoints {
        let mut is_point = Self::mark(trace, facts, &[], |e| carried.index(e));
        let nt = trace.num_threads();
        let mut seen = vec![false; nt];
        for (i, ev) in trace.events.iter().enumerate() {
            let s = &mut seen[ev.thread as usize];
            is_point[i] |= !*s;
            *s = true;
        }
        let pinned = carried.pinned.len();
        is_point[..pinned].fill(true);
        let mut sp = Self::sized(&is_point, nt, VolatileOrder::Conflicting);
        for (i, p) in carried.pinned.iter().enumerate() {
            sp.push(p.id, trace.events[i].thread, p.local, p.clock.clone());
        }
        // Each thread's latest clock and position, from `base` on.
        let (mut clock, mut local): (Vec<VectorClock>, Vec<u32>) = (0..nt)
            .map(|t| carried.threads.get(t).cloned().unwrap_or_default())
            .unzip();
        let mut steps = carried.steps.iter().peekable();
        for (i, ev) in trace.events.iter().enumerate().skip(pinned) {
            let t = ev.thread as usize;
            local[t] += 1;
            let stepped = steps.next_if(|s| s.0 == carried.id(i)).is_some_and(|s| {
                clock[t].clone_from(&s.1);
                true
            });
            if is_point[i] {
                // A plain access was passed: its clock is its thread's
                // latest with its own entry moved on.
                if !stepped {
                    clock[t].set(ev.thread, local[t]);
                }
                sp.push(carried.id(i), ev.thread, local[t], clock[t].clone());
            }
        }
        sp
    }

    /// The points of `trace` without their clocks (`hb` stays empty, so
    /// [`SyncPoints::clock`] and [`SyncPoints::hb_leq`] must not be used): for
    /// engines that derive the order themselves, as the Datalog HB closure does.
    pub(crate) fn without_clocks(trace: &Trace, facts: &Facts) -> SyncPoints {
        let is_point = Self::mark(trace, facts, &[], |e| e as usize);
        let mut sp = SyncPoints {
            nthreads: trace.num_threads(),
            ..SyncPoints::default()
        };
        let mut local = vec![0u32; trace.num_threads()];
        for (i, ev) in trace.events.iter().enumerate() {
            local[ev.thread as usize] += 1;
            if is_point[i] {
                sp.events.push(i as EventId);
                sp.thread.push(ev.thread);
                sp.local.push(local[ev.thread as usize]);
            }
        }
        sp
    }

    /// Which events are points (see the module docs), plus `extra`; `index`
    /// maps the
    /// ids `facts` use to positions in `trace`.
    fn mark(
        trace: &Trace,
        facts: &Facts,
        extra: &[EventId],
        index: impl Fn(EventId) -> usize,
    ) -> Vec<bool> {
        let mut is_point: Vec<bool> = trace
            .events
            .iter()
            .map(|ev| {
                matches!(
                    ev.op,
                    Op::Acquire
                        | Op::Release
                        | Op::Fork
                        | Op::Join
                        | Op::VolatileRead
                        | Op::VolatileWrite
                        | Op::AtomicRead
                        | Op::AtomicWrite
                )
            })
            .collect();
        for &(f, c) in facts.fork_edges.iter().chain(&facts.join_edges) {
            is_point[index(f)] = true;
            is_point[index(c)] = true;
        }
        for cs in &facts.critical_sections {
            is_point[index(cs.end)] = true;
        }
        for &e in extra {
            is_point[index(e)] = true;
        }
        is_point
    }

    fn build(
        trace: &Trace,
        facts: &Facts,
        extra: &[EventId],
        order: VolatileOrder,
        edges: &[(EventId, EventId)],
    ) -> SyncPoints {
        let is_point = Self::mark(trace, facts, extra, |e| e as usize);
        let mut sp = Self::sized(&is_point, trace.num_threads(), order);
        let mut hb = Clocks::with_order(trace, true, order);
        let mut into: Vec<(EventId, EventId)> = edges.iter().map(|&(a, b)| (b, a)).collect();
        into.sort_unstable();
        let mut next_edge = 0;
        for (i, ev) in trace.events.iter().enumerate() {
            let sources =
                next_edge..into[next_edge..].partition_point(|e| e.0 <= i as EventId) + next_edge;
            next_edge = sources.end;
            // An access that is not a point neither sends nor receives:
            // only its thread's position moves (the clock's own entry
            // catches up at the thread's next step, and every clock that
            // leaves the thread does so at a step).
            if !is_point[i] && ev.op.is_memory() && hb.pass(ev.thread) {
                continue;
            }
            let (clock, local) = hb.step(ev, |c| {
                let sources = &into[sources];
                for &(_, src) in sources {
                    let s = sp
                        .events
                        .binary_search(&src)
                        .expect("edge sources are points");
                    c.join(&sp.hb[s]);
                }
                !sources.is_empty()
            });
            if is_point[i] {
                sp.push(i as EventId, ev.thread, local, clock.clone());
            }
        }
        sp
    }

    /// No points yet, with room for those `is_point` marks.
    fn sized(is_point: &[bool], nthreads: usize, order: VolatileOrder) -> SyncPoints {
        let count = is_point.iter().filter(|&&b| b).count();
        SyncPoints {
            events: Vec::with_capacity(count),
            thread: Vec::with_capacity(count),
            local: Vec::with_capacity(count),
            nthreads,
            hb: Vec::with_capacity(count),
            order,
        }
    }

    /// The next point: event `id` of `thread`, its position there and its clock.
    fn push(&mut self, id: EventId, thread: u32, local: u32, clock: VectorClock) {
        self.events.push(id);
        self.thread.push(thread);
        self.local.push(local);
        self.hb.push(clock);
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Slot of event `e`, if it is a point.
    pub fn slot(&self, e: EventId) -> Option<u32> {
        self.events.binary_search(&e).ok().map(|s| s as u32)
    }

    /// HB clock of slot `s`.
    #[inline]
    pub fn clock(&self, s: u32) -> &VectorClock {
        &self.hb[s as usize]
    }

    /// `x <=HB y` (reflexive) for slots.
    #[inline]
    pub fn hb_leq(&self, x: u32, y: u32) -> bool {
        self.hb[y as usize].get(self.thread[x as usize]) >= self.local[x as usize]
    }

    /// Event id of slot `s`.
    #[inline]
    pub fn event(&self, s: u32) -> EventId {
        self.events[s as usize]
    }
}

/// How a stretch of a trace (the streaming engine's buffer) continues the
/// trace before it. The stretch's first `pinned.len()` events replay the
/// acquires of critical sections still open where the stretch begins (they
/// have their real ids, thread positions and clocks); the events after them
/// are the trace's from `base` on, with the HBv clocks the stream computed
/// as they arrived.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// The replayed acquires, in trace order (all before `base`).
    pub pinned: Vec<Pinned>,
    /// Id of the first event after the pinned ones.
    pub base: EventId,
    /// Per thread, its HBv clock after its latest stepped event before
    /// `base` (its own entry may lag behind plain accesses) and its
    /// number of events before `base`.
    pub threads: Vec<(VectorClock, u32)>,
    /// From `base` on, the HBv clock after each event [`Carried::step`]
    /// stepped, by event id, in order.
    pub steps: Vec<(EventId, VectorClock)>,
}

/// An acquire replayed at the start of a stretch (see [`Carried`]).
#[derive(Clone, Debug)]
pub(crate) struct Pinned {
    /// Its id in the whole trace.
    pub id: EventId,
    /// Its 1-based position within its thread.
    pub local: u32,
    /// Its HBv clock.
    pub clock: VectorClock,
}

impl Carried {
    /// Id in the whole trace of the stretch's event at position `i`.
    #[inline]
    pub(crate) fn id(&self, i: usize) -> EventId {
        match self.pinned.get(i) {
            Some(p) => p.id,
            None => self.base + (i - self.pinned.len()) as EventId,
        }
    }

    /// Move `clocks` past event `id` (the next one), keeping its clock when
    /// the event may send or receive: everything but a plain access of a
    /// thread that has started (whose clock is its thread's latest, with
    /// its own entry moved on).
    pub(crate) fn step(&mut self, clocks: &mut Clocks, id: EventId, ev: &crate::trace::Event) {
        if matches!(ev.op, Op::Read | Op::Write) && clocks.pass(ev.thread) {
            return;
        }
        let (clock, _) = clocks.step(ev, |_| false);
        self.steps.push((id, clock.clone()));
    }

    /// Start at `keep` (at or after `base`): fold the steps of `events`,
    /// the events from `base` to `keep`, into the threads' clocks there.
    pub(crate) fn advance(&mut self, events: &[crate::trace::Event], keep: EventId) {
        let mut steps = self.steps.iter().peekable();
        for (i, ev) in events.iter().enumerate() {
            let t = ev.thread as usize;
            if self.threads.len() <= t {
                self.threads.resize(t + 1, Default::default());
            }
            let entry = &mut self.threads[t];
            entry.1 += 1;
            if let Some(s) = steps.next_if(|s| s.0 == self.base + i as EventId) {
                entry.0.clone_from(&s.1);
            }
        }
        let gone = self.steps.partition_point(|s| s.0 < keep);
        self.steps.drain(..gone);
        self.base = keep;
    }

    /// Position in the stretch of the event with id `e` (one of its events).
    pub(crate) fn index(&self, e: EventId) -> usize {
        if e >= self.base {
            self.pinned.len() + (e - self.base) as usize
        } else {
            self.pinned.partition_point(|p| p.id < e)
        }
    }
}

/// What a volatile variable sends under [`VolatileOrder::Conflicting`]: the
/// clock of its latest write, and of each thread's latest read since (one
/// per thread: a thread's clock only grows). A write receives them all, a
/// read the write's. A counter that one thread writes and another reads
/// costs two shared clocks, where joining them into one clock of all
/// accesses built a tree of its own for every atomic (BS::thread_pool's
/// tests have 30 million atomics).
///
/// Each is a [`Published`] clock: the thread's snapshot as it was when it
/// last learned from another thread (shared by every access since) and its
/// own entry, so a worker storing to a million atomics between two
/// acquires costs one clock, where a clone of its live clock cost a path of
/// tree nodes each (its own entry moving on at the next event copied the
/// path the clone shared), and an entry is 16 bytes.
#[derive(Clone, Debug, Default)]
struct Volatile {
    write: Option<Published>,
    reads: SmallVec<[Published; 1]>,
}

/// Thread `t`'s clock `me` as a [`Published`] on the thread's snapshot
/// (taken now if it has none).
fn stamp(snap: &mut Option<Arc<VectorClock>>, me: &VectorClock, t: u32) -> Published {
    Published::of(snap, t, me.get(t), || me.clone())
}

/// Streaming vector clocks propagated along HB edges (program order,
/// release->acquire, fork/join, volatile write -> later read; under
/// [`VolatileOrder::Conflicting`] also volatile read/write -> later write),
/// yielding the clock at every event. Entries are 1-based positions within
/// each thread.
///
/// With `reflexive` each event's own thread entry is its position: the HB
/// clock. Without it, only what arrives along edges or through `inject` enters:
/// the CP clock (CP is not reflexive), into which base edges inject the HB clock
/// of their source. One propagation serves both so they cannot drift apart.
///
/// Every clock is a shared [`VectorClock`]: a release makes the lock's clock
/// the thread's (O(1)), a fork or join shares the other thread's clock, and
/// nothing is sized by the number of threads. The tables grow as new
/// threads and locks appear, so a stream can be fed without knowing them up
/// front. Volatile variables get a row of a table by integer index (a
/// program's atomics are millions: BS::thread_pool's tests have 30
/// million), and a retired variable's row goes to the next one.
#[derive(Debug)]
pub struct Clocks {
    reflexive: bool,
    conflicting: bool,
    threads: Vec<VectorClock>,
    locks: Vec<VectorClock>,
    /// Per variable, its row in `volatile_writes` or `volatiles` (NONE
    /// before its first volatile access).
    volatile_row: Paged<u32>,
    /// Per variable, the join of every volatile write so far (only under
    /// [`VolatileOrder::WriteRead`]).
    volatile_writes: Rows<VectorClock>,
    /// Per variable, what its accesses send (only under
    /// [`VolatileOrder::Conflicting`]).
    volatiles: Rows<Volatile>,
    fork_pending: Vec<Option<VectorClock>>,
    local: Vec<u32>,
    /// Per thread, the snapshot its [`Volatile`] entries share, dropped
    /// whenever its clock learns from another thread.
    bases: Vec<Option<Arc<VectorClock>>>,
}

impl Default for Clocks {
    fn default() -> Self {
        Clocks {
            reflexive: false,
            conflicting: false,
            threads: Vec::new(),
            locks: Vec::new(),
            volatile_row: Paged::new(NONE),
            volatile_writes: Rows::default(),
            volatiles: Rows::default(),
            fork_pending: Vec::new(),
            local: Vec::new(),
            bases: Vec::new(),
        }
    }
}

impl Clocks {
    /// Clocks for `trace` (HB: volatile write -> later read only).
    pub fn new(trace: &Trace, reflexive: bool) -> Clocks {
        Self::with_order(trace, reflexive, VolatileOrder::WriteRead)
    }

    /// Clocks for `trace` following the volatile edges of `order`.
    pub fn with_order(trace: &Trace, reflexive: bool, order: VolatileOrder) -> Clocks {
        let mut c = Self::empty(reflexive, order);
        c.grow_threads(trace.num_threads());
        c.locks.resize(trace.num_locks(), VectorClock::default());
        c
    }

    /// Clocks with no thread or lock yet (they grow as events name them).
    pub fn empty(reflexive: bool, order: VolatileOrder) -> Clocks {
        Clocks {
            reflexive,
            conflicting: order == VolatileOrder::Conflicting,
            ..Clocks::default()
        }
    }

    /// Forget the clocks of `vars`, which no later event touches (retired
    /// variables: see [`crate::engine::detector::Detector::retire`]): a
    /// program allocating atomics again and again keeps the clocks of
    /// those it holds, not of all it ever had.
    pub(crate) fn retire(&mut self, vars: &[u32]) {
        for &v in vars {
            if let Some(r) = self.volatile_row.retire(v as usize, |&r| r != NONE) {
                // The row's clocks go now, not when a new variable takes it.
                if self.conflicting {
                    self.volatiles[r as usize] = Volatile::default();
                    self.volatiles.free(r);
                } else {
                    self.volatile_writes[r as usize] = VectorClock::default();
                    self.volatile_writes.free(r);
                }
            }
        }
    }

    /// The row of volatile variable `v` (made at its first access).
    #[inline]
    fn row(&mut self, v: u32) -> usize {
        let (row, live) = self.volatile_row.slot(v as usize);
        if *row == NONE {
            *live += 1;
            *row = if self.conflicting {
                self.volatiles.put(Volatile::default())
            } else {
                self.volatile_writes.put(VectorClock::default())
            };
        }
        *row as usize
    }

    fn grow_threads(&mut self, n: usize) {
        if self.threads.len() < n {
            self.threads.resize(n, VectorClock::default());
            self.fork_pending.resize(n, None);
            self.local.resize(n, 0);
            self.bases.resize(n, None);
        }
    }

    /// Move thread `t` past an event that neither sends nor receives along
    /// an edge, without touching its clock, if the thread has started (its
    /// first event may receive its fork's clock). Only for callers that read
    /// clocks at steps alone: the thread's own entry lags until its next
    /// step.
    pub fn pass(&mut self, t: u32) -> bool {
        match self.local.get_mut(t as usize) {
            Some(l) if *l > 0 => {
                *l += 1;
                true
            }
            _ => false,
        }
    }

    /// Process the next event; `inject` may join more into the thread's clock
    /// before the event's own edges apply, and says whether it may have.
    /// Returns the clock after the event and the event's local (1-based)
    /// index.
    pub fn step(
        &mut self,
        ev: &crate::trace::Event,
        inject: impl FnOnce(&mut VectorClock) -> bool,
    ) -> (&VectorClock, u32) {
        let t = ev.thread as usize;
        let tg = ev.target as usize;
        self.grow_threads(t + 1);
        match ev.op {
            Op::Fork | Op::Join => self.grow_threads(tg + 1),
            Op::Acquire | Op::Release if self.locks.len() <= tg => {
                self.locks.resize(tg + 1, VectorClock::default())
            }
            _ => {}
        }
        self.local[t] += 1;
        let local = self.local[t];
        // A thread's first event receives its fork's clock.
        if local == 1
            && let Some(p) = self.fork_pending[t].take()
        {
            self.threads[t].join(&p);
        }
        if self.reflexive {
            self.threads[t].set(ev.thread, local);
        }
        let injected = inject(&mut self.threads[t]);
        // What the thread learns below (or from `inject`) is not in its
        // snapshot.
        let learns = match ev.op {
            Op::Acquire | Op::Join => true,
            Op::VolatileRead | Op::VolatileWrite => !self.conflicting,
            _ => false,
        };
        if learns || injected || local == 1 {
            self.bases[t] = None;
        }
        // Relaxed atomic accesses have no edges, under HB as under HBv.
        match ev.op {
            Op::Acquire => self.threads[t].join(&self.locks[tg]),
            Op::Release => self.locks[tg].clone_from(&self.threads[t]),
            Op::Fork => self.fork_pending[tg] = Some(self.threads[t].clone()),
            Op::Join => {
                // The child's own entry lags when its last events were
                // passed (see [`Clocks::pass`]).
                if self.reflexive && self.local[tg] > 0 {
                    self.threads[tg].set(ev.target, self.local[tg]);
                }
                let child = self.threads[tg].clone();
                self.threads[t].join(&child);
            }
            // Joining a thread's own earlier accesses is harmless here: they
            // are program-order-before, so already in the clock.
            Op::VolatileWrite if self.conflicting => {
                let r = self.row(ev.target);
                let me = &mut self.threads[t];
                let v = &mut self.volatiles[r];
                // A clock that teaches nothing keeps the thread's snapshot
                // (nearly every one on BS::thread_pool's tests: a snapshot
                // per atomic access was 5 GB of copied paths there).
                for c in v.write.iter().chain(&v.reads) {
                    if c.thread != ev.thread && !c.covered_by(me) {
                        c.join_into(me);
                        self.bases[t] = None;
                    }
                }
                // `me` now covers every access so far.
                v.reads.clear();
                v.write = Some(stamp(&mut self.bases[t], me, ev.thread));
            }
            Op::VolatileRead if self.conflicting => {
                let r = self.row(ev.target);
                let me = &mut self.threads[t];
                let v = &mut self.volatiles[r];
                if let Some(w) = &v.write
                    && w.thread != ev.thread
                    && !w.covered_by(me)
                {
                    w.join_into(me);
                    self.bases[t] = None;
                }
                let mine = stamp(&mut self.bases[t], me, ev.thread);
                match v.reads.iter_mut().find(|c| c.thread == ev.thread) {
                    Some(c) => *c = mine,
                    None => v.reads.push(mine),
                }
            }
            Op::VolatileWrite => {
                let r = self.row(ev.target);
                self.volatile_writes[r].join(&self.threads[t]);
            }
            Op::VolatileRead => {
                if let Some(&r) = self.volatile_row.get(ev.target as usize)
                    && r != NONE
                {
                    self.threads[t].join(&self.volatile_writes[r as usize]);
                }
            }
            _ => {}
        }
        (&self.threads[t], local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A volatile write sends what its thread learned before it, also
    /// between two of its volatile accesses (the snapshot its entries share
    /// is dropped at an acquire), and a thread's own earlier access adds
    /// nothing.
    #[test]
    fn a_volatile_write_sends_what_its_thread_acquired_since_its_last_one() {
        let text = "T0|acq(l)|1\nT0|w(d)|2\nT0|rel(l)|3\nT1|vw(x)|4\nT1|acq(l)|5\nT1|rel(l)|6\n\
                    T1|vw(x)|7\nT2|vr(x)|8\nT2|r(d)|9";
        let trace = crate::trace::load_str(text, Some(crate::trace::Format::Std)).expect("trace");
        for reflexive in [true, false] {
            let mut c = Clocks::with_order(&trace, reflexive, VolatileOrder::Conflicting);
            let mut last = VectorClock::default();
            for ev in &trace.events {
                last = c.step(ev, |_| false).0.clone();
            }
            let id = |name: &str| {
                let i = trace.names.threads.iter().position(|n| n == name);
                i.expect("a thread of the trace") as u32
            };
            let (t0, t1) = (id("T0"), id("T1"));
            // T2's read knows T0 up to its release (3 events, reflexive) and
            // T1 up to its second write.
            let want = if reflexive { (3, 4) } else { (0, 0) };
            assert_eq!((last.get(t0), last.get(t1)), want, "reflexive {reflexive}");
        }
    }

    /// A join receives every event of its child, also those the child
    /// passed without a step (the stream passes plain accesses).
    #[test]
    fn a_join_receives_the_events_its_child_passed() {
        let text = "T0|fork(T1)|1\nT1|w(x)|2\nT1|r(x)|3\nT0|join(T1)|4";
        let trace = crate::trace::load_str(text, Some(crate::trace::Format::Std)).expect("trace");
        let mut c = Clocks::with_order(&trace, true, VolatileOrder::Conflicting);
        let mut last = VectorClock::default();
        for ev in &trace.events {
            if matches!(ev.op, Op::Read | Op::Write) && c.pass(ev.thread) {
                continue;
            }
            last = c.step(ev, |_| false).0.clone();
        }
        let t1 = trace.names.threads.iter().position(|n| n == "T1");
        assert_eq!(last.get(t1.expect("T1") as u32), 2);
    }

    /// The same for what an ordered race (`--order-races`) injects into
    /// the HB clocks of the sync points: it reaches a reader of the
    /// volatile written after it.
    #[test]
    fn an_injected_edge_reaches_the_readers_of_a_later_volatile_write() {
        let text = "T0|w(d)|1\nT1|vw(x)|2\nT1|w(d)|3\nT1|vw(x)|4\nT2|vr(x)|5";
        let trace = crate::trace::load_str(text, Some(crate::trace::Format::Std)).expect("trace");
        let facts = Facts::new(&trace);
        let sp = SyncPoints::with_order(&trace, &facts, &[(0, 2)], VolatileOrder::Conflicting);
        let slot = |e| sp.slot(e).expect("a point");
        assert!(sp.hb_leq(slot(0), slot(4)));
        let sp = SyncPoints::with_order(&trace, &facts, &[], VolatileOrder::Conflicting);
        assert!(sp.slot(0).is_none_or(|s0| !sp.hb_leq(s0, slot(4))));
    }
}
