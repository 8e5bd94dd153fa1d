//! The CP fixpoint's inputs: critical sections over sync slots and the seed
//! base edges that need no fixpoint (rule (a), hard edges, the window rule).
//!
//! A base edge `(r, a)` is a release->acquire pair from rules (a)/(b), or a hard
//! edge (fork, join, or two synchronizing atomic accesses of one variable by
//! different threads, at least one a write: vw -> vr, vr -> vw, vw -> vw, in
//! trace order; relaxed ar/aw give none). CP composes with HBv, HB plus those
//! volatile edges (docs/src/semantic-decisions.md, "Semantic decisions"), so every "HB" below is
//! HBv and the sync clocks are HBv clocks. CP is then exactly
//! `{(x, y) : some base (r, a) with x <=HBv r and a <=HBv y}` plus, under a
//! window K, the conservative pairs `x <=HBv y` with `y - x >= K`. Consequences
//! used throughout:
//! - Under a window, a base edge with `a - r >= K` and `r <=HBv a` is redundant:
//!   every pair it orders is at least K apart, HBv-ordered, and so already
//!   ordered by the window rule. So only such edges spanning less than K are
//!   kept, which makes the fixpoint linear. (Every base edge but an
//!   `--order-races` one is HBv-ordered; those are kept whatever their span.)
//! - For a fixed CS2 on lock l, the CS1 satisfying rule (a) or (b) form a prefix
//!   of l's critical sections in trace order (earlier sections are HB-before
//!   later ones on the same lock), and the edge from the latest one implies all
//!   the others by composition. So each CS2 needs one dominant edge.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::engine::sync::{Carried, NONE, SyncPoints, VolatileOrder};
use crate::facts::Facts;
use crate::trace::{EventId, Op, Trace};

/// A stretch of a longer trace, as the streaming engine hands it over (see
/// [`super::stream`]): besides the events, what came before them.
pub(crate) struct Stretch<'a> {
    /// Where the stretch's events sit in the whole trace, the replayed
    /// acquires of sections open where it begins, and the clocks there.
    pub carried: &'a Carried,
    /// The accesses of each pinned section before the stretch: `(pinned
    /// index, variable, kinds)` ([`access_kind`] bits).
    pub summaries: &'a [(u32, u32, u8)],
    /// Base edges derived from earlier stretches, `(target, source, rule)` as
    /// event ids in the whole trace (both ends events of this stretch).
    pub edges: &'a [(EventId, EventId, Rule)],
}

/// A critical section in slot terms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Section {
    /// Lock id.
    pub lock: u32,
    /// Owning thread.
    pub thread: u32,
    /// Slot of the acquire.
    pub acq: u32,
    /// Slot of the release (NONE when never released).
    pub rel: u32,
    /// Slot of the last event (the release, or the thread's last event).
    pub end: u32,
    /// Position among the lock's sections, in trace order.
    pub pos: u32,
}

/// Why a base edge exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Rule {
    /// Rule (a): the sections hold conflicting accesses.
    A,
    /// Rule (b): the sections hold CP-ordered events.
    B,
    /// Rule (b) through the window's conservative closure (CS1's acquire is
    /// K or more events before CS2's end, and HB-ordered with it).
    Window,
    /// Fork, join or two conflicting volatile accesses: an explicit CP edge.
    Hard,
}

/// Everything the fixpoint needs.
pub(crate) struct CpInput {
    /// Sync points and HB clocks.
    pub sync: SyncPoints,
    /// Critical sections, ordered by acquire.
    pub sections: Vec<Section>,
    /// Section ids of each lock, in trace order.
    pub by_lock: Vec<Vec<u32>>,
    /// Per lock, per position: the event id of the section's end (increasing).
    pub lock_end_event: Vec<Vec<u32>>,
    /// Per lock, per position: the slot of the section's end.
    pub lock_end_slot: Vec<Vec<u32>>,
    /// With few threads (at most [`DENSE_THREADS`]), per lock, the HBv clocks
    /// of the sections' ends as dense rows (`position * nthreads + thread`):
    /// the rule (b) join tests `a <=HB end` along a lock's sections, and a
    /// shared clock per test was a cache miss each (most of the join's time
    /// on many locks).
    pub lock_end_hb: Option<Vec<Vec<u32>>>,
    /// Per lock, per position: thread and local index of the section's acquire.
    pub lock_acq: Vec<Vec<(u32, u32)>>,
    /// Seed base edges `(a, r)` (target slot, source slot) with their rule.
    pub seeds: Vec<(u32, u32, Rule)>,
    /// The window K (None: exact CP, also for a K at least the trace length).
    pub window: Option<u64>,
    /// Rule (b) edges `(a, r)` an earlier stretch derived (streaming only):
    /// the fixpoint starts from them, and they keep rule (b) as their rule
    /// unless a seed of this stretch gives them another, as in the
    /// whole-trace engine, where the seeds come first.
    pub derived: Vec<(u32, u32)>,
    /// Ordered races (`--order-races`) as `(target, source)` slots, sorted:
    /// edges of the order CP composes with, so CP clocks flow along them.
    pub extra_edges: Vec<(u32, u32)>,
}

