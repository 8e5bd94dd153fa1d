//! The happens-before relation and its detectors, plus the Eraser baseline.
//!
//! HB is the smallest partial order containing program order, `rel(l)` before
//! every later `acq(l)`, `fork(t,u)` before u's first event, u's last event
//! before `join(t,u)`, and `vw(v)` before every later `vr(v)` (Java memory
//! model). A thread without events contributes no fork or join edge.
//!
//! Engines of `--relation hb`, all streaming with per-thread, per-lock and
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
//! `--relation lockset` is [`eraser::EraserDetector`] (`eraser`): the unsound
//! lockset-discipline check, whose racy events contain HB's.
//!
//! All exact engines report the same witness for a racy event (the latest
//! unordered conflicting access within the window), so their first race per
//! variable can be compared field by field.

pub mod datalog;
pub mod epoch;
pub mod goldilocks;
pub mod reference;
pub mod vc;

use std::path::Path;

use anyhow::{Result, bail};

use crate::report::Report;
use crate::trace::{EventId, Format, Names, Op, Trace};

pub use crate::race::lockset::EraserDetector;
pub use epoch::EpochDetector;
pub use goldilocks::GoldilocksDetector;
pub use vc::{TcDetector, VcDetector};

/// Engines of `--relation hb`, the default first.
pub const HB_ENGINES: &[&str] = &["vc", "epoch", "lockset", "treeclock"];
/// Engines of `--relation lockset`.
pub const LOCKSET_ENGINES: &[&str] = &["eraser"];

pub use crate::engine::detector::{Detector, run_trace};

crate::impl_detector!(
    VcDetector,
    TcDetector,
    EpochDetector,
    GoldilocksDetector,
    EraserDetector
);

/// Run detector `d` over the trace at `path` in one streaming pass (parsing and
/// detection on two threads); `keep` says where races go as they are found.
pub fn stream_path<D: Detector + Send>(
    d: D,
    path: &Path,
    format: Option<Format>,
    keep: crate::report::Keep,
) -> Result<(Report, Names)> {
    Ok(crate::engine::detector::run_path(d, path, format, keep)?)
}

/// Analyse `path` with HB engine `engine` (one of [`HB_ENGINES`]).
pub fn analyze_hb(
    path: &Path,
    engine: &str,
    window: Option<u64>,
    format: Option<Format>,
    keep: crate::report::Keep,
) -> Result<(Report, Names)> {
    match engine {
        "vc" => stream_path(VcDetector::new(window), path, format, keep),
        "treeclock" | "tc" => stream_path(TcDetector::new(window), path, format, keep),
        "epoch" => stream_path(EpochDetector::new(window), path, format, keep),
        "lockset" => stream_path(GoldilocksDetector::new(window), path, format, keep),
        other => bail!(crate::UsageError(format!(
            "relation `hb` has no engine `{other}`; expected one of: {}",
            HB_ENGINES.join(", ")
        ))),
    }
}

/// Analyse `path` with the Eraser lockset check.
pub fn analyze_lockset(
    path: &Path,
    engine: &str,
    window: Option<u64>,
    format: Option<Format>,
    keep: crate::report::Keep,
) -> Result<(Report, Names)> {
    match engine {
        "eraser" => stream_path(EraserDetector::new(window), path, format, keep),
        other => bail!(crate::UsageError(format!(
            "relation `lockset` has no engine `{other}`; expected one of: {}",
            LOCKSET_ENGINES.join(", ")
        ))),
    }
}

/// Run HB engine `engine` over an in-memory trace (tests, benchmarks).
/// Unknown engine names are a usage error.
pub fn hb_trace(engine: &str, window: Option<u64>, trace: &Trace) -> Result<Report> {
    Ok(match engine {
        "vc" => run_trace(VcDetector::new(window), trace),
        "treeclock" | "tc" => run_trace(TcDetector::new(window), trace),
        "epoch" => run_trace(EpochDetector::new(window), trace),
        "lockset" => run_trace(GoldilocksDetector::new(window), trace),
        "eraser" => run_trace(EraserDetector::new(window), trace),
        other => bail!(crate::UsageError(format!(
            "unknown HB/lockset engine `{other}`; expected one of: vc, epoch, lockset, treeclock, eraser"
        ))),
    })
}

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

/// Whether access `earlier` pairs with access `current` under `window`
/// (less than K events apart).
#[inline]
pub(crate) fn in_window(window: Option<u64>, current: EventId, earlier: EventId) -> bool {
    window.is_none_or(|k| ((current - earlier) as u64) < k)
}
