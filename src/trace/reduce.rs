//! Dropping repeated accesses that cannot change an HB or WCP report.
//!
//! An access `e'` that repeats the access `e` before it to the same
//! variable — same thread, same kind (read or write), same bytes, same
//! location and call stack — with no other event of that thread but plain
//! accesses (to other variables) in between,
//! races with exactly the events `e` races with, for HB and for WCP, and a
//! detector that reports each racy event with one earlier access picks the
//! same location pair for it (no access to the variable comes between `e`
//! and `e'`, so `e'` has `e`'s candidates; after `e'`, `e` stands where
//! `e'` stood, with its thread, clock, location and stack, still the
//! thread's latest access to it). So the location pairs reported are the
//! same without it:
//!
//! - Its predecessors include `e`'s (program order composes with both
//!   relations), so an event unordered with `e'` is unordered with `e`.
//! - Both relations leave a thread only through its synchronization
//!   events (HB: releases and forks; WCP: releases, whose ordering rule
//!   looks at whole critical sections, and `e`, `e'` sit in the same one),
//!   and the thread has none between `e` and `e'`: `e` and `e'` have the
//!   same successors in other threads.
//! - An event between them in another thread is ordered after `e` only
//!   through such a synchronization event, so it is unordered with both.
//! - Nothing else depends on `e'`: it conflicts with what `e` conflicts
//!   with (same variable, kind and bytes), inside the same critical
//!   sections, so WCP's rule (a) finds `e` wherever it would find `e'`.
//!
//! The argument fails for relations that order through reads-from (SHB,
//! SyncP, deadlock prediction: a write of the thread between `e` and `e'`
//! that another thread reads gives `e` successors `e'` lacks) and for
//! windows measured in events (CP's), so only `record --analyze hb|wcp`
//! without `-o` reduces; every trace file written keeps every event.
//!
//! The reduction keeps a fixed-size cache of recent accesses (a miss keeps
//! the event: fewer drops, never a wrong one) and 8 bytes per variable
//! (which thread touched it last, and how many times that changed).

use super::model::{Event, Op, Trace};

/// Recent accesses held (a power of two).
const ENTRIES: usize = 1 << 14;

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Entry {
    site: u64,
    target: u32,
    thread: u32,
    /// The thread's epoch plus one (0: empty).
    epoch: u32,
    stack: u32,
    /// The variable's count of changes of accessing thread.
    turn: u32,
    mask: u8,
    write: bool,
}

/// Decides, event by event in trace order, which plain accesses repeat the
/// access just before them to the same variable, with nothing of their
/// thread in between but accesses to other variables (see the module
/// documentation).
pub struct Reducer {
    /// Per thread: other events seen so far (starts a new epoch).
    epochs: Vec<u32>,
    cache: Box<[Entry]>,
    /// Per variable: the last thread to access it (plus one) and how many
    /// times the accessing thread changed.
    vars: Vec<(u32, u32)>,
    /// Accesses found repeated.
    pub dropped: u64,
}

impl Default for Reducer {
    fn default() -> Self {
        Reducer {
            epochs: Vec::new(),
            cache: vec![Entry::default(); ENTRIES].into_boxed_slice(),
            vars: Vec::new(),
            dropped: 0,
        }
    }
}

