//! Happens-before tests between arbitrary events and HB paths a person can
//! check by hand, from the HB vector clocks stored at sync points.
//!
//! Every inter-thread HB edge (release -> later acquire, fork, join, volatile
//! write -> read of another thread) starts and ends at a sync point, so the
//! HB clock of any event is the clock of the latest sync point of its thread
//! at or before it, and `x <=HB y` iff `x == y`, or x precedes y in the same
//! thread, or `V(y)[thread(x)] >= local(x)`.

use rustc_hash::FxHashMap;

use super::{Kind, Step};
use crate::engine::sync::{SyncPoints, VolatileOrder};
use crate::facts::Facts;
use crate::trace::{EventId, Op, Trace};

/// HB tests and paths over one trace.
pub(crate) struct HbIndex<'s> {
    /// Sync points and their HB clocks.
    pub sync: &'s SyncPoints,
    /// Events of each thread in order (a thread's local index is position + 1).
    thread_events: Vec<Vec<EventId>>,
    /// Sync slots of each thread in order.
    thread_slots: Vec<Vec<u32>>,
    /// Release events of each lock in order (re-entrant ones excluded).
    lock_releases: Vec<Vec<EventId>>,
    /// Volatile writes per (variable, thread), in order.
    volatile_writes: FxHashMap<(u32, u32), Vec<EventId>>,
    /// Volatile accesses per (variable, thread), in order (HBv only).
    volatile_accesses: FxHashMap<(u32, u32), Vec<EventId>>,
    /// Fork event of each forked thread's first event.
    fork_into: FxHashMap<EventId, EventId>,
    /// Last event of the joined thread, per join event.
    join_from: FxHashMap<EventId, EventId>,
    /// SHB only: the write each data read reads from, when another thread
    /// made it (the reads-from edges SHB adds to HB). Empty for HB.
    reads_from: FxHashMap<EventId, EventId>,
}

impl<'s> HbIndex<'s> {
    /// Index `trace` whose sync points (with HB clocks) are `sync`.
    pub(crate) fn new(trace: &Trace, facts: &Facts, sync: &'s SyncPoints) -> HbIndex<'s> {
        let mut thread_events = vec![Vec::new(); trace.num_threads()];
        let mut lock_releases = vec![Vec::new(); trace.num_locks()];
        let mut volatile_writes: FxHashMap<(u32, u32), Vec<EventId>> = FxHashMap::default();
        let mut volatile_accesses: FxHashMap<(u32, u32), Vec<EventId>> = FxHashMap::default();
        let hbv = sync.order == VolatileOrder::Conflicting;
        for (i, ev) in trace.events.iter().enumerate() {
            let i = i as EventId;
            thread_events[ev.thread as usize].push(i);
            if hbv && matches!(ev.op, Op::VolatileRead | Op::VolatileWrite) {
                volatile_accesses
                    .entry((ev.target, ev.thread))
                    .or_default()
                    .push(i);
            }
            match ev.op {
                Op::Release => lock_releases[ev.target as usize].push(i),
                Op::VolatileWrite => volatile_writes
                    .entry((ev.target, ev.thread))
                    .or_default()
                    .push(i),
                _ => {}
            }
        }
        let mut thread_slots = vec![Vec::new(); trace.num_threads()];
        for s in 0..sync.len() {
            thread_slots[sync.thread[s] as usize].push(s as u32);
        }
        HbIndex {
            sync,
            thread_events,
            thread_slots,
            lock_releases,
            volatile_writes,
            volatile_accesses,
            fork_into: facts.fork_edges.iter().map(|&(f, c)| (c, f)).collect(),
            join_from: facts.join_edges.iter().map(|&(l, j)| (j, l)).collect(),
            reads_from: FxHashMap::default(),
        }
    }

    /// The index of SHB instead of HB: `sync`'s clocks must follow the
    /// reads-from `edges` `(write, read)` too (see [`crate::tools::query::hb::HbQuery::shb`]),
    /// and paths may take them.
    pub(crate) fn with_reads_from(mut self, edges: &[(EventId, EventId)]) -> HbIndex<'s> {
        self.reads_from = edges.iter().map(|&(w, r)| (r, w)).collect();
        self
    }

    /// 1-based position of event `e` (of thread `t`) within its thread.
    pub(crate) fn local(&self, t: u32, e: EventId) -> u32 {
        self.thread_events[t as usize].partition_point(|&x| x <= e) as u32
    }

