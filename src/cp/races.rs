//! The final pass: CP clocks at every event, and the race check.
//!
//! The CP clock `C(y)` is the join of `V_hb(r)` over base edges `(r, a)` with
//! `a <=HB y`, so it flows along HB edges exactly like an HB clock, except that
//! a base edge injects the HB clock of its source (CP is not reflexive: a
//! thread's own events never enter its CP clock by program order alone).
//! Access `e1` is CP-before `e2` iff `C(e2)[thread(e1)] >= local(e1)`.

use super::input::CpInput;
use super::sync::join_into;
use crate::history::AccessHistory;
use crate::report::Race;
use crate::trace::{EventId, Op, Trace};

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
    let mut threads = vec![0u32; nt * nt];
    let mut locks = vec![0u32; trace.num_locks() * nt];
    let mut vwrites = vec![0u32; trace.num_vars() * nt];
    let mut fork_pending: Vec<Option<Vec<u32>>> = vec![None; nt];
    let mut started = vec![false; nt];
    let mut local = vec![0u32; nt];
    let mut cp_clocks = Vec::with_capacity(sync.len() * nt);
    let mut history = AccessHistory::new(input.window);
    let mut races = Vec::new();
    let mut slot = 0usize;
    for (i, ev) in trace.events.iter().enumerate() {
        let t = ev.thread as usize;
        local[t] += 1;
        let (lo, hi) = (t * nt, (t + 1) * nt);
        if !started[t] {
            started[t] = true;
            if let Some(p) = fork_pending[t].take() {
                join_into(&mut threads[lo..hi], &p);
            }
        }
        let is_point = slot < sync.len() && sync.event(slot as u32) == i as EventId;
        if is_point {
            for &r in &sources[start[slot] as usize..start[slot + 1] as usize] {
                join_into(&mut threads[lo..hi], sync.clock(r));
            }
        }
        let tg = ev.target as usize;
        match ev.op {
            Op::Acquire => join_into(&mut threads[lo..hi], &locks[tg * nt..(tg + 1) * nt]),
            Op::Release => locks[tg * nt..(tg + 1) * nt].copy_from_slice(&threads[lo..hi]),
            Op::Fork => fork_pending[tg] = Some(threads[lo..hi].to_vec()),
            Op::Join => {
                let child = threads[tg * nt..(tg + 1) * nt].to_vec();
                join_into(&mut threads[lo..hi], &child);
            }
            Op::VolatileWrite => join_into(&mut vwrites[tg * nt..(tg + 1) * nt], &threads[lo..hi]),
            Op::VolatileRead => join_into(&mut threads[lo..hi], &vwrites[tg * nt..(tg + 1) * nt]),
            Op::Read | Op::Write => {
                let clock = &threads[lo..hi];
                if (!first_only || races.is_empty())
                    && let Some(r) =
                        history.access(i as EventId, ev, local[t], |u, c| clock[u as usize] >= c)
                {
                    races.push(r);
                }
            }
            Op::ReentrantAcquire | Op::ReentrantRelease => {}
        }
        if is_point {
            cp_clocks.extend_from_slice(&threads[lo..hi]);
            slot += 1;
        }
    }
    RacePass { races, cp_clocks }
}
