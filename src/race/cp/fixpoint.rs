//! The semi-naive CP fixpoint in datafrog.
//!
//! Relations (all over sync slots):
//! - `base(a, r)`: base CP edges, seeded with rule (a), hard and window edges.
//! - `fired(cs2, cs1)`: rule (b) fired for sections CS1 -> CS2.
//!
//! Rules:
//! ```text
//! fired(cs2, cs1) <- base(a, r), end(cs2) in [a, r + K), a <=HB end(cs2),
//!                    cs1 = latest section on lock(cs2) before cs2 with acq(cs1) <=HB r.
//! base(acq(cs2), rel(cs1)) <- fired(cs2, cs1).
//! ```
//! This is Definition 2 (b) in the form the paper notes is equivalent —
//! `rel1 -> acq2` when `acq1` CP-precedes `end2` — with CP(acq1, end2) witnessed
//! by a single base edge (r, a): `acq1 <=HB r` and `a <=HB end2` (rule (c)).
//! Each new base edge is joined once (semi-naive, datafrog's variables). The
//! join is written out (it was a datafrog leapjoin with the same proposer and
//! filter): a manual index proposes, per lock, the sections a new edge can
//! affect (sections sorted by end event, so the candidates are one
//! contiguous range), an O(1) HB vector-clock test filters them, and the CS1
//! search is a binary search, valid because the sections of a lock that
//! satisfy the premise form a prefix. Per CS2 only improving (later) CS1 are
//! emitted: the latest CS1's edge implies the earlier ones. A round takes
//! the new edges lock by lock, which keeps one lock's arrays in the cache.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use datafrog::{Iteration, Relation};

use super::input::{CpInput, Rule};
use crate::engine::sync::NONE;

/// Proposes, for a base edge `(a, r)`, the sections CS2 whose rule (b) edge
/// it can newly justify. Per lock l (sections in trace order, so their ends are
/// increasing and each is HB-before the next):
/// - CS2 must satisfy `a <=HB end2`: a suffix of l's sections, from position f;
/// - CS1 must satisfy `acq1 <=HB r`: a prefix of l's sections, of length g;
/// - under a window, CS2 with `end2 >= r + K` are covered by the window rule.
///
/// For CS2 at position p the latest CS1 is at `min(p, g) - 1`. Past position g
/// every CS2 gets the same CS1, and the first of them dominates the rest, so
/// only positions `f ..= max(f, g)` matter. A CS2 whose edge already comes from
/// its immediate predecessor is saturated (no CS1 can be later); saturated
/// positions are skipped with a union-find "next open position" structure, so
/// each section is passed over O(α) times in the whole fixpoint.
struct CandidateSections<'a> {
    input: &'a CpInput,
    open: &'a OpenPositions,
    /// Per lock, the last tuple's first position with `end >= a`: datafrog
    /// hands the tuples over sorted by `a`, so the next answer is close by.
    cursor: Vec<u32>,
    /// The fixpoint's best CS1 position per CS2 (see `fixpoint`): candidates
    /// whose CS1 would not improve on it are not proposed at all.
    best: &'a [Shared],
}

/// A `u32` the threads of a round share: each lock's sections are read and
/// written by one thread only, so relaxed loads and stores are enough.
pub(crate) struct Shared(AtomicU32);

impl Shared {
    fn new(v: u32) -> Shared {
        Shared(AtomicU32::new(v))
    }
    #[inline]
    fn get(&self) -> u32 {
        self.0.load(Relaxed)
    }
    #[inline]
    fn set(&self, v: u32) {
        self.0.store(v, Relaxed)
    }
}

/// Union-find over each lock's section positions: `next[c]` points at a
/// position at or after section c's own; a position is open when it points at
/// itself. Interior mutability because the proposer and the firing share it
/// (and the threads of a round, each with its own locks).
pub(crate) struct OpenPositions {
    next: Vec<Shared>,
}

impl OpenPositions {
    fn new(input: &CpInput) -> OpenPositions {
        // Closed from the start: position 0 (no earlier section, never a CS2)
        // and, under a window, a CS2 whose immediate predecessor released K or
        // more events before CS2's acquire: every CS1 is at least that far, so
        // no rule (b) edge into it can matter (the window rule covers them).
        let next = input
            .sections
            .iter()
            .map(|s| {
                let hopeless = s.pos == 0 || {
                    let list = &input.by_lock[s.lock as usize];
                    let pred = &input.sections[list[s.pos as usize - 1] as usize];
                    pred.rel != NONE && !input.within(pred.rel, s.acq)
                };
                Shared::new(if hopeless { s.pos + 1 } else { s.pos })
            })
            .collect();
        OpenPositions { next }
    }

