//! Race prediction: each relation in its own module with its engines, and
//! the relation × engine dispatch `cprace analyze`, `sweep` and `query` go
//! through. Which engines a relation has is [`Relation::engines`]; every
//! engine fills one [`Report`].

pub mod cp;
pub mod hb;
pub mod lockset;
pub(crate) mod po;
pub(crate) mod shb;
pub(crate) mod syncp;
pub mod wcp;

use std::path::{Path, PathBuf};

use crate::engine::detector::{self, Detector};
use crate::race::cp::Reporting;
use crate::race::po::ProgramOrder;
use crate::relation::{Engine, Relation};
use crate::report::{Keep, Layout, OutputFormat, Race, Report};
use crate::trace::{self, Format, LoadError, Names, Trace};
use crate::{Error, Result};

/// The window a relation uses when `--window` is not given.
pub fn default_window(relation: Relation) -> Option<u64> {
    match relation {
        Relation::Cp => Some(crate::race::cp::DEFAULT_WINDOW),
        _ => None,
    }
}

/// What to analyse and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// The relation.
    pub relation: Relation,
    /// The engine; None picks the relation's default.
    pub engine: Option<Engine>,
    /// Window K bounding CP's reasoning (rule (w); None: exact CP). On the
    /// other relations it is an alias of `max_distance` (as `--window` is).
    pub window: Option<u64>,
    /// Report only pairs less than this many events apart (None: all).
    pub max_distance: Option<u64>,
    /// Input format (None: detect).
    pub input_format: Option<Format>,
    /// Which races to report (CP).
    pub reporting: Reporting,
    /// Where the report keeps races: collected, written to a temporary file
    /// as streaming engines find them (output formats that stream), or only
    /// counted (the summary).
    pub keep: crate::report::Keep,
}

impl Options {
    /// Options for `relation` with its default engine and window.
    pub fn new(relation: Relation) -> Options {
        Options {
            relation,
            engine: None,
            window: default_window(relation),
            max_distance: None,
            input_format: None,
            reporting: Reporting::All,
            keep: crate::report::Keep::Collect,
        }
    }
}

impl Options {
    /// The engine these options select, checked against the relation's
    /// engines; CP's reporting schemes need its `datalog` engine.
    fn engine(&self) -> Result<Engine> {
        let engine = self.relation.engine(self.engine)?;
        if self.reporting != Reporting::All
            && (self.relation, engine) != (Relation::Cp, Engine::Datalog)
        {
            return Err(Error::Usage(
                "--first-race and --order-races need --relation cp --engine datalog".into(),
            ));
        }
        Ok(engine)
    }
}

impl Options {
    /// The reporting distance: `max_distance`, or on relations other than CP
    /// the `window` it aliases.
    pub fn distance(&self) -> Option<u64> {
        match self.relation {
            Relation::Cp => self.max_distance,
            _ => self.max_distance.or(self.window),
        }
    }

    /// The reasoning window: CP's K; no other relation has one.
    pub(crate) fn reasoning_window(&self) -> Option<u64> {
        match self.relation {
            Relation::Cp => self.window,
            _ => None,
        }
    }

    /// Record in `report` the window and reporting distance it was made with
    /// (engines of the other relations see the distance as their `window`).
    fn stamp(&self, mut report: Report) -> Report {
        report.window = self.reasoning_window();
        report.max_distance = self.distance();
        report
    }
}

/// What `cprace analyze` asks for: the trace, the relation and engine, the
/// window and reporting distance as given, which races to report, the output
/// format (it decides where races are kept), and witnesses.
#[derive(Clone, Debug)]
pub struct Request {
    /// The trace (`-`: standard input).
    pub trace: PathBuf,
    /// Input format (None: detect).
    pub input_format: Option<Format>,
    /// The relation.
    pub relation: Relation,
    /// The engine; None picks the relation's default.
    pub engine: Option<Engine>,
    /// The window as given: None when not given, `Some(None)` for `none`.
    /// CP's reasoning window (the relation's default when not given); on the
    /// other relations an alias of `max_distance`.
    pub window: Option<Option<u64>>,
    /// The reporting distance as given: None when not given, `Some(None)`
    /// for `none` (every pair).
    pub max_distance: Option<Option<u64>>,
    /// Which races to report (CP).
    pub reporting: Reporting,
    /// The format the report will be written in.
    pub format: OutputFormat,
    /// How the text (or HTML) report lays the races out: with `witness`,
    /// only the races the report shows get one (unless `witness_out` asks
    /// for every race's).
    pub layout: Layout,
    /// Give each race a witness reordering (loads the whole trace).
    pub witness: bool,
    /// With `witness`: write each race's reordered trace into this directory.
    pub witness_out: Option<PathBuf>,
    /// ThreadSanitizer suppressions: the races they match are dropped
    /// before witnesses and output ([`crate::suppress`]).
    pub suppressions: Option<crate::suppress::Suppressions>,
}

