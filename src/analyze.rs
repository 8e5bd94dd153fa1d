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
    /// Happens-before (CP paper, Definition 1; fork/join and volatile write ->
    /// read edges included).
    Hb,
    /// Causally-precedes (CP paper, Definition 2), windowed by default.
    Cp,
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
        Relation::Hb => &["reference"],
        Relation::Cp => &["reference"],
    }
}

/// Window of `relation` when `--window` is not given: K = 1000 for CP (the
/// paper used 500 and 1000; `--window none` is exact CP), none otherwise.
pub fn default_window(relation: Relation) -> Option<u64> {
    match relation {
        Relation::Cp => Some(1000),
        _ => None,
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
        Relation::Hb if engine == "reference" => {
            let t = trace::load(path, opts.input_format)?;
            let report = crate::reference::hb::analyze(&t, opts.window)?;
            Ok((report, t.names))
        }
        Relation::Cp if engine == "reference" => {
            let t = trace::load(path, opts.input_format)?;
            let report = crate::reference::cp::analyze(&t, opts.window)?;
            Ok((report, t.names))
        }
        Relation::Hb | Relation::Cp => bail!(crate::UsageError(format!("engine `{engine}` is not available"))),
    }
}