impl Reducer {
    /// A plain access of `thread` (`mask`: the bytes; `site`: its location
    /// or pc; `stack`: its call stack): true when it repeats the access
    /// just before it to the variable, and can be dropped.
    #[inline]
    pub fn repeat(
        &mut self,
        thread: u32,
        write: bool,
        target: u32,
        mask: u8,
        site: u64,
        stack: u32,
    ) -> bool {
        let turn = self.touch(thread, target);
        let e = Entry {
            site,
            target,
            thread,
            // Below u32::MAX (see `other`): 0 stays the empty entry's.
            epoch: *self.epoch(thread) + 1,
            stack,
            turn,
            mask,
            write,
        };
        // The slot is the thread's and the variable's: it holds the thread's
        // latest access to the variable, so any other access of the thread
        // to it in between ends the repeats (a detector picks the latest of
        // the thread's read and write as a race's witness).
        let h = (u64::from(target) ^ u64::from(thread) << 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.cache[(h >> 50) as usize & (ENTRIES - 1)];
        if *slot == e {
            self.dropped += 1;
            return true;
        }
        *slot = e;
        false
    }

    /// An access of `thread` to `target` that is not a candidate (an atomic
    /// one, a cell of a range): an access of another thread ends the
    /// repeats of the variable. Returns the variable's turn count.
    #[inline]
    pub fn touch(&mut self, thread: u32, target: u32) -> u32 {
        let v = target as usize;
        if v >= self.vars.len() {
            self.vars.resize((v + 1).max(self.vars.len() * 2), (0, 0));
        }
        let slot = &mut self.vars[v];
        if slot.0 != thread + 1 {
            *slot = (thread + 1, slot.1.wrapping_add(1));
            // A count that wrapped could match an entry 2^32 turns old.
            if slot.1 == 0 {
                self.cache.fill(Entry::default());
            }
        }
        slot.1
    }

    /// `thread`'s count of events other than plain accesses.
    #[inline]
    fn epoch(&mut self, thread: u32) -> &mut u32 {
        let t = thread as usize;
        if t >= self.epochs.len() {
            self.epochs.resize(t + 1, 0);
        }
        &mut self.epochs[t]
    }

    /// Any event of `thread` but a plain access (synchronization, atomic
    /// accesses): the accesses before it are no longer repeated by the
    /// ones after it.
    #[inline]
    pub fn other(&mut self, thread: u32) {
        // Wrapping after 2^32 events of one thread could revive an entry
        // 2^32 epochs old: the cache is cleared then.
        let epoch = self.epoch(thread);
        *epoch += 1;
        if *epoch == u32::MAX {
            *epoch = 0;
            self.cache.fill(Entry::default());
        }
    }

    /// Whether to keep trace event `ev` (a repeated plain access is not).
    pub fn keep(&mut self, ev: &Event) -> bool {
        match ev.op {
            Op::Read | Op::Write => !self.repeat(
                ev.thread,
                ev.op == Op::Write,
                ev.target,
                ev.mask,
                u64::from(ev.loc),
                0,
            ),
            op => {
                if op.target_kind() == super::model::TargetKind::Variable {
                    self.touch(ev.thread, ev.target);
                }
                self.other(ev.thread);
                true
            }
        }
    }
}

/// `t` without its repeated accesses (see the module documentation).
pub fn reduce(t: &Trace) -> Trace {
    let mut r = Reducer::default();
    Trace {
        events: t.events.iter().copied().filter(|e| r.keep(e)).collect(),
        names: t.names.clone(),
        stats: t.stats.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_dropped_until_the_variable_or_the_thread_does_something_else() {
        let mut r = Reducer::default();
        assert!(!r.repeat(0, true, 7, 0xff, 10, 0));
        assert!(r.repeat(0, true, 7, 0xff, 10, 0));
        // Another kind, location, stack or bytes: not a repeat, and the
        // thread's latest access to the variable from then on.
        assert!(!r.repeat(0, false, 7, 0xff, 10, 0));
        assert!(!r.repeat(0, true, 7, 0xff, 10, 0));
        assert!(!r.repeat(0, true, 7, 0xff, 11, 0));
        assert!(!r.repeat(0, true, 7, 0xff, 11, 3));
        assert!(!r.repeat(0, true, 7, 0x0f, 11, 3));
        assert!(r.repeat(0, true, 7, 0x0f, 11, 3));
        // Other variables and other threads' synchronization in between
        // change nothing.
        assert!(!r.repeat(0, true, 8, 0xff, 12, 0));
        r.other(1);
        assert!(r.repeat(0, true, 7, 0x0f, 11, 3));
        // The thread's own synchronization does.
        r.other(0);
        assert!(!r.repeat(0, true, 7, 0x0f, 11, 3));
        assert!(r.repeat(0, true, 7, 0x0f, 11, 3));
        // So does another thread's access to the variable, even atomic.
        r.touch(1, 7);
        assert!(!r.repeat(0, true, 7, 0x0f, 11, 3));
        assert!(!r.repeat(1, true, 7, 0x0f, 11, 3));
        assert_eq!(r.dropped, 4);
    }
}
