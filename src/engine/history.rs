//! Per-variable access history shared by the exact race checkers.
//!
//! Every exact engine answers the same question for each data access `e2`: is
//! some earlier conflicting access `e1` of another thread (within the window)
//! left unordered? Orderings are closed under program order on the left, so only
//! the latest read and the latest write of each thread need checking. The latest
//! unordered one becomes the race witness, so all engines pick the same witness.

use smallvec::SmallVec;

use crate::report::{Access, Race};
use crate::trace::{Event, EventId, Op, ThreadId};

/// One remembered access: its event, location, and the performing thread's
/// local clock at it (the value orderings are tested against).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Event id.
    pub id: EventId,
    /// Location id.
    pub loc: u32,
    /// Clock of the performing thread at the access.
    pub clock: u32,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    thread: ThreadId,
    write: Option<Stamp>,
    read: Option<Stamp>,
}

/// The entries of one variable. Most variables of array code are touched by
/// one thread only (often once or twice): their one entry lives inline, so a
/// new variable costs no allocation.
type Entries = SmallVec<[Entry; 1]>;

/// Latest read and write of every thread, per variable (only those that can
/// still be a witness: see [`AccessHistory::access`]).
#[derive(Clone, Debug, Default)]
pub struct AccessHistory {
    vars: Vec<Entries>,
    window: Option<u64>,
}

impl AccessHistory {
    /// A history that only pairs accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        AccessHistory {
            vars: Vec::new(),
            window,
        }
    }

    /// Check data access `ev` (event `id`, local clock `clock`) against the
    /// history, then record it. `ordered(t, c)` tells whether the access of
    /// thread `t` with local clock `c` is ordered before `ev`. Returns the race
    /// witness (latest unordered conflicting access), if any.
    pub fn access(
        &mut self,
        id: EventId,
        ev: &Event,
        clock: u32,
        mut ordered: impl FnMut(ThreadId, u32) -> bool,
    ) -> Option<Race> {
        self.access_at(id, ev, clock, |t, c, _| ordered(t, c))
    }

    /// [`AccessHistory::access`] whose `ordered(t, c, e1)` also gets the
    /// earlier access's event id (windowed CP decides pairs K or more apart
    /// with a different clock than closer ones).
    pub(crate) fn access_at(
        &mut self,
        id: EventId,
        ev: &Event,
        clock: u32,
        mut ordered: impl FnMut(ThreadId, u32, EventId) -> bool,
    ) -> Option<Race> {
        debug_assert!(ev.op.is_access());
        let v = ev.target as usize;
        if self.vars.len() <= v {
            self.vars.resize(v + 1, Entries::new());
        }
        let entries = &mut self.vars[v];
        let is_write = ev.op == Op::Write;
        let mut best: Option<(Stamp, ThreadId, Op)> = None;
        let mut pruned = false;
        for e in entries.iter_mut() {
            if e.thread == ev.thread {
                continue;
            }
            let thread = e.thread;
            let window = self.window;
            // Whether stamp `s` stays: an access ordered before this one is
            // dropped when this access conflicts with everything it conflicts
            // with (a write; or a read and `s` a read): every later access
            // unordered with it is unordered with this later, conflicting
            // access too (or is of this thread, hence ordered), so it would
            // never be the witness again. That keeps a variable's history to
            // its mutually unordered accesses (100,000 threads passing a lock
            // leave one entry, not 100,000).
            let mut check = |slot: &mut Option<Stamp>, op: Op, conflicts: bool, prunable: bool| {
                let Some(s) = *slot else { return };
                if !conflicts && !prunable {
                    return;
                }
                let near = window.is_none_or(|k| ((id - s.id) as u64) < k);
                // A stamp K or more events back is never a witness again
                // (later accesses are farther still): it goes unasked, so a
                // window bounds the history whatever the order answers.
                if !near {
                    *slot = None;
                    pruned = true;
                    return;
                }
                let candidate = conflicts && best.is_none_or(|(b, _, _)| s.id > b.id);
                if !candidate && !prunable {
                    return;
                }
                if ordered(thread, s.clock, s.id) {
                    if prunable {
                        *slot = None;
                        pruned = true;
                    }
                } else if candidate {
                    best = Some((s, thread, op));
                }
            };
            check(&mut e.write, Op::Write, true, is_write);
            check(&mut e.read, Op::Read, is_write, true);
        }
        if pruned {
            entries.retain(|e| e.write.is_some() || e.read.is_some());
        }
        let stamp = Stamp {
            id,
            loc: ev.loc,
            clock,
        };
        match entries.iter_mut().find(|e| e.thread == ev.thread) {
            Some(e) if is_write => e.write = Some(stamp),
            Some(e) => e.read = Some(stamp),
            None => entries.push(Entry {
                thread: ev.thread,
                write: is_write.then_some(stamp),
                read: (!is_write).then_some(stamp),
            }),
        }
        best.map(|(s, t, op)| Race {
            first: Access {
                id: s.id,
                thread: t,
                op,
                loc: s.loc,
            },
            second: Access::of(id, ev),
            variable: ev.target,
        })
    }
}

/// Whether access `earlier` pairs with access `current` under `window`
/// (less than K events apart).
#[inline]
pub(crate) fn in_window(window: Option<u64>, current: EventId, earlier: EventId) -> bool {
    window.is_none_or(|k| ((current - earlier) as u64) < k)
}
