//! A thread's clock at a release, kept without copying it.

use std::sync::Arc;

use super::VectorClock;

/// Thread `thread`'s clock at a release (or an atomic access): `base`, a
/// snapshot of its clock shared by every release it made since its clock
/// last learned of another thread, with its own entry raised to `own` (its
/// own ticks being the only change since the snapshot). A clone of the live
/// clock instead would cost a copy of its changed path at the thread's next
/// tick, once per release: a worker setting a million atomics would keep a
/// million. The snapshot is behind one pointer, so that a published clock
/// is 16 bytes: detectors keep one per atomic (30 million in a C++ test
/// suite), where an inline clock made each 48.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    /// The thread's snapshot (its own entry possibly below `own`).
    pub base: Arc<VectorClock>,
    /// The releasing thread.
    pub thread: u32,
    /// Its own entry at the release.
    pub own: u32,
}

impl Published {
    /// Thread `thread`'s clock now, with own entry `own`: `snap` is the
    /// thread's snapshot, taken with `take` when it holds none (the owner
    /// empties it whenever the clock learns of another thread).
    pub(crate) fn of(
        snap: &mut Option<Arc<VectorClock>>,
        thread: u32,
        own: u32,
        take: impl FnOnce() -> VectorClock,
    ) -> Published {
        Published {
            base: Arc::clone(snap.get_or_insert_with(|| Arc::new(take()))),
            thread,
            own,
        }
    }

    /// Whether `c` already holds this clock (`c ⊔ self = c`).
    pub(crate) fn covered_by(&self, c: &VectorClock) -> bool {
        c.get(self.thread) >= self.own && c.covers(&self.base)
    }

    /// `c ⊔= self`.
    pub(crate) fn join_into(&self, c: &mut VectorClock) {
        c.join(&self.base);
        c.raise(self.thread, self.own);
    }

    /// The clock itself.
    pub(crate) fn to_clock(&self) -> VectorClock {
        let mut c = VectorClock::clone(&self.base);
        c.raise(self.thread, self.own);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_clock_is_two_words() {
        // Detectors keep one per atomic variable: its size is their memory.
        assert_eq!(std::mem::size_of::<Published>(), 16);
        assert_eq!(std::mem::size_of::<Option<Published>>(), 16);
    }

    #[test]
    fn a_published_clock_is_its_snapshot_with_its_own_entry() {
        let mut snap = None;
        let mut h = VectorClock::default();
        h.set(0, 3);
        h.set(20, 7);
        let a = Published::of(&mut snap, 0, 3, || h.clone());
        // Own ticks since the snapshot: the same snapshot, a higher entry.
        let b = Published::of(&mut snap, 0, 5, || unreachable!("snapshot kept"));
        assert!(Arc::ptr_eq(&a.base, &b.base));
        let c = b.to_clock();
        assert_eq!((c.get(0), c.get(20), c.get(1)), (5, 7, 0));
        let mut d = VectorClock::default();
        d.set(1, 2);
        assert!(!a.covered_by(&d));
        a.join_into(&mut d);
        assert_eq!((d.get(0), d.get(1), d.get(20)), (3, 2, 7));
        // Covered once joined; the own entry alone can still teach.
        assert!(a.covered_by(&d));
        assert!(!b.covered_by(&d));
    }
}