/// An access as one bit for rule (a): write, read (0 for other events),
/// atomic or not.
pub(crate) fn access_kind(op: Op) -> u8 {
    match op {
        Op::Write | Op::VolatileWrite | Op::AtomicWrite => 1,
        Op::Read | Op::VolatileRead | Op::AtomicRead => 2,
        _ => 0,
    }
}

/// The [`access_kind`] bits an access of kind bit `k` conflicts with for
/// rule (a) (another thread, same variable): a write with every access, a
/// read with writes. Atomic accesses count like plain ones here, although
/// two of them never race: reordering an atomic read before the write it
/// read from changes what it saw (a relaxed load under a lock reading a
/// release store made under that lock: double-checked locking's slow path).
/// Bytes are not looked at, as in WCP and the reference rules: more
/// conflicts only add edges, each between two sections of one lock, so no
/// HB race is lost.
const CONFLICTS: [u8; 2] = [0b11, 0b01];

/// Sort `(section, variable, kinds)` accesses and keep one per section and
/// variable, with the union of its [`access_kind`] bits.
pub(crate) fn merge_accesses(acc: &mut Vec<(u32, u32, u8)>) {
    acc.sort_unstable();
    acc.dedup_by(|next, prev| {
        next.0 == prev.0 && next.1 == prev.1 && {
            prev.2 |= next.2;
            true
        }
    });
}

