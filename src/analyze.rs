//! Relation × engine dispatch for `cprace analyze`.

use std::path::Path;

use anyhow::{Result, bail};

use crate::po::ProgramOrder;
use crate::report::Report;
use crate::trace::{self, Format, Names};

/// The relations cprace decides races for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Relation {
    /// Thread order only: every conflicting cross-thread pair races (upper bound).
    Po,
    /// Happens-before (Java memory model): program order, release -> later
    /// acquire, fork/join, volatile write -> later read. Sound and precise.
    Hb,
    /// Eraser's lockset discipline (unsound: violations, not proven races).
    Lockset,
}

/// What to analyse and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// The relation.
    pub relation: Relation,
    /// Engine name; None picks the relation's default.
    pub engine: Option<String>,
    /// Window K (None: whole trace).
    pub window: Option<u64>,
    /// Input format (None: detect).
    pub input_format: Option<Format>,
}

/// Engines available for `relation`, the default first.
pub fn engines(relation: Relation) -> &'static [&'static str] {
    match relation {
        Relation::Po => &["stream"],
        Relation::Hb => crate::hb::HB_ENGINES,
        Relation::Lockset => crate::hb::LOCKSET_ENGINES,
    }
}

/// Analyse the trace at `path`.
pub fn analyze_path(path: &Path, opts: &Options) -> Result<(Report, Names)> {
    let available = engines(opts.relation);
    let engine = opts.engine.as_deref().unwrap_or(available[0]);
    if !available.contains(&engine) {
        bail!(crate::UsageError(format!(
            "relation `{:?}` has no engine `{engine}`; expected one of: {}",
            opts.relation,
            available.join(", ")
        )));
    }
    match opts.relation {
        Relation::Po => {
            let mut po = ProgramOrder::new(opts.window);
            let (names, _, _) = trace::stream(path, opts.input_format, |id, ev| po.event(id, ev))?;
            Ok((po.finish(), names))
        }
        Relation::Hb => crate::hb::analyze_hb(path, engine, opts.window, opts.input_format),
        Relation::Lockset => crate::hb::analyze_lockset(path, engine, opts.window, opts.input_format),
    }
}
