//! DJIT+-style clocks: the exact HB racy-event set (`vc` and `treeclock`).
//!
//! Every thread, lock and volatile variable has a clock from
//! [`crate::engine::clock`]: a [`VectorClock`] (persistent, shared between clocks,
//! so a release is O(1) and 100,000 threads cost one path of blocks each), or
//! for threads and locks of the `treeclock` engine a [`TreeClock`]. A thread's
//! own entry starts at 1 and is incremented after every event that starts an HB
//! edge out of the thread (release, fork, volatile write), so an access of
//! thread `u` performed at local clock `c` is HB-before the current event of
//! thread `t` iff `C_t[u] >= c`. The per-variable read and write clocks of
//! DJIT+ are the per-thread stamps of [`AccessHistory`], which also picks the
//! witness (the latest unordered conflicting access within the window).
//!
//! Edges: `acq(l)` joins the clock of the last `rel(l)` (locks are exclusive,
//! so assigning the releaser's clock to the lock equals joining every earlier
//! release); `fork(t,u)` joins t's clock into u's before u has any event; a
//! `join(t,u)` joins u's final clock into t only if u had an event (a thread
//! without events has neither a first nor a last event, hence no edges);
//! `vw(v)` joins into v's clock (volatile writes are not ordered among
//! themselves) and `vr(v)` joins v's clock; relaxed `ar`/`aw` add no edge.
//! Every access, plain or atomic, is checked (two atomic ones never
//! conflict, see [`Event::conflicts`]): a `vr` after its join, a `vw` with
//! the clock it published.
//!
//! Atomics cost what they need (C++ programs have millions): a volatile
//! variable no `vw` reached has no clock, and one that a single thread
//! wrote holds that thread's clock as a snapshot shared with every other
//! variable the thread wrote since its clock last learned of another thread,
//! plus its own entry at the write (its own ticks in between change
//! nothing else), so a worker setting 100,000 atomic flags keeps one clock,
//! not 100,000. A second writer turns the variable's clock into a join.

use std::sync::Arc;

use serde_json::json;

use crate::engine::clock::{Published, TreeClock, VectorClock};
use crate::engine::history::AccessHistory;
use crate::engine::paged::{Paged, Rows};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{Event, EventId, Op, ThreadId};

const NONE: u32 = u32::MAX;

/// A clock the HB edge rules can run on: [`VectorClock`] (`vc`) or
/// [`TreeClock`] (`treeclock`). Volatile variables always keep a
/// [`VectorClock`] (the join of their writers' clocks, not one thread's).
pub trait HbClock: Default + Send + 'static {
    /// The clock of a thread `t` that has learned nothing yet (own entry 1).
    fn thread(t: ThreadId) -> Self;
    /// Entry of thread `t`.
    fn get(&self, t: ThreadId) -> u32;
    /// Increment the owner `t`'s entry.
    fn tick(&mut self, t: ThreadId);
    /// `self ⊔= other` (thread clock `self`).
    fn join(&mut self, other: &Self);
    /// `self := other` where `self ⊑ other` (a release into the lock's clock).
    fn copy(&mut self, other: &Self);
    /// `v ⊔= self` (a volatile write).
    fn publish(&self, v: &mut VectorClock);
    /// `self ⊔= v` (a volatile read).
    fn receive(&mut self, v: &VectorClock);
    /// Raise the entry of thread `u` to `c` if it is lower.
    fn raise(&mut self, u: ThreadId, c: u32);
    /// This clock as a [`VectorClock`], for volatile variables to share.
    fn snapshot(&self) -> VectorClock;
}

impl HbClock for VectorClock {
    fn thread(t: ThreadId) -> Self {
        [(t, 1)].into_iter().collect()
    }
    #[inline]
    fn get(&self, t: ThreadId) -> u32 {
        VectorClock::get(self, t)
    }
    #[inline]
    fn tick(&mut self, t: ThreadId) {
        VectorClock::tick(self, t)
    }
    #[inline]
    fn join(&mut self, other: &Self) {
        VectorClock::join(self, other)
    }
    #[inline]
    fn copy(&mut self, other: &Self) {
        self.clone_from(other)
    }
    fn publish(&self, v: &mut VectorClock) {
        v.join(self)
    }
    fn receive(&mut self, v: &VectorClock) {
        VectorClock::join(self, v)
    }
    fn raise(&mut self, u: ThreadId, c: u32) {
        VectorClock::raise(self, u, c)
    }
    fn snapshot(&self) -> VectorClock {
        self.clone()
    }
}

