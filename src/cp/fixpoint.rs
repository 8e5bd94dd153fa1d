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

/// Proposes the sections whose end event lies in `[event(a), event(r) + K)`.
struct SectionsEndingIn<'a> {
    input: &'a CpInput,
    /// Event id of each section's end, in `by_end` order.
    ends: &'a [u32],
}

impl<'a> SectionsEndingIn<'a> {
    fn range(&self, &(a, r): &(u32, u32)) -> (usize, usize) {
        let from = self.input.sync.event(a);
        let lo = self.ends.partition_point(|&e| e < from);
        let hi = match self.input.window {
            Some(k) => {
                let until = self.input.sync.event(r) as u64 + k;
                lo + self.ends[lo..].partition_point(|&e| (e as u64) < until)
            }
            None => self.ends.len(),
        };
        (lo, hi)
    }
}

impl<'a> Leaper<'a, (u32, u32), u32> for SectionsEndingIn<'a> {
    fn count(&mut self, prefix: &(u32, u32)) -> usize {
        let (lo, hi) = self.range(prefix);
        hi - lo
    }
    fn propose(&mut self, prefix: &(u32, u32), values: &mut Vec<&'a u32>) {
        let (lo, hi) = self.range(prefix);
        values.extend(self.input.by_end[lo..hi].iter());
    }
    fn intersect(&mut self, prefix: &(u32, u32), values: &mut Vec<&'a u32>) {
        let (lo, hi) = self.range(prefix);
        let inside = &self.input.by_end[lo..hi];
        values.retain(|c| inside.contains(c));
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
    /// The latest section on `cs2`'s lock before it whose acquire is HB-before
    /// slot `r`, if it improves on `best` and its edge can matter.
    fn latest_cs1(&self, cs2: u32, r: u32, best: u32) -> Option<u32> {
        let s2 = self.sections[cs2 as usize];
        let list = &self.by_lock[s2.lock as usize];
        let q = list[..s2.pos as usize]
            .partition_point(|&c1| self.sync.hb_leq(self.sections[c1 as usize].acq, r));
        if q == 0 || (best != NONE && (q as u32 - 1) <= best) {
            return None;
        }
        let c1 = list[q - 1];
        self.within(self.sections[c1 as usize].rel, s2.acq)
            .then_some(c1)
    }

    /// Run the fixpoint to completion.
    pub fn fixpoint(&self) -> Fixpoint {
        let ends: Vec<u32> = self
            .by_end
            .iter()
            .map(|&c| self.sync.event(self.sections[c as usize].end))
            .collect();
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
                    SectionsEndingIn {
                        input: self,
                        ends: &ends,
                    },
                    ValueFilter::from(|&(a, r): &(u32, u32), &cs2: &u32| {
                        let s2 = self.sections[cs2 as usize];
                        self.sync.hb_leq(a, s2.end)
                            && self.latest_cs1(cs2, r, best[cs2 as usize].get()).is_some()
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