impl Request {
    /// Analyse `trace` with `relation`'s default engine and window, every
    /// race reported, for text output, without witnesses.
    pub fn new(trace: PathBuf, relation: Relation) -> Request {
        Request {
            trace,
            input_format: None,
            relation,
            engine: None,
            window: None,
            max_distance: None,
            reporting: Reporting::All,
            format: OutputFormat::Text,
            layout: Layout::default(),
            witness: false,
            witness_out: None,
            suppressions: None,
        }
    }

    /// The analysis options: the window and distance resolved (on relations
    /// other than CP, `window` is an alias of `max_distance` and giving both
    /// is a usage error), and where the report keeps its races.
    pub fn options(&self) -> Result<Options> {
        let relation = self.relation;
        let (window, max_distance) = match (relation, self.window, self.max_distance) {
            (Relation::Cp, w, d) => (w.unwrap_or(default_window(relation)), d.flatten()),
            (_, Some(_), Some(_)) => {
                return Err(Error::Usage(format!(
                    "on --relation {}, --window is an alias of --max-distance; give one of them",
                    relation.name()
                )));
            }
            (_, w, d) => (None, w.or(d).flatten()),
        };
        Ok(Options {
            relation,
            engine: self.engine,
            window,
            max_distance,
            input_format: self.input_format,
            reporting: self.reporting,
            // The summary needs only counts; other streaming formats
            // read the races back from a temporary file. Witnesses need
            // the whole report.
            keep: match self.format {
                _ if self.witness => Keep::Collect,
                // Suppressions filter the races, so they must be kept.
                OutputFormat::Summary if self.suppressions.is_some() => Keep::Spill,
                OutputFormat::Summary => Keep::Count,
                f if f.streams() => Keep::Spill,
                _ => Keep::Collect,
            },
        })
    }
}

/// Carry out `req`: the report and the trace's names. With witnesses, the
/// trace is loaded and each race gets one (written out when asked, with a
/// note saying where); otherwise streaming engines never hold the trace.
pub fn analyze(req: &Request) -> Result<(Report, Names)> {
    let opts = req.options()?;
    if !req.witness {
        let (mut report, names) = analyze_path(&req.trace, &opts)?;
        suppress(req, &mut report, &names)?;
        return Ok((report, names));
    }
    let t = trace::load(&req.trace, req.input_format)?;
    let mut report = analyze_trace(&t, &opts)?;
    suppress(req, &mut report, &t.names)?;
    // Witnesses for the races the report shows (a trace can have hundreds
    // of thousands of racy events in a few location pairs), or for every
    // race when the format shows them all or `--witness-out` writes them.
    let layout = req.format.shown(&req.layout);
    let shown = match layout {
        Some(l) if req.witness_out.is_none() && (!l.all || l.max_reports.is_some()) => Some(
            crate::report::shown_races(&report, &l)
                .map_err(Error::io("cannot read the races back"))?,
        ),
        _ => None,
    };
    match &shown {
        Some(races) => {
            let only = races.iter().map(|r| r.second.id).collect();
            crate::witness::attach_to(&mut report, &t, Some(&only));
        }
        None => crate::witness::attach(&mut report, &t),
    }
    if req.format == OutputFormat::Html {
        let firsts = match (shown, layout) {
            (Some(races), _) => races,
            (None, l) => crate::report::shown_races(&report, &l.unwrap_or_default())
                .map_err(Error::io("cannot read the races back"))?,
        };
        timelines(&mut report, &t, &firsts);
    }
    if let Some(dir) = &req.witness_out {
        let n = crate::witness::write_dir(&report, &t, dir)?;
        report.notes.push(format!(
            "wrote {n} reordered traces (witness, then the two racy events) to {}",
            dir.display()
        ));
    }
    Ok((report, t.names))
}

/// Each shown race's witness as runs of one thread (the HTML timeline),
/// named as the trace names threads and locations.
fn timelines(report: &mut Report, t: &Trace, shown: &[Race]) {
    let names = crate::witness::RunNames {
        who: &|th| t.names.thread(th).to_string(),
        site: &|e| {
            let loc = t.names.loc(t.events[e as usize].loc);
            if loc.is_empty() {
                format!("event {e}")
            } else {
                loc.to_string()
            }
        },
        top: &|_| None,
    };
    for r in shown {
        if let Some(w) = report.witness_of(r).flatten() {
            let runs = crate::witness::runs(t, w, r, &names);
            report.timelines.insert((r.first.id, r.second.id), runs);
        }
    }
}

