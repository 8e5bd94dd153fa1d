//! Synchronization points and their HB vector clocks.
//!
//! The CP fixpoint only ever relates synchronization events: acquires, releases,
//! forks, joins, volatile accesses, the first and last events of forked/joined
//! threads (ends of fork/join edges) and the last event of critical sections
//! never released. One streaming HB pass stores the vector clock of each such
//! point, so any HB test between them is O(1): `x <=HB y` iff
//! `V(y)[thread(x)] >= local(x)`.

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
    /// write and write -> write). Together: every conflicting pair of volatile
    /// accesses, in trace order.
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
    /// HB clocks (HBv clocks under [`VolatileOrder::Conflicting`]),
    /// `nthreads` entries per slot.
    pub hb: Vec<u32>,
    /// The volatile edges `hb` follows.
    pub order: VolatileOrder,
}

impl SyncPoints {
    /// Collect the points of `trace` (plus `extra` events, e.g. ordered races)
    /// and compute their HB clocks in one pass.
    pub fn new(trace: &Trace, facts: &Facts, extra: &[EventId]) -> SyncPoints {
        Self::with_order(trace, facts, extra, VolatileOrder::WriteRead)
    }

    /// [`SyncPoints::new`] with clocks following the volatile edges of `order`.
    pub fn with_order(
        trace: &Trace,
        facts: &Facts,
        extra: &[EventId],
        order: VolatileOrder,
    ) -> SyncPoints {
        let n = trace.len();
        let mut is_point = vec![false; n];
        for (i, ev) in trace.events.iter().enumerate() {
            if matches!(
                ev.op,
                Op::Acquire
                    | Op::Release
                    | Op::Fork
                    | Op::Join
                    | Op::VolatileRead
                    | Op::VolatileWrite
            ) {
                is_point[i] = true;
            }
        }
        for &(f, c) in facts.fork_edges.iter().chain(&facts.join_edges) {
            is_point[f as usize] = true;
            is_point[c as usize] = true;
        }
        for cs in &facts.critical_sections {
            is_point[cs.end as usize] = true;
        }
        for &e in extra {
            is_point[e as usize] = true;
        }
        let nt = trace.num_threads();
        let count = is_point.iter().filter(|&&b| b).count();
        let mut sp = SyncPoints {
            events: Vec::with_capacity(count),
            thread: Vec::with_capacity(count),
            local: Vec::with_capacity(count),
            nthreads: nt,
            hb: Vec::with_capacity(count * nt),
            order,
        };
        let mut hb = Clocks::with_order(trace, true, order);
        for (i, ev) in trace.events.iter().enumerate() {
            let (clock, local) = hb.step(ev, |_| {});
            if is_point[i] {
                sp.events.push(i as EventId);
                sp.thread.push(ev.thread);
                sp.local.push(local);
                sp.hb.extend_from_slice(clock);
            }
        }
        sp
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
    pub fn clock(&self, s: u32) -> &[u32] {
        let w = self.nthreads;
        &self.hb[s as usize * w..(s as usize + 1) * w]
    }

    /// `x <=HB y` (reflexive) for slots.
    #[inline]
    pub fn hb_leq(&self, x: u32, y: u32) -> bool {
        self.hb[y as usize * self.nthreads + self.thread[x as usize] as usize]
            >= self.local[x as usize]
    }

    /// Event id of slot `s`.
    #[inline]
    pub fn event(&self, s: u32) -> EventId {
        self.events[s as usize]
    }
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
pub struct Clocks {
    nt: usize,
    reflexive: bool,
    threads: Vec<u32>,
    locks: Vec<u32>,
    volatile_writes: Vec<u32>,
    /// Per variable, the join of every volatile access so far (only under
    /// [`VolatileOrder::Conflicting`]; empty otherwise).
    volatile_accesses: Vec<u32>,
    fork_pending: Vec<Option<Vec<u32>>>,
    local: Vec<u32>,
}

impl Clocks {
    /// Clocks for `trace` (HB: volatile write -> later read only).
    pub fn new(trace: &Trace, reflexive: bool) -> Clocks {
        Self::with_order(trace, reflexive, VolatileOrder::WriteRead)
    }

    /// Clocks for `trace` following the volatile edges of `order`.
    pub fn with_order(trace: &Trace, reflexive: bool, order: VolatileOrder) -> Clocks {
        let nt = trace.num_threads();
        let conflicting = order == VolatileOrder::Conflicting;
        Clocks {
            nt,
            reflexive,
            threads: vec![0; nt * nt],
            locks: vec![0; trace.num_locks() * nt],
            volatile_writes: vec![0; trace.num_vars() * nt],
            volatile_accesses: if conflicting {
                vec![0; trace.num_vars() * nt]
            } else {
                Vec::new()
            },
            fork_pending: vec![None; nt],
            local: vec![0; nt],
        }
    }

    /// Process the next event; `inject` may join more into the thread's clock
    /// before the event's own edges apply. Returns the clock after the event
    /// and the event's local (1-based) index.
    pub fn step(
        &mut self,
        ev: &crate::trace::Event,
        inject: impl FnOnce(&mut [u32]),
    ) -> (&[u32], u32) {
        let nt = self.nt;
        let t = ev.thread as usize;
        self.local[t] += 1;
        let local = self.local[t];
        let (lo, hi) = (t * nt, (t + 1) * nt);
        // A thread's first event receives its fork's clock.
        if local == 1
            && let Some(p) = self.fork_pending[t].take()
        {
            join_into(&mut self.threads[lo..hi], &p);
        }
        if self.reflexive {
            self.threads[lo + t] = local;
        }
        inject(&mut self.threads[lo..hi]);
        let tg = ev.target as usize;
        match ev.op {
            Op::Acquire => join_into(
                &mut self.threads[lo..hi],
                &self.locks[tg * nt..(tg + 1) * nt],
            ),
            Op::Release => {
                self.locks[tg * nt..(tg + 1) * nt].copy_from_slice(&self.threads[lo..hi])
            }
            Op::Fork => self.fork_pending[tg] = Some(self.threads[lo..hi].to_vec()),
            Op::Join => {
                let child: Vec<u32> = self.threads[tg * nt..(tg + 1) * nt].to_vec();
                join_into(&mut self.threads[lo..hi], &child);
            }
            // Joining a thread's own earlier accesses is harmless here: they
            // are program-order-before, so already in the clock.
            Op::VolatileWrite => {
                let me = &mut self.threads[lo..hi];
                if !self.volatile_accesses.is_empty() {
                    let all = &mut self.volatile_accesses[tg * nt..(tg + 1) * nt];
                    join_into(me, all);
                    join_into(all, me);
                }
                join_into(&mut self.volatile_writes[tg * nt..(tg + 1) * nt], me);
            }
            Op::VolatileRead => {
                let me = &mut self.threads[lo..hi];
                join_into(me, &self.volatile_writes[tg * nt..(tg + 1) * nt]);
                if !self.volatile_accesses.is_empty() {
                    join_into(&mut self.volatile_accesses[tg * nt..(tg + 1) * nt], me);
                }
            }
            _ => {}
        }
        (&self.threads[lo..hi], local)
    }
}

/// Pointwise maximum of `dst` and `src` into `dst`.
#[inline]
pub fn join_into(dst: &mut [u32], src: &[u32]) {
    for (a, &b) in dst.iter_mut().zip(src) {
        if b > *a {
            *a = b;
        }
    }
}