    /// First open position at or after `p` in `list` (`list.len()` if none).
    fn find(&self, list: &[u32], p: usize) -> usize {
        let mut q = p;
        while q < list.len() {
            let n = self.next[list[q] as usize].get() as usize;
            if n == q {
                break;
            }
            q = n;
        }
        let mut x = p;
        while x < q {
            let cell = &self.next[list[x] as usize];
            x = cell.get() as usize;
            cell.set(q as u32);
        }
        q
    }

    /// Mark section `c` (at position `pos`) saturated.
    fn close(&self, c: u32, pos: u32) {
        self.next[c as usize].set(pos + 1);
    }
}

impl<'a> CandidateSections<'a> {
    /// Push the open candidates of `lock` for `(a, r)` onto `out`.
    ///
    /// The searches start from nearby positions (the lock's cursor, then
    /// `lo`): with hundreds of locks per base edge, binary searches over each
    /// lock's whole list were most of the fixpoint's time, in cache misses.
    ///
    /// `r_row` is `r`'s HBv clock as a dense row when the threads are few
    /// (read once per tuple and lock: the shared clock would be a cache miss
    /// each time).
    fn candidates(
        &mut self,
        lock: usize,
        (a, r): (u32, u32),
        r_row: Option<&[u32]>,
        out: &mut Vec<&'a u32>,
    ) {
        let input = self.input;
        let sync = &input.sync;
        let list = &input.by_lock[lock];
        let ends = &input.lock_end_event[lock];
        let lo = partition_point_near(ends, self.cursor[lock] as usize, |&e| e < sync.event(a));
        self.cursor[lock] = lo as u32;
        // f: the first section from lo whose end is HB-after a (a suffix of
        // the lock's sections); it must also end before r + K under a window.
        let f = match &input.lock_end_hb {
            Some(rows) => {
                let nt = sync.nthreads;
                let (ta, la) = (sync.thread[a as usize] as usize, sync.local[a as usize]);
                let rows = &rows[lock];
                lo + partition_point_near_by(ends.len() - lo, 0, |i| rows[(lo + i) * nt + ta] < la)
            }
            None => {
                lo + partition_point_near(&input.lock_end_slot[lock][lo..], 0, |&s| {
                    !sync.hb_leq(a, s)
                })
            }
        };
        let limit = input
            .window
            .map(|k| (sync.event(r) as u64).saturating_add(k));
        if f >= list.len() || limit.is_some_and(|l| ends[f] as u64 >= l) {
            return;
        }
        let clock_r = |t: u32| match r_row {
            Some(row) => row[t as usize],
            None => sync.clock(r).get(t),
        };
        let acq_hb_before_r = |p: usize| {
            let (t, local) = input.lock_acq[lock][p];
            clock_r(t) >= local
        };
        if f > 0 && !acq_hb_before_r(f - 1) {
            // g < f: only f itself can be a candidate, with CS1 at g - 1,
            // and it improves on f's best exactly when the section after
            // the best (or the first, with none) is HB-before r. Two O(1)
            // tests instead of the search for g: on many locks (ftpserver)
            // this is the common case, and the proposal is almost always
            // dominated.
            // The union-find last: a saturated f fails `next < f` anyway,
            // and the clock test usually fails first.
            let best = self.best[list[f] as usize].get();
            let next = if best == NONE { 0 } else { best as usize + 1 };
            if next < f && acq_hb_before_r(next) && self.open.find(list, f) == f {
                out.push(&list[f]);
            }
            return;
        }
        // Sections ending at r + K or later are the window rule's.
        let hi = match limit {
            Some(l) => f + partition_point_near(&ends[f..], 0, |&e| (e as u64) < l),
            None => list.len(),
        };
        // r comes before a in the trace, so the sections HB-before r end
        // around where those after a begin.
        let g = input.prefix_hb_before(lock, hi, clock_r, lo);
        let last = g.max(f).min(hi - 1);
        let mut q = self.open.find(list, f);
        while q <= last {
            // CS2 at q gets the CS1 at min(q, g) - 1 (what `latest_cs1` finds).
            let cs1 = q.min(g);
            let best = self.best[list[q] as usize].get();
            if cs1 > 0 && (best == NONE || cs1 as u32 - 1 > best) {
                out.push(&list[q]);
            }
            q = self.open.find(list, q + 1);
        }
    }
}

/// `slice.partition_point(pred)` (`pred` true on a prefix) by exponential
/// search outward from `hint`: O(log d) probes for an answer d positions away,
/// so a good hint touches a cache line or two.
#[inline(always)]
pub(crate) fn partition_point_near<T>(
    slice: &[T],
    hint: usize,
    pred: impl Fn(&T) -> bool,
) -> usize {
    partition_point_near_by(slice.len(), hint, |i| pred(&slice[i]))
}

