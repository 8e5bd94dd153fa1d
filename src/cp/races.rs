//! The final pass: CP clocks at every event, and the race check.
//!
//! The CP clock `C(y)` is the join of `V_hb(r)` over base edges `(r, a)` with
//! `a <=HBv y`, so it flows along HBv edges exactly like an HBv clock, except that
//! a base edge injects the HB clock of its source (CP is not reflexive: a
//! thread's own events never enter its CP clock by program order alone).
//! Access `e1` is CP-before `e2` iff `C(e2)[thread(e1)] >= local(e1)`.

use super::input::CpInput;
use super::sync::{Clocks, VolatileOrder, join_into};
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

/// Run the pass with base edges `base` (`(a, r)` slots); reports only the
/// first racy event when `first_only` (clocks are still computed to the end).
pub fn race_pass(
    trace: &Trace,
    input: &CpInput,
    base: &[(u32, u32)],
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
    let mut clocks = Clocks::with_order(trace, false, VolatileOrder::Conflicting);
    let mut cp_clocks = Vec::with_capacity(sync.len() * nt);
    let mut history = AccessHistory::new(input.window);
    let mut races = Vec::new();
    let mut slot = 0usize;
    for (i, ev) in trace.events.iter().enumerate() {
        let is_point = slot < sync.len() && sync.event(slot as u32) == i as EventId;
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
        if ev.op.is_access()
            && (!first_only || races.is_empty())
            && let Some(r) = history.access(i as EventId, ev, local, |u, c| clock[u as usize] >= c)
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