impl HbClock for TreeClock {
    fn thread(t: ThreadId) -> Self {
        TreeClock::new(t, 1)
    }
    #[inline]
    fn get(&self, t: ThreadId) -> u32 {
        TreeClock::get(self, t)
    }
    #[inline]
    fn tick(&mut self, _t: ThreadId) {
        self.tick_root()
    }
    #[inline]
    fn join(&mut self, other: &Self) {
        TreeClock::join(self, other)
    }
    #[inline]
    fn copy(&mut self, other: &Self) {
        self.monotone_copy(other)
    }
    fn publish(&self, v: &mut VectorClock) {
        // Only entries `v` lacks are written.
        let raise: Vec<(u32, u32)> = self.entries().filter(|&(u, c)| v.get(u) < c).collect();
        for (u, c) in raise {
            v.set(u, c);
        }
    }
    fn receive(&mut self, v: &VectorClock) {
        self.join_entries(v.entries())
    }
    fn raise(&mut self, u: ThreadId, c: u32) {
        if self.get(u) < c {
            self.join_entries(std::iter::once((u, c)));
        }
    }
    fn snapshot(&self) -> VectorClock {
        self.entries().collect()
    }
}

/// Clocks of threads, locks and volatile variables, with the HB edge rules.
/// Shared by the `vc`, `epoch` (with [`VectorClock`]) and `treeclock` (with
/// [`TreeClock`]) engines.
#[derive(Clone, Debug)]
pub(crate) struct HbClocks<C = VectorClock> {
    /// One clock per thread id seen (every id below the largest).
    threads: Vec<C>,
    /// Whether the thread has performed any event (join edges need one).
    has_events: Vec<bool>,
    locks: Vec<C>,
    /// Variable id -> index in `vols` (NONE for variables without a
    /// volatile access, READ_ONLY for those no volatile write reached), in
    /// pages freed when their variables are retired.
    vol_row: Paged<u32>,
    /// The clocks of atomics a release reached (a retired one's row keeps
    /// its old clock until the next atomic takes it).
    vols: Rows<Vol>,
    /// Volatile variables seen (read or written).
    vol_count: usize,
    /// Per thread: its clock as a [`VectorClock`], taken at its first
    /// volatile write since its clock last learned of another thread (own
    /// ticks aside), shared by every variable it writes until then.
    snaps: Vec<Option<Arc<VectorClock>>>,
    /// Joins performed (acquire, join, volatile read, fork).
    pub joins: u64,
}

impl<C: HbClock> Default for HbClocks<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: HbClock> HbClocks<C> {
    /// Empty state.
    pub(crate) fn new() -> Self {
        HbClocks {
            threads: Vec::new(),
            has_events: Vec::new(),
            locks: Vec::new(),
            vol_row: Paged::new(NONE),
            vols: Rows::default(),
            vol_count: 0,
            snaps: Vec::new(),
            joins: 0,
        }
    }

    /// Number of threads seen.
    pub(crate) fn num_threads(&self) -> usize {
        self.threads.len()
    }

    /// Number of locks seen.
    pub(crate) fn num_locks(&self) -> usize {
        self.locks.len()
    }

    /// Number of volatile variables seen.
    pub(crate) fn num_volatiles(&self) -> usize {
        self.vol_count
    }

    /// Make sure thread `t` has a clock (own entry 1).
    #[inline(always)]
    pub(crate) fn ensure_thread(&mut self, t: ThreadId) {
        if (t as usize) >= self.threads.len() {
            self.add_threads(t);
        }
    }

    /// Clocks for the threads up to `t` (every event checks, few add).
    #[cold]
    #[inline(never)]
    fn add_threads(&mut self, t: ThreadId) {
        while self.threads.len() <= t as usize {
            let u = self.threads.len() as ThreadId;
            self.threads.push(C::thread(u));
            self.has_events.push(false);
            self.snaps.push(None);
        }
    }

    #[inline]
    fn ensure_lock(&mut self, l: u32) {
        if l as usize >= self.locks.len() {
            self.locks.resize_with(l as usize + 1, C::default);
        }
    }

    /// The row of volatile variable `v` in `vols`, READ_ONLY when no
    /// volatile write reached it yet (NONE before its first access).
    #[inline]
    fn vol(&mut self, v: u32) -> &mut u32 {
        let (row, live) = self.vol_row.slot(v as usize);
        if *row == NONE {
            *row = READ_ONLY;
            *live += 1;
            self.vol_count += 1;
        }
        row
    }

    /// Forgets the volatile variables among `vars`, which no later event
    /// touches: their rows go to new ones (the count of volatile
    /// variables seen stays).
    pub(crate) fn retire(&mut self, vars: &[u32]) {
        for &v in vars {
            if let Some(r) = self.vol_row.retire(v as usize, |&r| r != NONE)
                && r != READ_ONLY
            {
                self.vols.free(r);
            }
        }
    }

