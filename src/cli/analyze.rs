//! `cprace analyze`: its options, turned into a [`race::Request`], and the
//! report printed.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;

use super::values::{Window, parse_count, parse_window};
use cprace::race;
use cprace::relation::{Engine, Relation};
use cprace::report::{Layout, OutputFormat};
use cprace::trace::Format;

#[derive(clap::Args, Debug)]
/// Report the data races a relation predicts.
///
/// An access e2 (data read or write) is racy when some earlier access e1 of
/// another thread to the same variable, at least one a write, is not ordered
/// before e2 by the relation. Every pair is checked; --max-distance D
/// reports only pairs less than D events apart (e2 - e1 < D). Each racy
/// event gets one witness: the latest such e1.
///
/// --window K bounds CP's reasoning, not the report: HB-ordered events K
/// or more apart are CP-ordered (the CP paper's rule (w)), so a pair K or
/// more apart is a CP race exactly when HB (with CP's volatile edges)
/// leaves it unordered; HB's races are never hidden. K counts events of
/// the input trace; a K of at least the trace length is no window. The CP
/// paper's report is `--window K --max-distance K`. On hb, wcp, lockset
/// and po, --window is an alias of --max-distance.
///
/// Relations (engines, default first; names are case-insensitive, so
/// RAPID's `CP`, `HB`, `WCP` work):
///   cp       causally-precedes (Smaragdakis, Evans, Sadowski, Yi, Flanagan,
///            POPL 2012, Definition 2): sound predictive
///            detection; finds races HB misses. Window K = 1000 by default,
///            `--window none` is exact CP. Engines: datalog (semi-naive
///            fixpoint over synchronization events), reference (literal
///            rules/cp.dl via crepe, at most 2000 events), compare (both;
///            exit 3 naming the first differing event).
///   hb       happens-before: program order, release -> later acquire,
///            fork/join, volatile write -> later read. Engines: vc (DJIT+
///            vector clocks, exact), epoch (FastTrack2: same racy variables
///            and first race per variable), lockset (Goldilocks: idem),
///            treeclock or tc (vc with tree clocks: same races as vc),
///            datalog (closure over synchronization events, windowed),
///            reference (rules/hb.dl via crepe).
///   wcp      weak-causally-precedes (Kini, Mathur, Viswanathan, PLDI 2017,
///            Definition 3): weaker than
///            CP, so every CP race is a WCP race; the fast upper bound.
///            Engines: vc (Algorithm 1, linear time, streaming), reference
///            (literal rules/wcp.dl via crepe, at most 2000 events).
///   lockset  Eraser's locking discipline. UNSOUND: reports discipline
///            violations, a superset of HB's racy variables. Engine: eraser.
///   po       thread order only: every conflicting cross-thread pair.
///
/// CP reporting: CP's soundness theorem covers the first race. By default
/// every racy event is reported (and the report says so); --first-race stops
/// at the first; --order-races treats each reported race as a CP edge from
/// then on, so every report is covered.
///
/// Output:
///   text     one report per location pair (its first racy event, how many
///            racy events share the pair, their kinds and threads), in
///            order of first occurrence between `==================` lines,
///            then a SUMMARY; --all prints one report per racy event,
///            --max-reports N at most N reports.
///   json     relation, engine, window, events, racy_events (sorted ids),
///            races (one witness per racy event: first, second, variable,
///            first_loc, second_loc, kind, first_thread, second_thread,
///            first_op, second_op), racy_variables, location_pairs, stats,
///            notes.
///   jsonl    one JSON object per racy event and line: relation, engine,
///            window, then the race fields of json.
///   csv      one row per racy event: first, second, variable, kind,
///            first_thread, first_op, first_loc, second_thread, second_op,
///            second_loc, relation, engine, window (empty for none).
///   sarif    SARIF 2.1.0: one result per location pair, rule race/RELATION,
///            `file:line` locations, the earlier access as related location.
///   summary  the SUMMARY line and the engine counters only.
///   html     one self-contained page: an index of the location pairs
///            (sortable, filterable), per race both stacks with their
///            source lines, memory, threads and locks, and with --witness
///            the witness as a timeline, one lane per thread.
/// csv, jsonl, text and summary stream: the hb and wcp engines keep races
/// on disk, not in memory. Notes (unsound engine, what the soundness
/// theorem covers) go to standard error whatever the format.
/// Suppressions: --suppressions FILE (default: `suppressions=FILE` in
/// TSAN_OPTIONS) reads a ThreadSanitizer suppressions file; `race:PAT`
/// drops races any frame of whose stacks (function, file, object file),
/// thread creation stacks or global matches, `race_top:PAT` only the top
/// frames, `called_from_lib:LIB` races with an access made innermost in
/// LIB; on traces without stacks `race:` matches the `file:line` locations
/// and variable names. The summary counts them (`suppressed: N races (RULE
/// N, ...)`), json has `suppressed`. The book's "Coming from
/// ThreadSanitizer" chapter has the details.
/// Exit code: 0 no race (or every race suppressed), 1 races, 2 bad input,
/// usage or suppressions file, 3 when `--engine compare` finds two engines
/// disagreeing.
///
/// Examples:
///   cprace analyze data/figures/cp-fig3-polarcoord.csv --relation cp
///   cprace analyze trace.std --relation cp --window 10000 --format json
///   cprace analyze trace.std --relation hb --engine epoch
///   cprace analyze prog.cpt --relation wcp --witness --format html > races.html
///   cprace analyze small.csv --relation cp --engine compare --window none
#[command(verbatim_doc_comment)]
pub(crate) struct AnalyzeArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// The relation deciding which accesses are ordered.
    #[arg(long, value_enum, ignore_case = true)]
    relation: Relation,
    /// Engine computing the relation (the relation's default when omitted).
    // The manual lists each relation's engines; a name no relation has is
    // refused with all of them.
    #[arg(long, value_enum, hide_possible_values = true)]
    engine: Option<Engine>,
    /// cp: window K of the reasoning (default 1000; `none`: exact CP).
    /// Other relations: an alias of --max-distance.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_window)]
    window: Option<Window>,
    /// Report only pairs less than D events apart (`none`: all, the
    /// default), for every relation.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_window)]
    max_distance: Option<Window>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
    /// Report only the first race (the one CP's soundness theorem covers).
    #[arg(long, conflicts_with = "order_races")]
    first_race: bool,
    /// Treat each reported race as a CP edge from then on, so every report
    /// is covered by the soundness theorem (may hide races near others).
    #[arg(long)]
    order_races: bool,
    /// Text: one report per racy event instead of one per location pair.
    #[arg(long)]
    all: bool,
    /// Text: print at most N reports (the SUMMARY still counts all).
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = parse_count)]
    max_reports: Option<u64>,
    /// Give each race a witness: a correct reordering prefix of the trace
    /// (event ids) after which both events are enabled, or null when none
    /// was found. Every shb and syncp race has one; for hb, cp and wcp it
    /// is tried and the report says which races have one. Loads the trace.
    /// Text, SARIF and HTML give one to the races they show (the first of
    /// each location pair), JSON and JSON Lines to every race.
    #[arg(long)]
    witness: bool,
    /// With --witness: write each race's reordered trace (the witness, then
    /// the two racy events) in STD to DIR/race-E1-E2.std.
    #[arg(long, value_name = "DIR", requires = "witness")]
    witness_out: Option<PathBuf>,
    #[command(flatten)]
    suppress: super::Suppress,
}

