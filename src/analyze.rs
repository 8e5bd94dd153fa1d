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
    /// Causally-precedes (causally-precedes-2012), windowed.
    Cp,
}

/// The window a relation uses when `--window` is not given.
pub fn default_window(relation: Relation) -> Option<u64> {
    match relation {
        Relation::Cp => Some(crate::cp::DEFAULT_WINDOW),
        _ => None,
    }
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
    /// Which races to report (CP).
    pub reporting: crate::cp::Reporting,
}

/// Engines available for `relation`, the default first.
pub fn engines(relation: Relation) -> &'static [&'static str] {
    match relation {
        Relation::Po => &["stream"],
        Relation::Hb => &["reference"],
        Relation::Cp => &["datalog", "reference", "compare"],
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
        Relation::Hb => {
            let t = trace::load(path, opts.input_format)?;
            let report = crate::reference::hb::analyze(&t, opts.window)?;
            Ok((report, t.names))
        }
        Relation::Cp => {
            if engine != "datalog" && opts.reporting != crate::cp::Reporting::All {
                bail!(crate::UsageError(format!(
                    "--first-race and --order-races need --engine datalog, not `{engine}`"
                )));
            }
            let t = trace::load(path, opts.input_format)?;
            let report = match engine {
                "reference" => crate::reference::cp::analyze(&t, opts.window)?,
                "compare" => compare_cp(&t, opts)?,
                _ => crate::cp::analyze(&t, opts.window, opts.reporting),
            };
            Ok((report, t.names))
        }
    }
}

/// `--engine compare`: run `datalog` and `reference` and fail with exit code 3
/// naming the first differing event, like polonius' Compare mode.
fn compare_cp(t: &crate::trace::Trace, opts: &Options) -> Result<Report> {
    let fast = crate::cp::analyze(t, opts.window, opts.reporting);
    let reference = crate::reference::cp::analyze(t, opts.window)?;
    if let Err(diff) = crate::reference::compare(&fast, &reference) {
        bail!(crate::ExitStatus(3, format!("CP engines disagree: {diff}")));
    }
    let mut report = fast;
    report.engine = "compare".into();
    report
        .notes
        .push("datalog and reference engines agree".into());
    Ok(report)
}
