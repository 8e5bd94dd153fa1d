//! Relation × engine dispatch for `cprace analyze` (and `sweep`, `query`).

use std::path::Path;

use anyhow::{Result, bail};

use crate::cp::Reporting;
use crate::po::ProgramOrder;
use crate::report::Report;
use crate::trace::{self, Format, Names, Trace};

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
    /// Causally-precedes (causally-precedes-2012), windowed.
    Cp,
    /// Weak-causally-precedes (wcp-2017): weaker than CP, so every CP race is a
    /// WCP race; linear-time vector clocks.
    Wcp,
    /// Schedulable happens-before (OOPSLA 2018): HB plus reads-from edges;
    /// every race it reports is a predictable race.
    Shb,
    /// Sync-preserving races (POPL 2021): exactly the races some reordering
    /// keeping every lock's critical sections in order exhibits.
    Syncp,
}

impl Relation {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Relation::Po => "po",
            Relation::Hb => "hb",
            Relation::Lockset => "lockset",
            Relation::Cp => "cp",
            Relation::Wcp => "wcp",
            Relation::Shb => "shb",
            Relation::Syncp => "syncp",
        }
    }
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
    pub reporting: Reporting,
}

impl Options {
    /// Options for `relation` with its default engine and window.
    pub fn new(relation: Relation) -> Options {
        Options {
            relation,
            engine: None,
            window: default_window(relation),
            input_format: None,
            reporting: Reporting::All,
        }
    }
}

/// Engines available for `relation`, the default first.
pub fn engines(relation: Relation) -> &'static [&'static str] {
    match relation {
        Relation::Po => &["stream"],
        Relation::Hb => &["vc", "epoch", "lockset", "datalog", "reference"],
        Relation::Lockset => &["eraser"],
        Relation::Cp => &["datalog", "reference", "compare"],
        Relation::Wcp => &["vc", "reference"],
        Relation::Shb => &["vc"],
        Relation::Syncp => &["closure"],
    }
}

/// The engine `opts` selects, checked against the relation's list.
fn engine(opts: &Options) -> Result<&str> {
    let available = engines(opts.relation);
    let engine = opts.engine.as_deref().unwrap_or(available[0]);
    if !available.contains(&engine) {
        bail!(crate::UsageError(format!(
            "relation `{}` has no engine `{engine}`; expected one of: {}",
            opts.relation.name(),
            available.join(", ")
        )));
    }
    if opts.reporting != Reporting::All && !(opts.relation == Relation::Cp && engine == "datalog") {
        bail!(crate::UsageError(
            "--first-race and --order-races need --relation cp --engine datalog".into()
        ));
    }
    Ok(engine)
}

/// Analyse the trace at `path`. Streaming engines never load the whole trace.
pub fn analyze_path(path: &Path, opts: &Options) -> Result<(Report, Names)> {
    // Check the engine before reading a possibly huge file.
    let engine = engine(opts)?;
    let (window, format) = (opts.window, opts.input_format);
    crate::progress::phase(format!(
        "{} {engine}: loading and analysing in one pass",
        opts.relation.name()
    ));
    match (opts.relation, engine) {
        (Relation::Po, _) => {
            let mut po = ProgramOrder::new(window);
            let (names, _, _) = trace::stream(path, format, |id, ev| po.event(id, ev))?;
            return Ok((po.finish(), names));
        }
        (Relation::Hb, "vc" | "epoch" | "lockset") => {
            return crate::hb::analyze_hb(path, engine, window, format);
        }
        (Relation::Lockset, _) => return crate::hb::analyze_lockset(path, engine, window, format),
        (Relation::Wcp, "vc") => return Ok(crate::wcp::analyze_path(path, format, window)?),
        (Relation::Shb, _) => {
            return Ok(crate::detector::run_path(
                crate::shb::ShbDetector::new(window),
                path,
                format,
            )?);
        }
        _ => {}
    }
    let t = trace::load(path, opts.input_format)?;
    let report = analyze_trace(&t, opts)?;
    Ok((report, t.names))
}

/// Analyse a loaded trace.
pub fn analyze_trace(t: &Trace, opts: &Options) -> Result<Report> {
    let engine = engine(opts)?;
    crate::progress::phase(format!("{} {engine}: analysing", opts.relation.name()));
    Ok(match (opts.relation, engine) {
        (Relation::Po, _) => {
            let mut po = ProgramOrder::new(opts.window);
            for (i, ev) in t.events.iter().enumerate() {
                po.event(i as u32, ev);
            }
            po.finish()
        }
        (Relation::Hb, "reference") => crate::reference::hb::analyze(t, opts.window)?,
        (Relation::Hb, "datalog") => crate::cp::hb_closure::analyze(t, opts.window),
        (Relation::Hb | Relation::Lockset, _) => crate::hb::hb_trace(engine, opts.window, t)?,
        (Relation::Cp, "reference") => crate::reference::cp::analyze(t, opts.window)?,
        (Relation::Cp, "compare") => compare_cp(t, opts)?,
        (Relation::Cp, _) => crate::cp::analyze(t, opts.window, opts.reporting),
        (Relation::Wcp, "reference") => {
            if t.len() > crate::wcp::reference::MAX_EVENTS {
                bail!(crate::UsageError(format!(
                    "the wcp reference engine evaluates Definition 3 over all event pairs and accepts at most {} \
                     events; this trace has {}; use --engine vc",
                    crate::wcp::reference::MAX_EVENTS,
                    t.len()
                )));
            }
            crate::wcp::reference::analyze(t, opts.window)
        }
        (Relation::Wcp, _) => crate::wcp::vc::analyze(t, opts.window),
        (Relation::Shb, _) => {
            crate::detector::run_trace(crate::shb::ShbDetector::new(opts.window), t)
        }
        (Relation::Syncp, _) => crate::syncp::analyze(t, opts.window),
    })
}

/// `--engine compare`: run `datalog` and `reference` and fail with exit code 3
/// naming the first differing event, like polonius' Compare mode.
fn compare_cp(t: &Trace, opts: &Options) -> Result<Report> {
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
