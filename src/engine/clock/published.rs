//! A thread's clock at a release, kept without copying it.

use super::VectorClock;

/// Thread `thread`'s clock at a release (or an atomic access): `base`, a
/// snapshot of its clock shared by every release it made since its clock
/// last learned of another thread, with its own entry raised to `own` (its
/// own ticks being the only change since the snapshot). A clone of the live
/// clock instead would cost a copy of its changed path at the thread's next
/// tick, once per release: a worker setting a million atomics would keep a
/// million.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    /// The thread's snapshot (its own entry possibly below `own`).
    pub base: VectorClock,
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
        snap: &mut Option<VectorClock>,
        thread: u32,
        own: u32,
        take: impl FnOnce() -> VectorClock,
    ) -> Published {
        Published {
            base: snap.get_or_insert_with(take).clone(),
            thread,
            own,
        }
    }

    /// `c ⊔= self`.
    pub(crate) fn join_into(&self, c: &mut VectorClock) {
        c.join(&self.base);
        c.raise(self.thread, self.own);
    }

    /// The clock itself.
    pub(crate) fn to_clock(&self) -> VectorClock {
        let mut c = self.base.clone();
        c.raise(self.thread, self.own);
        c
    }
}