    /// Thread `t`'s clock learned something from another thread: its
    /// snapshot no longer describes it.
    #[inline]
    fn learned(&mut self, t: usize) {
        self.snaps[t] = None;
    }

    /// The clock of thread `t` (must have been ensured).
    #[inline]
    pub(crate) fn row(&self, t: ThreadId) -> &C {
        &self.threads[t as usize]
    }

    /// Join `src` (a clock saved earlier) into thread `t`'s clock; used by
    /// relations that add edges to HB (SHB's reads-from edges).
    #[inline]
    pub(crate) fn join_thread(&mut self, t: ThreadId, src: &C) {
        self.threads[t as usize].join(src);
        self.learned(t as usize);
        self.joins += 1;
    }

    /// Advance thread `t`'s own entry: the event just handled starts an edge
    /// out of the thread (e.g. a write another thread may read from).
    #[inline]
    pub(crate) fn tick_thread(&mut self, t: ThreadId) {
        self.threads[t as usize].tick(t);
    }

    /// Account for event `ev` of its thread: ensures the thread's clock and
    /// applies the HB edge rules for synchronization events. For an access
    /// (plain or atomic; the caller checks it against the row afterwards)
    /// returns its stamp, the thread's own entry at the access: a `vr` is
    /// checked after its acquire, and a `vw` is stamped with its clock
    /// before the tick that follows its release, so every event its release
    /// reaches is ordered after its own write.
    #[inline(always)]
    pub(crate) fn event(&mut self, ev: &Event) -> Option<u32> {
        let t = ev.thread as usize;
        self.ensure_thread(ev.thread);
        self.has_events[t] = true;
        // Relaxed atomics synchronize nothing. Accesses are most events:
        // their path is inlined into the detectors, the rest is a call.
        if matches!(
            ev.op,
            Op::Read | Op::Write | Op::AtomicRead | Op::AtomicWrite
        ) {
            return Some(self.threads[t].get(ev.thread));
        }
        self.sync_event(ev)
    }

    /// [`HbClocks::event`] of an event that is not a plain or relaxed access.
    #[inline(never)]
    fn sync_event(&mut self, ev: &Event) -> Option<u32> {
        let t = ev.thread as usize;
        match ev.op {
            Op::Read | Op::Write | Op::AtomicRead | Op::AtomicWrite => {
                return Some(self.threads[t].get(ev.thread));
            }
            Op::Acquire => {
                self.ensure_lock(ev.target);
                self.threads[t].join(&self.locks[ev.target as usize]);
                self.learned(t);
                self.joins += 1;
            }
            Op::Release => {
                self.ensure_lock(ev.target);
                self.locks[ev.target as usize].copy(&self.threads[t]);
                self.threads[t].tick(ev.thread);
            }
            Op::Fork => {
                self.ensure_thread(ev.target);
                let u = ev.target as usize;
                if u != t {
                    let (src, dst) = two(&mut self.threads, t, u);
                    dst.join(src);
                    self.learned(u);
                    self.joins += 1;
                }
                self.threads[t].tick(ev.thread);
            }
            Op::Join => {
                let u = ev.target as usize;
                if u != t && self.has_events.get(u).copied().unwrap_or(false) {
                    let (src, dst) = two(&mut self.threads, u, t);
                    dst.join(src);
                    self.learned(t);
                    self.joins += 1;
                }
            }
            Op::VolatileWrite => {
                let stamp = self.threads[t].get(ev.thread);
                self.volatile_write(ev.target, ev.thread, stamp);
                self.threads[t].tick(ev.thread);
                return Some(stamp);
            }
            Op::VolatileRead => {
                let r = *self.vol(ev.target);
                // A variable no volatile write reached carries nothing.
                if r != READ_ONLY {
                    match &self.vols[r as usize] {
                        Vol::Published(p) => {
                            // What this thread published (an older clock of
                            // its own) teaches it nothing.
                            if p.thread != ev.thread {
                                self.threads[t].receive(&p.base);
                                self.threads[t].raise(p.thread, p.own);
                                self.learned(t);
                            }
                        }
                        Vol::Full(v) => {
                            self.threads[t].receive(v);
                            self.learned(t);
                        }
                    }
                    self.joins += 1;
                }
                return Some(self.threads[t].get(ev.thread));
            }
            Op::ReentrantAcquire | Op::ReentrantRelease | Op::Request => {}
        }
        None
    }