impl AnalyzeArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }

    /// The library request these options make (reading the suppressions).
    fn request(self) -> Result<race::Request, cprace::Error> {
        let suppressions = self.suppress.load()?;
        let reporting = if self.first_race {
            cprace::race::cp::Reporting::FirstRace
        } else if self.order_races {
            cprace::race::cp::Reporting::OrderRaces
        } else {
            cprace::race::cp::Reporting::All
        };
        Ok(race::Request {
            trace: self.trace,
            input_format: self.input_format,
            relation: self.relation,
            engine: self.engine,
            window: self.window.map(|w| w.0),
            max_distance: self.max_distance.map(|d| d.0),
            reporting,
            format: self.format,
            layout: Layout {
                all: self.all,
                max_reports: self.max_reports,
            },
            witness: self.witness,
            witness_out: self.witness_out,
            suppressions,
        })
    }
}

/// `cprace analyze`.
pub(crate) fn run(args: AnalyzeArgs, out: &mut dyn Write) -> Outcome {
    report(&args.request()?, out)
}

/// Carry out `req` and print its report: notes on standard error, the report
/// in `req.format` (streamed formats straight to standard output, the others
/// into `out`). Returns the exit code: 0 no race, 1 races.
pub(crate) fn report(req: &race::Request, out: &mut dyn Write) -> Outcome {
    let (report, names) = race::analyze(req)?;
    present(req, report, names, out)
}

/// Print the report of `req`'s analysis as [`report`] does (describing a
/// recorded program's races from `req.trace`, read once more).
pub(crate) fn present(
    req: &race::Request,
    mut report: cprace::report::Report,
    names: cprace::trace::Names,
    out: &mut dyn Write,
) -> Outcome {
    if let Some(shown) = req.format.shown(&req.layout) {
        // ThreadSanitizer's fields for a recorded program's trace.
        cprace::tools::describe::attach(&mut report, &req.trace, req.input_format, &shown)?;
    }
    if let (
        OutputFormat::Html,
        Some(Layout {
            max_reports: Some(max),
            ..
        }),
    ) = (req.format, req.format.shown(&req.layout))
    {
        let pairs = report.tally()?.location_pairs;
        if pairs > max {
            // Said on the page too; not a note of the analysis.
            eprintln!(
                "cprace: note: the page shows the first {max} of {pairs} location pairs (--max-reports N shows N)"
            );
        }
    }
    // Notes qualify the result in every format, so they go to stderr.
    for n in &report.notes {
        eprintln!("cprace: note: {}", cprace::report::printable(n));
    }
    if req.format.streams() {
        // The analysis succeeded; stream (a spilled report is never
        // held in memory, not even as output).
        cprace::output::to_stdout(|w| report.write(&names, req.format, &req.layout, w))?;
    } else {
        report.write(&names, req.format, &req.layout, out)?;
    }
    let code = report.exit_code();
    let big = report.events > cprace::alloc::BIG;
    cprace::alloc::drop_later((report, names), big);
    Ok(code)
}
