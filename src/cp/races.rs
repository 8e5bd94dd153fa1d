//! The final pass: CP clocks at every event, and the race check.
//!
//! The CP clock `C(y)` is the join of `V_hb(r)` over base edges `(r, a)` with
//! `a <=HB y`, so it flows along HB edges exactly like an HB clock, except that
//! a base edge injects the HB clock of its source (CP is not reflexive: a
//! thread's own events never enter its CP clock by program order alone).
//! Access `e1` is CP-before `e2` iff `C(e2)[thread(e1)] >= local(e1)`.
//!
//! Under a window K every pair is checked: rule (w) makes a pair K or more
//! apart CP-ordered exactly when HB orders it (CP is contained in HB, and HB
//! pairs that far apart are rule (w) pairs), so such pairs are decided by the
//! HB clock of the sync points (the same clocks the fixpoint uses). The CP
//! clock alone decides closer pairs: the base edges dropped under the window
//! span K or more, so they order no pair closer than K. `--max-distance` then
//! only limits which unordered pairs are reported.

use super::input::CpInput;
use super::sync::{Clocks, join_into};
use crate::history::AccessHistory;
use crate::report::Race;
use crate::trace::{EventId, Trace};

/// What the final pass produced.
pub struct RacePass {
    /// Race witnesses, by racy event.
    pub races: Vec<Race>,
    /// CP clock at each sync slot (for statistics and queries).
    pub cp_clocks: Vec<u32>,
}

/// Run the pass with base edges `base` (`(a, r)` slots), reporting pairs
/// less than `max_distance` apart (None: all); reports only the first racy
/// event when `first_only` (clocks are still computed to the end).
pub fn race_pass(
    trace: &Trace,
    input: &CpInput,
    base: &[(u32, u32)],
    max_distance: Option<u64>,
    first_only: bool,
) -> RacePass {
    let sync = &input.sync;
    let nt = sync.nthreads;
    // Incoming base sources per target slot (CSR layout).
    let mut start = vec![0u32; sync.len() + 1];
    for &(a, _) in base {
        start[a as usize + 1] += 1;
    }
    for i in 0..sync.len() {
        start[i + 1] += start[i];
    }
    let mut sources = vec![0u32; base.len()];
    let mut fill = start.clone();
    for &(a, r) in base {
        sources[fill[a as usize] as usize] = r;
        fill[a as usize] += 1;
    }
    let mut clocks = Clocks::new(trace, false);
    let mut cp_clocks = Vec::with_capacity(sync.len() * nt);
    let mut history = AccessHistory::new(max_distance);
    let mut races = Vec::new();
    let mut slot = 0usize;
    // Latest sync slot of each thread: between its sync points a thread
    // receives no HB edge, so that slot's HB clock is the thread's clock for
    // every other thread's entry.
    let mut last_slot = vec![super::sync::NONE; nt];
    for (i, ev) in trace.events.iter().enumerate() {
        let is_point = slot < sync.len() && sync.event(slot as u32) == i as EventId;
        if is_point {
            last_slot[ev.thread as usize] = slot as u32;
        }
        let incoming = if is_point {
            &sources[start[slot] as usize..start[slot + 1] as usize]
        } else {
            &[][..]
        };
        let (clock, local) = clocks.step(ev, |c| {
            for &r in incoming {
                join_into(c, sync.clock(r));
            }
        });
        let hb_slot = last_slot[ev.thread as usize];
        let far_ordered = |u: u32, c: u32, e1: EventId| {
            input
                .window
                .is_some_and(|k| (i as EventId - e1) as u64 >= k)
                && hb_slot != super::sync::NONE
                && sync.clock(hb_slot)[u as usize] >= c
        };
        if ev.op.is_access()
            && (!first_only || races.is_empty())
            && let Some(r) = history.access_at(i as EventId, ev, local, |u, c, e1| {
                clock[u as usize] >= c || far_ordered(u, c, e1)
            })
        {
            races.push(r);
        }
        if is_point {
            cp_clocks.extend_from_slice(clock);
            slot += 1;
        }
    }
    RacePass { races, cp_clocks }
}