/// Two lists [`merge_accesses`] made, as one: sorted, one entry per
/// section and variable with the union of its kinds.
pub(crate) fn merge_sorted_accesses(
    a: Vec<(u32, u32, u8)>,
    b: Vec<(u32, u32, u8)>,
) -> Vec<(u32, u32, u8)> {
    if b.is_empty() {
        return a;
    }
    if a.is_empty() {
        return b;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if (x.0, x.1) == (y.0, y.1) => {
                let k = y.2;
                b.next();
                a.next().map(|(c, v, w)| (c, v, w | k))
            }
            (Some(x), Some(y)) if (x.0, x.1) < (y.0, y.1) => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
}

/// Up to this many threads the rule (b) join reads section ends' clocks from
/// dense per-lock rows ([`CpInput::lock_end_hb`]).
pub(crate) const DENSE_THREADS: usize = 64;

/// The window that decides the same as `window` on a trace of `len` events:
/// a K of at least the trace length separates no two events by K or more, so
/// it is no window (and no arithmetic below ever adds a huge K to an event).
pub(crate) fn effective_window(window: Option<u64>, len: usize) -> Option<u64> {
    window.filter(|&k| k < len as u64)
}

/// Per atomic variable and thread, the sources of its edges: the latest
/// volatile write and access (`HardEdge`), and the latest atomic write and
/// access with whether each was relaxed (`RelaxedEdge`), kept apart only
/// from the variable's first relaxed access on (before it they are the same).
/// Only the threads that accessed the variable have an entry: a table per
/// thread cost 8 bytes a thread an atomic (776 with BS::thread_pool's 97
/// threads, for millions of atomics each touched by one or two).
#[derive(Default)]
struct Latest {
    /// (thread, write, access).
    volatile: SmallVec<[(u32, u32, u32); 2]>,
    /// (thread, [write, access]), each with whether it was relaxed.
    atomic: Option<Vec<(u32, [Source; 2])>>,
}

/// A sync point and whether its access was relaxed.
type Source = (u32, bool);

/// The entry of thread `t` in `list` (keyed by its first field), made with
/// `empty` if it has none.
fn entry_of<T>(
    list: &mut (impl AsMut<[T]> + Extend<T>),
    t: u32,
    key: impl Fn(&T) -> u32,
    empty: T,
) -> &mut T {
    let i = match list.as_mut().iter().position(|e| key(e) == t) {
        Some(i) => i,
        None => {
            list.extend([empty]);
            list.as_mut().len() - 1
        }
    };
    &mut list.as_mut()[i]
}

impl CpInput {
    /// Build the inputs; `extra_hard` are additional hard edges given as event
    /// pairs (used by `--order-races`).
    pub(crate) fn new(trace: &Trace, window: Option<u64>, extra_hard: &[(u32, u32)]) -> CpInput {
        Self::build(
            trace,
            effective_window(window, trace.len()),
            extra_hard,
            None,
        )
    }

    /// The inputs of a stretch of a longer trace under window `k`: its events
    /// are `trace`'s, its ids and clocks come from `stretch`, and the edges
    /// earlier stretches derived are seeds.
    pub(crate) fn stretch(trace: &Trace, k: u64, stretch: &Stretch<'_>) -> CpInput {
        Self::build(trace, Some(k), &[], Some(stretch))
    }

    fn build(
        trace: &Trace,
        window: Option<u64>,
        extra_hard: &[(u32, u32)],
        stretch: Option<&Stretch<'_>>,
    ) -> CpInput {
        let mut facts = Facts::without_boundary_index(trace);
        // Ordered races are hard edges: CP composes with HBv plus them (the
        // paper's restricted trace), or CP would lose transitivity through them.
        let sync = match stretch {
            Some(s) => {
                facts.map_ids(|e| s.carried.id(e as usize));
                SyncPoints::carried(trace, &facts, s.carried)
            }
            None => SyncPoints::with_order(trace, &facts, extra_hard, VolatileOrder::Conflicting),
        };
        let slot = |e: u32| sync.slot(e).expect("boundary events are sync points");
        let mut by_lock: Vec<Vec<u32>> = vec![Vec::new(); trace.num_locks()];
        let sections: Vec<Section> = facts
            .critical_sections
            .iter()
            .enumerate()
            .map(|(i, cs)| {
                let list = &mut by_lock[cs.lock as usize];
                let pos = list.len() as u32;
                list.push(i as u32);
                Section {
                    lock: cs.lock,
                    thread: cs.thread,
                    acq: slot(cs.acq),
                    rel: cs.rel.map_or(NONE, slot),
                    end: slot(cs.end),
                    pos,
                }
            })
            .collect();
        // Flat per-lock views: the fixpoint's binary searches run over these.
        let view = |f: &dyn Fn(&Section) -> u32| -> Vec<Vec<u32>> {
            by_lock
                .iter()
                .map(|l| l.iter().map(|&c| f(&sections[c as usize])).collect())
                .collect()
        };
        let lock_end_event = view(&|s| sync.event(s.end));
        let lock_end_slot = view(&|s| s.end);
        let nt = sync.nthreads;
        let lock_end_hb = (nt <= DENSE_THREADS).then(|| {
            lock_end_slot
                .iter()
                .map(|ends| {
                    let mut rows = vec![0u32; ends.len() * nt];
                    for (row, &e) in rows.chunks_exact_mut(nt.max(1)).zip(ends) {
                        sync.clock(e).write_dense(row);
                    }
                    rows
                })
                .collect()
        });
        let lock_acq = by_lock
            .iter()
            .map(|l| {
                l.iter()
                    .map(|&c| {
                        let a = sections[c as usize].acq as usize;
                        (sync.thread[a], sync.local[a])
                    })
                    .collect()
            })
            .collect();
        let mut input = CpInput {
            lock_end_event,
            lock_end_slot,
            lock_end_hb,
            lock_acq,
            sync,
            sections,
            by_lock,
            seeds: Vec::new(),
            window,
            derived: Vec::new(),
            extra_edges: Vec::new(),
        };
        let slot = |e: u32| input.sync.slot(e).expect("ordered races are sync points");
        let mut extra_edges: Vec<(u32, u32)> = extra_hard
            .iter()
            .map(|&(a, b)| (slot(b), slot(a)))
            .collect();
        extra_edges.sort_unstable();
        input.extra_edges = extra_edges;
        let id = |i: usize| stretch.map_or(i as EventId, |s| s.carried.id(i));
        input.seed_rule_a(trace, stretch.map_or(&[][..], |s| s.summaries));
        input.seed_hard(trace, &facts, extra_hard, id);
        input.seed_window();
        if let Some(s) = stretch {
            for &(a, r, rule) in s.edges {
                if let (Some(a), Some(r)) = (input.sync.slot(a), input.sync.slot(r)) {
                    if rule == Rule::B {
                        input.derived.push((a, r));
                    } else {
                        input.seeds.push((a, r, rule));
                    }
                }
            }
        }
        input
    }

    /// True when a base edge from slot `r` to slot `a` can matter under the window.
    #[inline]
    pub(crate) fn within(&self, r: u32, a: u32) -> bool {
        self.window
            .is_none_or(|k| ((self.sync.event(a) - self.sync.event(r)) as u64) < k)
    }

    /// Rule (a): for each CS2, the latest earlier CS1 on the same lock, of
    /// another thread, holding an access that conflicts with one in CS2.
    /// `before` adds accesses of the first sections from before the trace
    /// (a stretch's pinned sections).
    fn seed_rule_a(&mut self, trace: &Trace, before: &[(u32, u32, u8)]) {
        // Each thread's accesses made inside some section, once each, and
        // per section the stretch of its thread's list it spans: nested
        // sections share the entries (one per access, not one per access and
        // enclosing section, so memory stays linear however deep the nesting).
        let nt = trace.num_threads();
        let mut log: Vec<Vec<(u32, u8)>> = vec![Vec::new(); nt];
        // (NONE, _): not acquired in this trace (only `before` has its accesses).
        let mut span: Vec<(u32, u32)> = vec![(NONE, NONE); self.sections.len()];
        let mut open: Vec<Vec<u32>> = vec![Vec::new(); nt];
        let mut next_cs = 0usize;
        for ev in &trace.events {
            let t = ev.thread as usize;
            let o = &mut open[t];
            match ev.op {
                Op::Acquire => {
                    span[next_cs].0 = log[t].len() as u32;
                    o.push(next_cs as u32);
                    next_cs += 1;
                }
                Op::Release => {
                    if let Some(p) = o
                        .iter()
                        .rposition(|&c| self.sections[c as usize].lock == ev.target)
                    {
                        span[o.remove(p) as usize].1 = log[t].len() as u32;
                    }
                }
                op if op.is_memory() && !o.is_empty() => {
                    log[t].push((ev.target, access_kind(op)));
                }
                _ => {}
            }
        }
        // Accesses of the first sections from before the trace, by section.
        let mut before = before.to_vec();
        before.sort_unstable_by_key(|a| a.0);
        let accesses_of = |c: u32| {
            let s = self.sections[c as usize];
            let (from, to) = span[c as usize];
            let list = &log[s.thread as usize];
            let (from, to) = match (from, to) {
                (NONE, _) => (0, 0),
                (f, NONE) => (f as usize, list.len()),
                (f, t) => (f as usize, t as usize),
            };
            let pinned = before.partition_point(|a| a.0 < c)..before.partition_point(|a| a.0 <= c);
            before[pinned]
                .iter()
                .map(|&(_, x, w)| (x, w))
                .chain(list[from..to].iter().copied())
        };
        #[derive(Clone, Copy)]
        struct Top2([(u32, u32); 2]);
        impl Top2 {
            const EMPTY: Top2 = Top2([(NONE, NONE); 2]);
            fn push(&mut self, thread: u32, pos: u32) {
                if self.0[0].0 != thread {
                    self.0[1] = self.0[0];
                }
                self.0[0] = (thread, pos);
            }
            fn latest_other(&self, thread: u32) -> Option<u32> {
                self.0
                    .iter()
                    .find(|e| e.0 != NONE && e.0 != thread)
                    .map(|e| e.1)
            }
        }
        // Per variable, the two most recent sections per access kind from
        // distinct threads: enough to find the latest one of any thread
        // other than CS2's.
        let mut last: FxHashMap<u32, [Top2; 2]> = FxHashMap::default();
        let bits = |kinds: u8| (0..2).filter(move |k| kinds >> k & 1 == 1);
        let mut seeds = Vec::new();
        for list in &self.by_lock {
            // A lock's only section has no earlier one to take an edge from.
            if list.len() < 2 {
                continue;
            }
            last.clear();
            for &c2 in list {
                let s2 = self.sections[c2 as usize];
                let mut best: Option<u32> = None;
                for (x, kinds) in accesses_of(c2) {
                    if let Some(tops) = last.get(&x) {
                        let with = bits(kinds).fold(0, |m, k| m | CONFLICTS[k]);
                        for k in bits(with) {
                            best = best.max(tops[k].latest_other(s2.thread));
                        }
                    }
                }
                for (x, kinds) in accesses_of(c2) {
                    let tops = last.entry(x).or_insert([Top2::EMPTY; 2]);
                    for k in bits(kinds) {
                        tops[k].push(s2.thread, s2.pos);
                    }
                }
                if let Some(p) = best {
                    let s1 = self.sections[list[p as usize] as usize];
                    if self.within(s1.rel, s2.acq) {
                        seeds.push((s2.acq, s1.rel, Rule::A));
                    }
                }
            }
        }
        self.seeds.extend(seeds);
    }

    /// Fork, join, volatile accesses of one variable by different threads, at
    /// least one a write (per access, the latest such earlier access of each
    /// other thread: it dominates that thread's earlier ones) and `extra`.
    fn seed_hard(
        &mut self,
        trace: &Trace,
        facts: &Facts,
        extra: &[(u32, u32)],
        id: impl Fn(usize) -> EventId,
    ) {
        let slot = |e: u32| self.sync.slot(e).expect("hard edge ends are sync points");
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for &(f, first) in &facts.fork_edges {
            edges.push((slot(first), slot(f)));
        }
        for &(last, j) in &facts.join_edges {
            edges.push((slot(j), slot(last)));
        }
        let mut latest: FxHashMap<u32, Latest> = FxHashMap::default();
        let mut relaxed_edges: Vec<(u32, u32)> = Vec::new();
        for (i, ev) in trace.events.iter().enumerate() {
            if !ev.op.is_atomic() {
                continue;
            }
            let write = ev.op.is_write();
            let a = slot(id(i));
            let t = ev.thread;
            let relaxed = matches!(ev.op, Op::AtomicRead | Op::AtomicWrite);
            let per = latest.entry(ev.target).or_default();
            if relaxed && per.atomic.is_none() {
                // Until now every atomic access was volatile: the same table.
                let from = per
                    .volatile
                    .iter()
                    .map(|&(u, w, any)| (u, [(w, false), (any, false)]));
                per.atomic = Some(from.collect());
            }
            if let Some(atomic) = &mut per.atomic {
                for &(u, [(w, w_relaxed), (any, any_relaxed)]) in atomic.iter() {
                    let (src, src_relaxed) = if write {
                        (any, any_relaxed)
                    } else {
                        (w, w_relaxed)
                    };
                    if src != NONE && u != t && (relaxed || src_relaxed) && self.sync.hb_leq(src, a)
                    {
                        relaxed_edges.push((a, src));
                    }
                }
                let me = &mut entry_of(atomic, t, |e| e.0, (t, [(NONE, false); 2])).1;
                me[1] = (a, relaxed);
                if write {
                    me[0] = (a, relaxed);
                }
            }
            if relaxed {
                continue;
            }
            for &(u, w, any) in &per.volatile {
                let src = if write { any } else { w };
                if src != NONE && u != t {
                    edges.push((a, src));
                }
            }
            let me = entry_of(&mut per.volatile, t, |e| e.0, (t, NONE, NONE));
            me.2 = a;
            if write {
                me.1 = a;
            }
        }
        // A base edge K or more long is implied by the window rule only when
        // HBv orders its ends; every edge above is an HBv edge.
        for (a, r) in edges.into_iter().chain(relaxed_edges) {
            if self.within(r, a) || !self.sync.hb_leq(r, a) {
                self.seeds.push((a, r, Rule::Hard));
            }
        }
        // Ordered races (`--order-races`) are not HBv edges: always kept.
        for &(e1, e2) in extra {
            self.seeds.push((slot(e2), slot(e1), Rule::Hard));
        }
    }

    /// Window rule for rule (b): CS1 before CS2 on the same lock always has
    /// acq1 <=HB end2, so when they are K or more apart CP(acq1, end2) holds by
    /// the conservative closure; the latest such CS1 gives CS2's edge.
    fn seed_window(&mut self) {
        let Some(k) = self.window else { return };
        for list in &self.by_lock {
            for (p2, &c2) in list.iter().enumerate() {
                let s2 = self.sections[c2 as usize];
                let end2 = self.sync.event(s2.end) as u64;
                if end2 < k {
                    continue;
                }
                let limit = end2 - k;
                let q = list[..p2].partition_point(|&c1| {
                    self.sync.event(self.sections[c1 as usize].acq) as u64 <= limit
                });
                if q > 0 {
                    let s1 = self.sections[list[q - 1] as usize];
                    if self.within(s1.rel, s2.acq) {
                        self.seeds.push((s2.acq, s1.rel, Rule::Window));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{merge_accesses, merge_sorted_accesses};

    #[test]
    fn merging_two_merged_lists_is_merging_their_concatenation() {
        // Small ids, so that lists share (section, variable) pairs often.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        for _ in 0..500 {
            let mut list = || -> Vec<(u32, u32, u8)> {
                let len = next(12);
                (0..len).map(|_| (next(4), next(6), 1 << next(2))).collect()
            };
            let (mut a, mut b) = (list(), list());
            let mut both: Vec<_> = a.iter().chain(&b).copied().collect();
            merge_accesses(&mut both);
            merge_accesses(&mut a);
            merge_accesses(&mut b);
            assert_eq!(merge_sorted_accesses(a, b), both);
        }
    }
}