    /// `v ⊔= C_t` for a volatile write of thread `t` at own entry `stamp`
    /// (before its tick). A variable that only thread `t` wrote holds `C_t`
    /// itself, as t's snapshot (shared with every variable t wrote since it
    /// last learned something) and `stamp`: t's own later ticks leave the
    /// snapshot valid, so a thread that releases into thousands of atomics
    /// without acquiring in between costs one clock, not one per atomic.
    fn volatile_write(&mut self, var: u32, t: ThreadId, stamp: u32) {
        let ti = t as usize;
        let threads = &self.threads;
        let mine = Vol::Published(Published::of(&mut self.snaps[ti], t, stamp, || {
            threads[ti].snapshot()
        }));
        let row = *self.vol(var);
        if row == READ_ONLY {
            // A retired atomic's row, or a new one.
            let r = self.vols.put(mine);
            *self.vol_row.slot(var as usize).0 = r;
            return;
        }
        let row = row as usize;
        let slot = &mut self.vols[row];
        match slot {
            // An older clock of t's, below its clock now.
            Vol::Published(p) if p.thread == t => *slot = mine,
            Vol::Published(p) => {
                let mut v = p.to_clock();
                self.threads[ti].publish(&mut v);
                *slot = Vol::Full(Box::new(v));
            }
            Vol::Full(v) => self.threads[ti].publish(v),
        }
    }
}

/// Variables of [`HbClocks::vol_row`] that no volatile write reached.
const READ_ONLY: u32 = u32::MAX - 1;

/// A volatile variable's clock (16 bytes: one per atomic a release reached,
/// millions in C++ programs; most of them written by one thread).
#[derive(Clone, Debug)]
enum Vol {
    /// Written by one thread only: its clock at its latest write.
    Published(Published),
    /// The join of several threads' clocks.
    Full(Box<VectorClock>),
}

/// Elements `a` (shared) and `b` (mutable) of a slice; `a != b`.
#[inline]
fn two<T>(m: &mut [T], a: usize, b: usize) -> (&T, &mut T) {
    if a < b {
        let (lo, hi) = m.split_at_mut(b);
        (&lo[a], &mut hi[0])
    } else {
        let (lo, hi) = m.split_at_mut(a);
        (&hi[0], &mut lo[b])
    }
}

/// Streaming clock-based HB detector: `--relation hb --engine vc` with
/// [`VectorClock`]s ([`VcDetector`]), `--engine treeclock` with
/// [`TreeClock`]s ([`TcDetector`]). Same racy events and witnesses.
pub struct ClockDetector<C> {
    clocks: HbClocks<C>,
    pub(crate) history: AccessHistory,
    pub(crate) report: Report,
}

/// The `vc` engine: DJIT+ with vector clocks.
pub type VcDetector = ClockDetector<VectorClock>;
/// The `treeclock` engine: DJIT+ with tree clocks.
pub type TcDetector = ClockDetector<TreeClock>;

impl VcDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        ClockDetector::with_engine(Engine::Vc, window)
    }
}

impl TcDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        ClockDetector::with_engine(Engine::TreeClock, window)
    }
}

impl<C: HbClock> ClockDetector<C> {
    fn with_engine(engine: Engine, window: Option<u64>) -> Self {
        ClockDetector {
            clocks: HbClocks::new(),
            history: AccessHistory::new(window),
            report: Report::new(Relation::Hb, engine, window, 0),
        }
    }

    /// Forgets variables no later event touches (see
    /// [`crate::engine::detector::Detector::retire`]).
    pub fn retire(&mut self, vars: &[u32]) {
        self.history.retire(vars);
        self.clocks.retire(vars);
    }

    /// Feed the next event.
    #[inline]
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        if let Some(clock) = self.clocks.event(ev) {
            let row = self.clocks.row(ev.thread);
            let race = self.history.access(id, ev, clock, |u, c| row.get(u) >= c);
            if let Some(r) = race {
                self.report.push(r);
            }
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let c = &self.clocks;
        self.report
            .stats
            .insert("threads".into(), json!(c.num_threads()));
        self.report
            .stats
            .insert("locks".into(), json!(c.num_locks()));
        self.report
            .stats
            .insert("volatiles".into(), json!(c.num_volatiles()));
        self.report
            .stats
            .insert("clock_joins".into(), json!(c.joins));
        self.report.normalize();
        let report = std::mem::take(&mut self.report);
        crate::alloc::drop_later(self, report.events > crate::alloc::BIG);
        report
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_atomic_clock_is_two_words() {
        // One per atomic variable a release reached (millions in C++
        // programs): 48 bytes each while the clocks were inline.
        assert_eq!(std::mem::size_of::<super::Vol>(), 16);
    }
}
