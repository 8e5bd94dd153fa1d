//! The happens-before relation and its engines.
//!
//! HB is the smallest partial order containing program order, `rel(l)` before
//! every later `acq(l)`, `fork(t,u)` before u's first event, u's last event
//! before `join(t,u)`, and `vw(v)` before every later `vr(v)` (Java memory
//! model). A thread without events contributes no fork or join edge.
//!
//! Streaming engines of `--relation hb`, with per-thread, per-lock and
//! per-variable state only:
//!
//! - [`vc::VcDetector`] (`vc`, default): DJIT+-style vector clocks and the
//!   shared [`crate::engine::history::AccessHistory`]; the exact racy-event set.
//! - [`vc::TcDetector`] (`treeclock`, alias `tc`): the same algorithm with
//!   the tree clocks of Mathur et al. (ASPLOS 2022) for threads and locks;
//!   same racy events and witnesses as `vc`.
//! - [`epoch::EpochDetector`] (`epoch`): FastTrack2 (Flanagan & Freund 2017,
//!   Figure 1) with epochs packed in a `u64`. Exact up to and including the
//!   first race on each variable; see its docs for where later reports differ.
//! - [`goldilocks::GoldilocksDetector`] (`lockset`): Goldilocks (Elmas, Qadeer
//!   & Tasiran 2006) with lazily evaluated lockset rules over an update list and
//!   the two short-circuit checks; same guarantee as `epoch`.
//!
//! Engines over a loaded trace: [`datalog`] (the closure over synchronization
//! events in datafrog, windowed) and [`reference`] (`rules/hb.dl` via crepe).
//!
//! The unsound Eraser check (`--relation lockset`) is [`crate::race::lockset`].
//!
//! All exact engines report the same witness for a racy event (the latest
//! unordered conflicting access within the window), so their first race per
//! variable can be compared field by field.

pub mod datalog;
pub(crate) mod epoch;
pub(crate) mod goldilocks;
pub mod reference;
pub(crate) mod vc;

use crate::trace::Op;

pub use epoch::EpochDetector;
pub use goldilocks::GoldilocksDetector;
pub use vc::{TcDetector, VcDetector};

crate::impl_detector!(prefetch: VcDetector, TcDetector);
crate::impl_detector!(EpochDetector, GoldilocksDetector);

pub(crate) use crate::engine::history::in_window;

/// What an access is, for the per-shape state of `epoch` and `lockset`:
/// plain, volatile (`vr`, `vw`) or relaxed atomic (`ar`, `aw`). Both atomic
/// kinds conflict alike; they are kept apart so that a witness names its
/// own op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    Volatile,
    Relaxed,
}

impl Kind {
    #[inline]
    pub(crate) fn of(op: Op) -> Kind {
        match op {
            Op::VolatileRead | Op::VolatileWrite => Kind::Volatile,
            Op::AtomicRead | Op::AtomicWrite => Kind::Relaxed,
            _ => Kind::Plain,
        }
    }

    /// The write and read op of the shape.
    #[inline]
    pub(crate) fn ops(self) -> (Op, Op) {
        match self {
            Kind::Plain => (Op::Write, Op::Read),
            Kind::Volatile => (Op::VolatileWrite, Op::VolatileRead),
            Kind::Relaxed => (Op::AtomicWrite, Op::AtomicRead),
        }
    }
}