/// Drop the races `req`'s suppressions match (reading the trace's call
/// stacks once more when it is a recorded program's).
fn suppress(req: &Request, report: &mut Report, names: &Names) -> Result<()> {
    let Some(supp) = &req.suppressions else {
        return Ok(());
    };
    let rec = if report.race_count() > 0 {
        trace::recorded_stacks(&req.trace, req.input_format)?
    } else {
        None
    };
    crate::suppress::apply::races(report, names, rec.as_ref(), supp)
        .map_err(Error::io("cannot filter the races"))
}

/// Analyse the trace at `path`. Streaming engines never load the whole trace.
/// Every report's `seconds` counter is an object of phases and `total`, in
/// seconds; engines without phases get `total` (loading included, as a
/// streaming engine's analysis overlaps it).
pub fn analyze_path(path: &Path, opts: &Options) -> Result<(Report, Names)> {
    let started = std::time::Instant::now();
    let (report, names) = analyze_path_untimed(path, opts)?;
    Ok((timed(opts, report, started), names))
}

/// `report` stamped with `opts`, and with the seconds since `started` when
/// it gives none of its own.
fn timed(opts: &Options, mut report: Report, started: std::time::Instant) -> Report {
    if !report.stats.contains_key("seconds") {
        report.stats.insert(
            "seconds".into(),
            serde_json::json!({"total": started.elapsed().as_secs_f64()}),
        );
    }
    opts.stamp(report)
}

fn analyze_path_untimed(path: &Path, opts: &Options) -> Result<(Report, Names)> {
    // Check the engine before reading a possibly huge file.
    let engine = opts.engine()?;
    let (window, format) = (opts.distance(), opts.input_format);
    crate::progress::phase(format!(
        "{} {engine}: loading and analysing in one pass",
        opts.relation
    ));
    let on_path = OnFeed {
        feed: detector::FromPath { path, format },
        keep: opts.keep,
    };
    if let Some(run) = streamed(opts, engine, on_path) {
        return Ok(run?);
    }
    if opts.relation == Relation::Po {
        let mut po = ProgramOrder::new(window);
        let (names, _, _) = trace::stream(path, format, |id, ev| po.event(id, ev))?;
        return Ok((po.finish(), names));
    }
    let t = trace::load(path, opts.input_format)?;
    let report = analyze_trace(&t, opts)?;
    Ok((report, t.names))
}

/// Analyse a loaded trace.
pub fn analyze_trace(t: &Trace, opts: &Options) -> Result<Report> {
    let engine = opts.engine()?;
    crate::progress::phase(format!("{} {engine}: analysing", opts.relation));
    let (window, distance) = (opts.reasoning_window(), opts.distance());
    if let Some(report) = streaming(opts.relation, engine, distance, OnTrace(t)) {
        return Ok(opts.stamp(report));
    }
    Ok(opts.stamp(match (opts.relation, engine) {
        (Relation::Po, _) => {
            let mut po = ProgramOrder::new(distance);
            for (i, ev) in t.events.iter().enumerate() {
                po.event(i as u32, ev);
            }
            po.finish()
        }
        (Relation::Hb, Engine::Reference) => crate::race::hb::reference::analyze(t, distance)?,
        (Relation::Hb, _) => crate::race::hb::datalog::analyze(t, distance),
        (Relation::Cp, Engine::Reference) => {
            crate::race::cp::reference::analyze_within(t, window, distance)?
        }
        (Relation::Cp, Engine::Compare) => compare_cp(t, opts)?,
        (Relation::Cp, _) if opts.keep != Keep::Collect => {
            crate::race::cp::analyze_spilled(t, window, distance, opts.reporting, opts.keep)?
        }
        (Relation::Cp, _) => crate::race::cp::analyze_within(t, window, distance, opts.reporting),
        (Relation::Wcp, _) => {
            if t.len() > crate::race::wcp::reference::MAX_EVENTS {
                return Err(Error::Usage(format!(
                    "the wcp reference engine evaluates Definition 3 over all event pairs and accepts at most {} \
                     events; this trace has {}; use --engine vc",
                    crate::race::wcp::reference::MAX_EVENTS,
                    t.len()
                )));
            }
            crate::race::wcp::reference::analyze(t, distance)
        }
        (Relation::Syncp, _) => crate::race::syncp::analyze(t, distance),
        (Relation::Lockset | Relation::Shb, _) => {
            unreachable!("{} {engine} is a streaming detector", opts.relation)
        }
        (Relation::Deadlock, _) => {
            return Err(Error::Usage(
                "deadlocks are not races: run `cprace deadlocks`".into(),
            ));
        }
    }))
}