    /// The HB clock of event `e` of thread `t`, except its own component: the
    /// clock of the thread's latest sync point at or before `e` (None: no
    /// sync point yet, so nothing of another thread happens before `e`).
    fn clock_at(&self, t: u32, e: EventId) -> Option<&crate::engine::clock::VectorClock> {
        let slots = &self.thread_slots[t as usize];
        let p = slots.partition_point(|&s| self.sync.event(s) <= e);
        (p > 0).then(|| self.sync.clock(slots[p - 1]))
    }

    /// `x <=HB y` (reflexive) for any events.
    pub(crate) fn leq(&self, trace: &Trace, x: EventId, y: EventId) -> bool {
        if x == y {
            return true;
        }
        if x > y {
            return false;
        }
        let (tx, ty) = (
            trace.events[x as usize].thread,
            trace.events[y as usize].thread,
        );
        if tx == ty {
            return true;
        }
        self.clock_at(ty, y)
            .is_some_and(|c| c.get(tx) >= self.local(tx, x))
    }

    /// The latest event of thread `t` that happens before (or is) event `y`.
    pub(crate) fn latest_before(&self, trace: &Trace, t: u32, y: EventId) -> Option<EventId> {
        let ty = trace.events[y as usize].thread;
        let events = &self.thread_events[t as usize];
        if t == ty {
            let p = events.partition_point(|&e| e <= y);
            return (p > 0).then(|| events[p - 1]);
        }
        let l = self.clock_at(ty, y).map_or(0, |c| c.get(t));
        (l > 0).then(|| events[l as usize - 1])
    }

    /// The generating HB edges into sync event `e` from other threads.
    fn in_edges(&self, trace: &Trace, e: EventId) -> Vec<(EventId, Kind)> {
        let ev = trace.events[e as usize];
        let mut out = Vec::new();
        if let Some(&f) = self.fork_into.get(&e) {
            out.push((f, Kind::Fork));
        }
        match ev.op {
            Op::Acquire => {
                let rels = &self.lock_releases[ev.target as usize];
                let p = rels.partition_point(|&r| r < e);
                if p > 0 && trace.events[rels[p - 1] as usize].thread != ev.thread {
                    out.push((rels[p - 1], Kind::ReleaseAcquire { dropped: None }));
                }
            }
            Op::Join => {
                if let Some(&l) = self.join_from.get(&e) {
                    out.push((l, Kind::Join));
                }
            }
            Op::Read => {
                if let Some(&w) = self.reads_from.get(&e) {
                    out.push((w, Kind::ReadsFrom));
                }
            }
            // Per other thread, its latest earlier volatile access the edge
            // can come from: a write into a read; any access into a write
            // (HBv only; the map is empty for HB).
            Op::VolatileRead | Op::VolatileWrite => {
                let sources = if ev.op == Op::VolatileRead {
                    &self.volatile_writes
                } else {
                    &self.volatile_accesses
                };
                for t in 0..self.thread_events.len() as u32 {
                    if t == ev.thread {
                        continue;
                    }
                    if let Some(ws) = sources.get(&(ev.target, t)) {
                        let p = ws.partition_point(|&w| w < e);
                        if p > 0 {
                            out.push((ws[p - 1], Kind::Volatile));
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// A path of generating HB edges from `x` to `y` (program-order runs
    /// collapsed into one `po` step), or None when `x` is not HB-before `y`.
    /// Empty when `x == y`.
    pub(crate) fn path(&self, trace: &Trace, x: EventId, y: EventId) -> Option<Vec<Step>> {
        if !self.leq(trace, x, y) {
            return None;
        }
        let tx = trace.events[x as usize].thread;
        let mut rev: Vec<Step> = Vec::new();
        let mut cur = y;
        loop {
            let tc = trace.events[cur as usize].thread;
            if tc == tx {
                if x != cur {
                    rev.push(Step::new(x, cur, Kind::Po));
                }
                break;
            }
            // The earliest sync point of cur's thread, at or before cur, that x
            // happens before: x's knowledge entered the thread through one of
            // its inter-thread edges (the set is a suffix of the thread).
            let slots = &self.thread_slots[tc as usize];
            let upto = slots.partition_point(|&s| self.sync.event(s) <= cur);
            let lx = self.local(tx, x);
            let k = slots[..upto].partition_point(|&s| self.sync.clock(s).get(tx) < lx);
            let s = *slots[..upto].get(k)?;
            let se = self.sync.event(s);
            if se != cur {
                rev.push(Step::new(se, cur, Kind::Po));
            }
            let (p, kind) = self
                .in_edges(trace, se)
                .into_iter()
                .find(|&(p, _)| self.leq(trace, x, p))?;
            rev.push(Step::new(p, se, kind));
            cur = p;
        }
        rev.reverse();
        Some(rev)
    }
}
