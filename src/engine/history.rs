//! Per-variable access history shared by the exact race checkers.
//!
//! Every exact engine answers the same question for each access `e2`: is
//! some earlier conflicting access `e1` of another thread (within the window)
//! left unordered? Orderings are closed under program order on the left, so only
//! the latest read and the latest write of each thread need checking, per
//! shape: the bytes touched and whether the access is atomic (two accesses
//! conflict only when their bytes overlap and not both are atomic, see
//! [`Event::conflicts`]). The latest unordered one becomes the race witness,
//! so all engines pick the same witness.

use std::num::NonZeroU32;

use smallvec::SmallVec;

use crate::report::{Access, Race};
use crate::trace::{Event, EventId, Op, ThreadId};

/// One remembered access: its event, location, and the performing thread's
/// local clock at it (the value orderings are tested against). The event
/// id is kept plus one, so that "no access" costs no extra word: an entry is
/// 32 bytes, not 40, and every variable has at least one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Event id + 1 (ids are below `u32::MAX`: the loaders stop there).
    id1: NonZeroU32,
    /// Location id.
    pub loc: u32,
    /// Clock of the performing thread at the access.
    pub clock: u32,
}

impl Stamp {
    fn new(id: EventId, loc: u32, clock: u32) -> Stamp {
        debug_assert!(id < u32::MAX);
        Stamp {
            id1: NonZeroU32::MIN.saturating_add(id),
            loc,
            clock,
        }
    }

    /// Event id.
    #[inline]
    pub(crate) fn id(&self) -> EventId {
        self.id1.get() - 1
    }
}

/// The latest write and read of one thread, of one shape.
#[derive(Clone, Copy, Debug)]
struct Entry {
    thread: ThreadId,
    write: Option<Stamp>,
    read: Option<Stamp>,
    /// Bytes of the variable the accesses touched (0xff: all).
    mask: u8,
    /// Atomic accesses (else plain).
    atomic: bool,
    /// The ops of `write` and `read` (an atomic entry holds `vw` and `aw`
    /// alike, and a witness names its own op).
    wop: Op,
    rop: Op,
}

/// Whether an earlier access of kind (`s_write`, `s_atomic`) ordered before
/// this access (`write`, `atomic`, which touches every byte the earlier one
/// did) may be forgotten: every access conflicting with the earlier one
/// conflicts with this one, which is later and unordered with it whenever
/// the earlier one is, so the earlier one is never the witness again.
#[inline(always)]
fn covers(write: bool, atomic: bool, s_write: bool, s_atomic: bool) -> bool {
    match (s_atomic, s_write) {
        // Conflicts with writes of every kind: only a plain access does too.
        (false, false) => !atomic,
        // Conflicts with everything: only a plain write does too.
        (false, true) => write && !atomic,
        // Conflicts with plain writes: so does every access.
        (true, false) => true,
        // Conflicts with plain accesses: so does every write.
        (true, true) => write,
    }
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

    /// Check access `ev` (event `id`, local clock `clock`) against the
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
        debug_assert!(ev.op.is_memory());
        let v = ev.target as usize;
        if self.vars.len() <= v {
            self.vars.resize(v + 1, Entries::new());
        }
        let entries = &mut self.vars[v];
        let is_write = ev.op.is_write();
        let atomic = ev.op.is_atomic();
        let mask = ev.bytes();
        let mut best: Option<(Stamp, ThreadId, Op)> = None;
        let mut pruned = false;
        for e in entries.iter_mut() {
            if e.thread == ev.thread || e.mask & mask == 0 {
                continue;
            }
            let thread = e.thread;
            let window = self.window;
            // Entries touching bytes this access does not may still be the
            // witness of a later access to those bytes: never dropped.
            let inside = e.mask & !mask == 0;
            // Two atomic accesses never conflict.
            let may_conflict = !(atomic && e.atomic);
            // Whether stamp `s` stays: an access ordered before this one is
            // dropped when this access conflicts with everything it conflicts
            // with (see `covers`): every later access unordered with it is
            // unordered with this later, conflicting access too (or is of
            // this thread, hence ordered), so it would never be the witness
            // again. That keeps a variable's history to its mutually
            // unordered accesses (100,000 threads passing a lock leave one
            // entry, not 100,000).
            let mut check = |slot: &mut Option<Stamp>, op: Op, conflicts: bool, prunable: bool| {
                let Some(s) = *slot else { return };
                if !conflicts && !prunable {
                    return;
                }
                let near = in_window(window, id, s.id());
                // A stamp K or more events back is never a witness again
                // (later accesses are farther still): it goes unasked, so a
                // window bounds the history whatever the order answers.
                if !near {
                    *slot = None;
                    pruned = true;
                    return;
                }
                let candidate = conflicts && best.is_none_or(|(b, _, _)| s.id() > b.id());
                if !candidate && !prunable {
                    return;
                }
                if ordered(thread, s.clock, s.id()) {
                    if prunable {
                        *slot = None;
                        pruned = true;
                    }
                } else if candidate {
                    best = Some((s, thread, op));
                }
            };
            let (wop, rop, ea) = (e.wop, e.rop, e.atomic);
            check(
                &mut e.write,
                wop,
                may_conflict,
                inside && covers(is_write, atomic, true, ea),
            );
            check(
                &mut e.read,
                rop,
                may_conflict && is_write,
                inside && covers(is_write, atomic, false, ea),
            );
        }
        if pruned {
            entries.retain(|e| e.write.is_some() || e.read.is_some());
        }
        let stamp = Stamp::new(id, ev.loc, clock);
        match entries
            .iter_mut()
            .find(|e| e.thread == ev.thread && e.mask == mask && e.atomic == atomic)
        {
            Some(e) if is_write => {
                e.write = Some(stamp);
                e.wop = ev.op;
            }
            Some(e) => {
                e.read = Some(stamp);
                e.rop = ev.op;
            }
            None => entries.push(Entry {
                thread: ev.thread,
                write: is_write.then_some(stamp),
                read: (!is_write).then_some(stamp),
                mask,
                atomic,
                wop: ev.op,
                rop: ev.op,
            }),
        }
        best.map(|(s, t, op)| Race {
            first: Access {
                id: s.id(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_with_one_thread_costs_48_bytes() {
        // Every variable has its entries; most have one, kept inline.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<Entries>(), 48);
    }

    #[test]
    fn stamps_keep_every_event_id() {
        for id in [0, 1, 12345, u32::MAX - 1] {
            assert_eq!(Stamp::new(id, 3, 4).id(), id);
        }
    }
}