/// [`partition_point_near`] over positions `0..n`, `pred` true on a prefix.
#[inline(always)]
pub(crate) fn partition_point_near_by(
    n: usize,
    hint: usize,
    pred: impl Fn(usize) -> bool,
) -> usize {
    // Binary search of the first position in `lo..hi` where `pred` fails.
    let search = |mut lo: usize, mut hi: usize| {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let h = hint.min(n);
    if h < n && pred(h) {
        // The answer is after h: gallop right.
        let (mut lo, mut step) = (h + 1, 1);
        loop {
            let probe = lo + step - 1;
            if probe >= n {
                return search(lo, n);
            }
            if !pred(probe) {
                return search(lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    }
    // The answer is at or before h: gallop left.
    let (mut hi, mut step) = (h, 1);
    loop {
        if hi < step {
            return search(0, hi);
        }
        let probe = hi - step;
        if pred(probe) {
            return search(probe + 1, hi);
        }
        hi = probe;
        step *= 2;
    }
}

/// Threads a big round of the rule (b) join is split between (the machines
/// this is built for have two cores).
const PARALLEL: usize = 2;

/// Result of the fixpoint.
pub(crate) struct Fixpoint {
    /// All base edges `(a, r)` with the rule that first produced them.
    pub base: Vec<(u32, u32, Rule)>,
    /// Rounds until nothing changed.
    pub rounds: u64,
}

impl CpInput {
    /// How many of the first `upto` sections of `lock` have their acquire
    /// HB-before a point whose clock entries `clock` gives (they form a
    /// prefix); the search starts at `hint`.
    fn prefix_hb_before(
        &self,
        lock: usize,
        upto: usize,
        clock: impl Fn(u32) -> u32,
        hint: usize,
    ) -> usize {
        partition_point_near(&self.lock_acq[lock][..upto], hint, |&(t, local)| {
            clock(t) >= local
        })
    }

    /// The latest section on `cs2`'s lock before it whose acquire is HB-before
    /// slot `r`, if it improves on `best` (a position) and its edge can matter.
    fn latest_cs1(&self, cs2: u32, r: u32, best: u32) -> Option<u32> {
        let s2 = self.sections[cs2 as usize];
        let clock = self.sync.clock(r);
        let q = self.prefix_hb_before(
            s2.lock as usize,
            s2.pos as usize,
            |t| clock.get(t),
            s2.pos as usize,
        );
        if q == 0 || (best != NONE && (q as u32 - 1) <= best) {
            return None;
        }
        let c1 = self.by_lock[s2.lock as usize][q - 1];
        self.within(self.sections[c1 as usize].rel, s2.acq)
            .then_some(c1)
    }

    /// Run the fixpoint to completion.
    pub(crate) fn fixpoint(&self) -> Fixpoint {
        self.fixpoint_split(1 << 20)
    }

    /// [`CpInput::fixpoint`], splitting a round's join between threads when
    /// its new edges times the locks reach `split_from`.
    fn fixpoint_split(&self, split_from: usize) -> Fixpoint {
        // Best (latest) CS1 position known to fire for each CS2, for dominance.
        let best: Vec<Shared> = (0..self.sections.len())
            .map(|_| Shared::new(NONE))
            .collect();
        let open = OpenPositions::new(self);
        let mut iteration = Iteration::new();
        let base = iteration.variable::<(u32, u32)>("base");
        let fired = iteration.variable::<(u32, u32)>("fired");
        base.extend(
            self.seeds
                .iter()
                .map(|&(a, r, _)| (a, r))
                .chain(self.derived.iter().copied()),
        );
        let mut rounds = 0;
        while iteration.changed() {
            rounds += 1;
            // Of this round's new edges into one target, one whose source is
            // HB-before the latest one's adds nothing: every section the
            // latest source's edge can fire, it fires with a CS1 at least as
            // late, and its window reaches further. (Edges into an acquire
            // all come from releases of its lock, so only the latest stays;
            // more than half of the new edges on ftpserver.)
            let recent: Vec<(u32, u32)> = {
                let all = base.recent.borrow();
                let all = &all.elements;
                let mut kept = Vec::with_capacity(all.len());
                let mut i = 0;
                while i < all.len() {
                    let a = all[i].0;
                    let end = i + all[i..].partition_point(|e| e.0 == a);
                    let last = all[end - 1].1;
                    kept.extend(
                        all[i..end - 1]
                            .iter()
                            .filter(|e| !self.sync.hb_leq(e.1, last)),
                    );
                    kept.push((a, last));
                    i = end;
                }
                kept
            };
            // Each new edge's source clock as a dense row, when threads are
            // few: read once per edge and lock below.
            let nt = self.sync.nthreads;
            let dense = self.lock_end_hb.is_some();
            let mut rows = Vec::new();
            if dense {
                rows.resize(recent.len() * nt, 0u32);
                for (row, &(_, r)) in rows.chunks_exact_mut(nt.max(1)).zip(recent.iter()) {
                    self.sync.clock(r).write_dense(row);
                }
            }
            // Rule (b), lock by lock: the proposer's answers for one lock
            // depend only on that lock's sections and on what this round
            // already fired into them, so taking every new base edge (in
            // datafrog's order) against one lock before the next gives the
            // leapjoin's result, with each lock's arrays hot in the cache
            // instead of hundreds of them touched per edge. Locks being
            // independent, a big round is split between two threads, each
            // with its own locks (interleaved, for balance).
            let locks = self.by_lock.len();
            let parts = if recent.len() * locks >= split_from {
                PARALLEL
            } else {
                1
            };
            let run = |part: usize| {
                let mut proposer = CandidateSections {
                    input: self,
                    open: &open,
                    cursor: vec![0; locks],
                    best: &best,
                };
                let mut fired_here = Vec::new();
                let mut proposals = Vec::new();
                for lock in (part..locks).step_by(parts) {
                    for (i, &(a, r)) in recent.iter().enumerate() {
                        let row = dense.then(|| &rows[i * nt..(i + 1) * nt]);
                        proposer.candidates(lock, (a, r), row, &mut proposals);
                        for &cs2 in proposals.drain(..) {
                            let Some(c1) = self.latest_cs1(cs2, r, best[cs2 as usize].get()) else {
                                continue;
                            };
                            let (pos1, pos2) = (
                                self.sections[c1 as usize].pos,
                                self.sections[cs2 as usize].pos,
                            );
                            best[cs2 as usize].set(pos1);
                            if pos1 + 1 == pos2 {
                                open.close(cs2, pos2);
                            }
                            fired_here.push((cs2, c1));
                        }
                    }
                }
                fired_here
            };
            let new_fired = if parts == 1 {
                run(0)
            } else {
                std::thread::scope(|s| {
                    let others: Vec<_> = (1..parts).map(|p| s.spawn(move || run(p))).collect();
                    let mut all = run(0);
                    for h in others {
                        all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                    }
                    all
                })
            };
            fired.insert(new_fired.into());
            base.from_map(&fired, |&(cs2, cs1)| {
                (
                    self.sections[cs2 as usize].acq,
                    self.sections[cs1 as usize].rel,
                )
            });
        }
        let all: Relation<(u32, u32)> = base.complete();
        let mut out: Vec<(u32, u32, Rule)> = self.seeds.clone();
        out.sort_unstable();
        let seeded = out.len();
        for &(a, r) in all.iter() {
            let known = out[..seeded]
                .binary_search_by(|e| (e.0, e.1).cmp(&(a, r)))
                .is_ok();
            if !known {
                out.push((a, r, Rule::B));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|e| (e.0, e.1));
        Fixpoint { base: out, rounds }
    }
}

#[cfg(test)]
mod tests {
    use super::partition_point_near;
    use crate::race::cp::CpInput;
    use crate::tools::generate::{Config, trace};

    #[test]
    fn split_rounds_derive_what_one_thread_derives() {
        let mut fired = 0;
        for seed in 0..40 {
            let cfg = Config {
                events: 2000,
                threads: 5,
                locks: 2 + (seed % 7) as u32,
                max_nesting: 3,
                seed,
                ..Config::default()
            };
            let t = trace(&cfg);
            for k in [None, Some(30), Some(300)] {
                let input = CpInput::new(&t, k, &[]);
                let one = input.fixpoint_split(usize::MAX).base;
                let split = input.fixpoint_split(0).base;
                assert_eq!(one, split, "seed {seed}, window {k:?}");
                fired += one.iter().filter(|e| e.2 == super::Rule::B).count();
            }
        }
        assert!(fired > 100, "rule (b) fired only {fired} times");
    }

    #[test]
    fn galloping_search_equals_binary_search() {
        for n in 0..40usize {
            for t in 0..=n {
                let v: Vec<u32> = (0..n as u32).collect();
                for hint in 0..n + 3 {
                    let got = partition_point_near(&v, hint, |&x| (x as usize) < t);
                    assert_eq!(got, t, "n {n} answer {t} hint {hint}");
                }
            }
        }
    }
}