/// Run the streaming detector of `relation`'s `engine` (reporting pairs less
/// than `distance` apart) with `run`; None when the engine is no streaming
/// detector. This is the one place that maps an engine to its detector.
fn streaming<R>(
    relation: Relation,
    engine: Engine,
    distance: Option<u64>,
    run: impl RunDetector<R>,
) -> Option<R> {
    use crate::race::hb::{EpochDetector, GoldilocksDetector, TcDetector, VcDetector};
    Some(match (relation, engine) {
        (Relation::Hb, Engine::Vc) => run.run(VcDetector::new(distance)),
        (Relation::Hb, Engine::TreeClock) => run.run(TcDetector::new(distance)),
        (Relation::Hb, Engine::Epoch) => run.run(EpochDetector::new(distance)),
        (Relation::Hb, Engine::Lockset) => run.run(GoldilocksDetector::new(distance)),
        (Relation::Lockset, Engine::Eraser) => {
            run.run(crate::race::lockset::EraserDetector::new(distance))
        }
        (Relation::Wcp, Engine::Vc) => run.run(crate::race::wcp::WcpVc::new(distance)),
        (Relation::Shb, Engine::Vc) => run.run(crate::race::shb::ShbDetector::new(distance)),
        (Relation::Syncp, Engine::Closure) => {
            run.run(crate::race::syncp::SyncpDetector::new(distance))
        }
        _ => return None,
    })
}

/// What to do with a streaming detector: run it over a file or a trace.
trait RunDetector<R> {
    fn run<D: Detector + Send>(self, d: D) -> R;
}

/// Over the events a [`detector::Feed`] makes (a trace file's, a
/// recording's), feeding and detecting on two threads.
struct OnFeed<F> {
    feed: F,
    keep: Keep,
}

impl<F: detector::Feed> RunDetector<Result<(Report, Names), LoadError>> for OnFeed<F> {
    fn run<D: Detector + Send>(self, d: D) -> Result<(Report, Names), LoadError> {
        detector::run_fed(d, self.feed, self.keep)
    }
}

/// The analysis `opts` asks for in one streaming pass over `on`'s events;
/// None when it is no streaming one (it loads the trace, or is `po`).
fn streamed<F: detector::Feed>(
    opts: &Options,
    engine: Engine,
    on: OnFeed<F>,
) -> Option<Result<(Report, Names), LoadError>> {
    // Windowed CP streams (exact CP and --order-races load the trace).
    if opts.relation == Relation::Cp
        && engine == Engine::Datalog
        && opts.reporting != Reporting::OrderRaces
        && let Some(k) = opts.reasoning_window()
    {
        let pass = crate::race::cp::PassOptions {
            max_distance: opts.distance(),
            first_only: opts.reporting == Reporting::FirstRace,
            keep_clocks: false,
        };
        return Some(on.run(crate::race::cp::stream::CpStream::new(k, pass)));
    }
    streaming(opts.relation, engine, opts.distance(), on)
}

/// [`analyze`] over the events `feed` makes instead of a trace file (a
/// recording lowered in memory), when `req` is one streaming pass; None,
/// without calling `feed`, when it is not (its trace must be loaded).
pub(crate) fn analyze_fed(
    req: &Request,
    feed: impl detector::Feed,
) -> Option<Result<(Report, Names)>> {
    let started = std::time::Instant::now();
    let opts = match req.options() {
        Ok(o) => o,
        Err(e) => return Some(Err(e)),
    };
    let engine = match opts.engine() {
        Ok(e) => e,
        Err(e) => return Some(Err(e)),
    };
    if req.witness {
        return None;
    }
    crate::progress::phase(format!(
        "{} {engine}: recording and analysing in one pass",
        opts.relation
    ));
    let on = OnFeed {
        feed,
        keep: opts.keep,
    };
    let run = streamed(&opts, engine, on)?;
    Some((|| {
        let (report, names) = run?;
        let mut report = timed(&opts, report, started);
        suppress(req, &mut report, &names)?;
        Ok((report, names))
    })())
}

/// Over a loaded trace.
struct OnTrace<'a>(&'a Trace);

impl RunDetector<Report> for OnTrace<'_> {
    fn run<D: Detector + Send>(self, d: D) -> Report {
        detector::run_trace(d, self.0)
    }
}

/// `--engine compare`: run `datalog` and `reference` and fail with exit code 3
/// naming the first differing event, like polonius' Compare mode.
fn compare_cp(t: &Trace, opts: &Options) -> Result<Report> {
    let fast = crate::race::cp::analyze_within(t, opts.window, opts.max_distance, opts.reporting);
    let reference = crate::race::cp::reference::analyze_within(t, opts.window, opts.max_distance)?;
    if let Err(diff) = crate::engine::reference::compare(&fast, &reference) {
        return Err(Error::EnginesDisagree(format!(
            "CP engines disagree: {diff}"
        )));
    }
    let mut report = fast;
    report.engine = Engine::Compare;
    report
        .notes
        .push("datalog and reference engines agree".into());
    Ok(report)
}
