//! `cprace deadlocks`: actual, predicted and potential deadlocks of a trace
//! ([`cprace::deadlock`]).

use std::io::Write;
use std::path::PathBuf;

use cprace::deadlock::{self, DEFAULT_WINDOW, Options};
use cprace::report::OutputFormat;
use cprace::trace::Format;

use super::Outcome;

#[derive(clap::Args, Debug)]
/// Report deadlocks: actual, predicted (with witnesses) and lock-order inversions
///
/// Streams the trace once (any input format, compressed or not, `-` for
/// standard input) and reports, each cycle of locks once, in this order:
///   actual     the trace ends with threads blocked in a cycle, each in a
///              `req` event (a lock requested and never granted: a
///              recorder stopped a hung program) for a lock another holds
///   predicted  a sync-preserving deadlock (Tunç, Mathur, Pavlogiannis,
///              Viswanathan, PLDI 2023): a correct reordering of a prefix
///              of the trace, keeping every lock's critical sections in
///              order, after which every thread of the cycle holds its lock
///              and requests the next one. Sound, and complete for that
///              class, in time linear in the window per deadlock pattern.
///              Cycles may also pass through joins: a thread holding a lock
///              while it waits to join a thread that requests it
///              (critical sections spanning threads, after Sulzmann).
///   inversion  a cycle in the lock-order graph (an edge l1 -> l2 when a
///              thread acquires l2 while holding l1, or while a thread
///              holding l1 waits to join it), in ThreadSanitizer's layout:
///              a potential deadlock. By default cycles no reordering can
///              deadlock in are dropped: all edges from one thread, a gate
///              lock held around the edges, edges ordered by fork/join;
///              --all lists them too, each saying why it cannot deadlock.
/// Every deadlock any reordering reaches is among the three lists.
///
/// --window W: predictions reorder at most the last W events before the
/// deadlock (1M by default, so memory stays flat; `none` for the whole
/// trace). Memory is otherwise per thread, per lock and per edge.
///
/// Output: text (one block per deadlock, then a SUMMARY), json
/// ({"deadlocks": [{"kind", "threads", "locks", "events" (the requests,
/// one per lock), "witness", "links"}], ...}), jsonl (one deadlock a
/// line), csv (one row a deadlock), sarif (rules deadlock/KIND), summary.
/// --witness fills `witness` (loads the trace); check it with
/// `cprace verify TRACE --witness REPORT.json`.
/// --suppressions FILE (default: TSAN_OPTIONS' `suppressions=FILE`): a
/// ThreadSanitizer suppressions file; `deadlock:PAT` drops the deadlocks
/// any frame of whose stacks (or, without stacks, whose locations or lock
/// names) match; the summary counts them.
/// Exit code: 0 no deadlock (or all suppressed), 1 some reported, 2 bad
/// input, usage or suppressions file.
///
/// Examples:
///   cprace deadlocks data/figures/cp-fig9.csv
///   cprace deadlocks trace.std.xz --witness --format json > d.json
///   cprace verify trace.std.xz --witness d.json
///   cprace gen --profile deadlocks -n 100k | cprace deadlocks - --all
#[command(verbatim_doc_comment)]
pub(crate) struct DeadlocksArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Give each actual and predicted deadlock a witness: a correct
    /// reordering prefix (event ids) after which its threads are blocked.
    /// Loads the trace.
    #[arg(long)]
    witness: bool,
    /// List every cycle of the lock-order graph, as ThreadSanitizer does,
    /// including those no reordering can deadlock in (each says why).
    #[arg(long)]
    all: bool,
    /// Predict by reordering at most the last W events before a deadlock
    /// (default 1M; `none`: the whole trace, memory growing with it).
    #[arg(long, allow_hyphen_values = true, value_parser = super::values::parse_window)]
    window: Option<super::values::Window>,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
    #[command(flatten)]
    suppress: super::Suppress,
}

impl DeadlocksArgs {
    /// `cprace deadlocks TRACE --witness` with every other option at its
    /// default but the suppressions (`record --analyze deadlocks`).
    pub(crate) fn witnessed(trace: PathBuf, suppress: super::Suppress) -> DeadlocksArgs {
        DeadlocksArgs {
            trace,
            format: OutputFormat::Text,
            witness: true,
            all: false,
            window: None,
            input_format: None,
            lenient: Default::default(),
            suppress,
        }
    }

    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// `cprace deadlocks`: analyze, print, return the exit code (0 none, 1 some).
pub(crate) fn run(args: DeadlocksArgs, out: &mut dyn Write) -> Outcome {
    if args.format == OutputFormat::Html {
        return Err(cprace::Error::Usage(
            "--format html is the race report's; deadlocks print as text, json, jsonl, csv, sarif or summary"
                .into(),
        )
        .into());
    }
    let suppressions = args.suppress.load()?;
    let opts = Options {
        window: args.window.map_or(Some(DEFAULT_WINDOW), |w| w.0),
        all: args.all,
        ..Options::default()
    };
    let (mut report, names, rec) = if args.witness {
        let (t, rec) = cprace::trace::load_recorded(&args.trace, args.input_format)?;
        cprace::progress::phase("deadlocks");
        (deadlock::analyze_trace(&t, &opts), t.names, Some(rec))
    } else {
        let (r, names) = deadlock::analyze_path(&args.trace, args.input_format, &opts)?;
        (r, names, None)
    };
    let rec = recording(&report, &args.trace, args.input_format, rec)?;
    if let Some(supp) = &suppressions {
        cprace::suppress::apply::deadlocks(&mut report, &names, rec.as_ref(), supp);
    }
    if let Some(rec) = &rec {
        attach_stacks(&mut report, rec);
    }
    for n in &report.notes {
        eprintln!("cprace: note: {}", cprace::report::printable(n));
    }
    report.write(&names, args.format, &Default::default(), out)?;
    Ok(report.exit_code())
}

/// What a recorded program's trace that carries call stacks (cprace's
/// binary format) carries beside its events, when the report has
/// deadlocks to show stacks for: `rec` when the trace was loaded, else read
/// in a second pass ([`cprace::trace::recorded_stacks`]); None otherwise.
fn recording(
    report: &cprace::report::Report,
    path: &std::path::Path,
    format: Option<Format>,
    rec: Option<cprace::trace::Recording>,
) -> Result<Option<cprace::trace::Recording>, cprace::Error> {
    if report.deadlocks.is_empty() {
        return Ok(None);
    }
    match rec {
        Some(rec) => Ok(Some(rec)),
        None => Ok(cprace::trace::recorded_stacks(path, format)?),
    }
}

/// Call stacks: each deadlock gets the frames of the events it names.
fn attach_stacks(report: &mut cprace::report::Report, rec: &cprace::trace::Recording) {
    let depth = cprace::record::DEFAULT_STACK_DEPTH as usize;
    for d in &mut report.deadlocks {
        for e in d.sites() {
            let frames = rec.frames_of(e, depth);
            if !frames.is_empty() {
                d.stacks.insert(e, frames);
            }
        }
    }
}
