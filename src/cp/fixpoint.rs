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
//! Each new base edge is joined once (semi-naive). The join is a leapjoin whose
//! proposer is a manual index (sections sorted by end event, so the candidates
//! are one contiguous range) and whose filter is an O(1) HB vector-clock test;
//! the CS1 search is a binary search, valid because the sections of a lock that
//! satisfy the premise form a prefix. Per CS2 only improving (later) CS1 are
//! emitted: the latest CS1's edge implies the earlier ones.

use std::cell::Cell;

use datafrog::{Iteration, Leaper, Relation, ValueFilter};

use super::input::{CpInput, Rule};
use super::sync::NONE;

/// Proposes, for a base edge `(a, r)`, the sections CS2 whose rule (b) edge
/// it can newly justify. Per lock l (sections in trace order, so their ends are
/// increasing and each is HB-before the next):
/// - CS2 must satisfy `a <=HB end2`: a suffix of l's sections, from position f;
/// - CS1 must satisfy `acq1 <=HB r`: a prefix of l's sections, of length g;
/// - under a window, CS2 with `end2 >= r + K` are covered by the window rule.
///
/// For CS2 at position p the latest CS1 is at `min(p, g) - 1`. Past position g
/// every CS2 gets the same CS1, and the first of them dominates the rest, so
/// only positions `f ..= max(f, g)` are proposed: a contiguous slice per lock.
struct CandidateSections<'a> {
    input: &'a CpInput,
}

impl<'a> CandidateSections<'a> {
    /// The slice of `lock`'s sections to propose for `(a, r)`.
    fn slice(&self, lock: usize, (a, r): (u32, u32)) -> &'a [u32] {
        let input = self.input;
        let sync = &input.sync;
        let list = &input.by_lock[lock];
        let end = |c: &u32| sync.event(input.sections[*c as usize].end);
        let lo = list.partition_point(|c| end(c) < sync.event(a));
        let hi = match input.window {
            Some(k) => list.partition_point(|c| (end(c) as u64) < sync.event(r) as u64 + k),
            None => list.len(),
        };
        if lo >= hi {
            return &[];
        }
        let f =
            lo + list[lo..hi].partition_point(|c| !sync.hb_leq(a, input.sections[*c as usize].end));
        if f >= hi {
            return &[];
        }
        let g = input.prefix_hb_before(lock, hi, r);
        &list[f..=g.max(f).min(hi - 1)]
    }
}

impl<'a> Leaper<'a, (u32, u32), u32> for CandidateSections<'a> {
    fn count(&mut self, prefix: &(u32, u32)) -> usize {
        (0..self.input.by_lock.len())
            .map(|l| self.slice(l, *prefix).len())
            .sum()
    }
    fn propose(&mut self, prefix: &(u32, u32), values: &mut Vec<&'a u32>) {
        for l in 0..self.input.by_lock.len() {
            values.extend(self.slice(l, *prefix).iter());
        }
    }
    fn intersect(&mut self, prefix: &(u32, u32), values: &mut Vec<&'a u32>) {
        values.retain(|&&c| {
            self.slice(self.input.sections[c as usize].lock as usize, *prefix)
                .contains(&c)
        });
    }
}

/// Result of the fixpoint.
pub struct Fixpoint {
    /// All base edges `(a, r)` with the rule that first produced them.
    pub base: Vec<(u32, u32, Rule)>,
    /// Rounds until nothing changed.
    pub rounds: u64,
}

impl CpInput {
    /// How many of the first `upto` sections of `lock` have their acquire
    /// HB-before slot `r` (they form a prefix).
    fn prefix_hb_before(&self, lock: usize, upto: usize, r: u32) -> usize {
        self.by_lock[lock][..upto]
            .partition_point(|&c1| self.sync.hb_leq(self.sections[c1 as usize].acq, r))
    }

    /// The latest section on `cs2`'s lock before it whose acquire is HB-before
    /// slot `r`, if it improves on `best` (a position) and its edge can matter.
    fn latest_cs1(&self, cs2: u32, r: u32, best: u32) -> Option<u32> {
        let s2 = self.sections[cs2 as usize];
        let q = self.prefix_hb_before(s2.lock as usize, s2.pos as usize, r);
        if q == 0 || (best != NONE && (q as u32 - 1) <= best) {
            return None;
        }
        let c1 = self.by_lock[s2.lock as usize][q - 1];
        self.within(self.sections[c1 as usize].rel, s2.acq)
            .then_some(c1)
    }

    /// Run the fixpoint to completion.
    pub fn fixpoint(&self) -> Fixpoint {
        // Best (latest) CS1 position known to fire for each CS2, for dominance.
        let best: Vec<Cell<u32>> = vec![Cell::new(NONE); self.sections.len()];
        let mut iteration = Iteration::new();
        let base = iteration.variable::<(u32, u32)>("base");
        let fired = iteration.variable::<(u32, u32)>("fired");
        base.extend(self.seeds.iter().map(|&(a, r, _)| (a, r)));
        let mut rounds = 0;
        while iteration.changed() {
            rounds += 1;
            fired.from_leapjoin(
                &base,
                (
                    CandidateSections { input: self },
                    ValueFilter::from(|&(_, r): &(u32, u32), &cs2: &u32| {
                        self.latest_cs1(cs2, r, best[cs2 as usize].get()).is_some()
                    }),
                ),
                |&(_, r), &cs2| {
                    // The filter just accepted this pair and nothing changed
                    // best[cs2] since (each cs2 is proposed once per tuple).
                    let c1 = self
                        .latest_cs1(cs2, r, best[cs2 as usize].get())
                        .expect("filter accepted");
                    best[cs2 as usize].set(self.sections[c1 as usize].pos);
                    (cs2, c1)
                },
            );
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
        let seeded: rustc_hash::FxHashSet<(u32, u32)> =
            out.iter().map(|&(a, r, _)| (a, r)).collect();
        for &(a, r) in all.iter() {
            if !seeded.contains(&(a, r)) {
                out.push((a, r, Rule::B));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|e| (e.0, e.1));
        Fixpoint { base: out, rounds }
    }
}
