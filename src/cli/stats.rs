//! `cprace stats`: counts of a streamed trace.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use clap::ValueEnum;

use cprace::trace::{self, Format};

/// Output format of `stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatsFormat {
    /// `key: value` lines.
    Text,
    /// One JSON object.
    Json,
}

#[derive(clap::Args, Debug)]
/// Count events, threads, locks, variables and lock usage of a trace
///
/// Streams the trace (any size, constant memory), validating it as every
/// command does, and prints:
///   events, threads, locks, variables, locations   sizes of the name tables
///                                                  (locations: non-empty ones)
///   acquires, releases        lock operations (re-entrant ones not counted)
///   reads, writes             data accesses
///   forks, joins              thread creation and joining
///   volatile_accesses         volatile reads and writes (vr, vw)
///   accesses_under_locks      data accesses made while holding some lock
///   max_nesting_depth         most locks one thread held at once
///   reentrant_acquires_filtered
///                             acquires of a lock the thread already held;
///                             they and their releases are ignored by every
///                             analysis (as RoadRunner and RAPID do)
///   out_of_nesting_releases   releases of a lock other than the innermost
///                             held (legal for java.util.concurrent locks;
///                             accepted, each paired with its own acquire)
///   unreleased_at_end         critical sections still open when the trace
///                             ends (accepted; they extend to the thread's
///                             last event)
///
/// Text output adds a warning or note line for the last three when non-zero.
///
/// Examples:
///   cprace stats data/formats/example.csv
///   cprace stats data/figures/cp-fig3-polarcoord.csv --format json
///   cprace gen -n 1M | cprace stats -
#[command(verbatim_doc_comment)]
pub(crate) struct StatsArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
    format: StatsFormat,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
}

impl StatsArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// `cprace stats`.
pub(crate) fn run(args: StatsArgs, out: &mut dyn Write) -> Outcome {
    cprace::progress::phase("counting");
    let mut counts = cprace::tools::stats::Counts::default();
    let (names, load, _) =
        trace::stream(&args.trace, args.input_format, |id, ev| counts.add(id, ev))?;
    let v = cprace::tools::stats::to_json(&counts, &names, &load);
    match args.format {
        StatsFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
        StatsFormat::Text => write!(out, "{}", cprace::tools::stats::to_text(&v))?,
    }
    Ok(0)
}
