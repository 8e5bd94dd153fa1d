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
    /// Weak-causally-precedes (wcp-2017): HB weakened to the lock orderings a
    /// reordering must keep; linear-time vector clocks.
    Wcp,
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
        Relation::Wcp => &["vc", "reference"],
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
        Relation::Wcp if engine == "reference" => {
            let t = trace::load(path, opts.input_format)?;
            if t.len() > crate::wcp::reference::MAX_EVENTS {
                bail!(crate::UsageError(format!(
                    "the wcp reference engine evaluates Definition 3 over all event pairs and accepts at most {} \
                     events; this trace has {}; use --engine vc",
                    crate::wcp::reference::MAX_EVENTS,
                    t.len()
                )));
            }
            Ok((crate::wcp::reference::analyze(&t, opts.window), t.names))
        }
        Relation::Wcp => Ok(crate::wcp::analyze_path(path, opts.input_format, opts.window)?),
    }
}
