//! The command line: subcommands, their options and their manuals.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use crate::analyze::{self, Options, Relation};
use crate::report::OutputFormat;
use crate::trace::{self, Format};

/// Predict data races from recorded executions of multithreaded programs.
///
/// A trace is a sequence of events `thread, op, target, loc` with op one of
/// r, w (data read/write of variable target), acq, rel (lock target), fork,
/// join (thread target), vr, vw (volatile read/write). Formats: cprace CSV
/// (header `thread,op,target,loc`), RAPID STD (`T0|r(x)|loc`) and RAPID CSV
/// (one column per thread), detected automatically. Event ids are 0-based
/// positions in the input trace everywhere.
///
/// Exit codes follow diff(1): 0 no race, 1 races reported, 2 bad input or usage.
#[derive(Parser, Debug)]
#[command(name = "cprace", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// A window size K, or `none` for the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub Option<u64>);

fn parse_window(s: &str) -> Result<Window, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(Window(None));
    }
    match s.parse::<u64>() {
        Ok(0) | Err(_) => Err(format!("`{s}` is not a window; expected a positive number of events or `none`")),
        Ok(k) => Ok(Window(Some(k))),
    }
}

/// Output format of `stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// `key: value` lines.
    Text,
    /// One JSON object.
    Json,
}

/// Output format of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// cprace CSV (`thread,op,target,loc`).
    Csv,
    /// RAPID STD (`thread|op(target)|loc`).
    Std,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Count events, threads, locks, variables and lock usage of a trace.
    ///
    /// Prints events, threads, locks, variables, locations, acquires/releases,
    /// reads/writes, forks/joins, volatile accesses, the deepest lock nesting,
    /// how many re-entrant acquires were filtered, releases out of nesting order
    /// and critical sections still open at the end.
    ///
    /// Example: cprace stats data/cp-fig3-polarcoord.csv --format json
    Stats {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
        format: StatsFormat,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
    },
    /// Convert a trace between cprace CSV and RAPID STD, losslessly.
    ///
    /// Any input format is accepted. Re-entrant acquires are written back as
    /// the acquires they were. Names that STD cannot represent (containing `|`,
    /// `(`, `)`) are an error rather than silently changed.
    ///
    /// Example: cprace convert trace.std --to csv -o trace.csv
    Convert {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        to: ConvertFormat,
        /// Output file (standard output when omitted).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
    },
    /// Report the data races a relation predicts.
    ///
    /// An access e2 is racy when some earlier conflicting access e1 (another
    /// thread, same variable, at least one a write) is not ordered before it
    /// by the relation. With a window K, only pairs less than K events apart
    /// (e2 - e1 < K) are checked; K counts events of the input trace.
    ///
    /// Relations:
    ///   po   thread order only: every conflicting cross-thread pair races.
    ///   wcp  weak-causally-precedes (Kini et al., PLDI 2017): a release of a
    ///        lock orders a later access inside a critical section of that lock
    ///        when its own section holds a conflicting access; two releases of
    ///        a lock are ordered when their sections hold WCP-ordered events;
    ///        closed under composition with HB. Sound (a WCP race implies a
    ///        predictable race or deadlock) and weaker than CP, so it reports
    ///        every CP race and more. Engines: vc (default; Algorithm 1, one
    ///        streaming pass, linear time; stats give the paper's maximum
    ///        queue length) and reference (Definition 3 as Datalog, at most
    ///        2000 events).
    ///
    /// Output (--format json): relation, engine, window, events, racy_events
    /// (sorted ids), races (one witness per racy event: first, second, variable,
    /// first_loc, second_loc, kind), racy_variables, location_pairs, stats.
    ///
    /// Example: cprace analyze data/cp-fig3-polarcoord.csv --relation po --format json
    Analyze {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// The relation deciding which accesses are ordered.
        #[arg(long, value_enum)]
        relation: Relation,
        /// Engine computing the relation (the relation's default when omitted).
        #[arg(long)]
        engine: Option<String>,
        /// Window K: only accesses less than K events apart are paired; `none`
        /// checks the whole trace.
        #[arg(long, value_parser = parse_window)]
        window: Option<Window>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
    },
}

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: Cli, out: &mut impl Write) -> Result<i32> {
    match cli.command {
        Command::Stats { trace, format, input_format } => {
            let mut counts = crate::stats::Counts::default();
            let (names, load, _) = trace::stream(&trace, input_format, |id, ev| counts.add(id, ev))?;
            let v = crate::stats::to_json(&counts, &names, &load);
            match format {
                StatsFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
                StatsFormat::Text => write!(out, "{}", crate::stats::to_text(&v))?,
            }
            Ok(0)
        }
        Command::Convert { trace, to, output, input_format } => {
            let t = trace::load(&trace, input_format)?;
            let mut buf = Vec::new();
            match to {
                ConvertFormat::Csv => trace::csv_format::write(&t, &mut buf)?,
                ConvertFormat::Std => trace::std_format::write(&t, &mut buf)?,
            }
            match output {
                Some(p) => std::fs::write(&p, buf).with_context(|| format!("cannot write {}", p.display()))?,
                None => out.write_all(&buf)?,
            }
            Ok(0)
        }
        Command::Analyze { trace, relation, engine, window, format, input_format } => {
            let opts = Options { relation, engine, window: window.and_then(|w| w.0), input_format };
            let (report, names) = analyze::analyze_path(&trace, &opts)?;
            report.write(&names, format, out)?;
            Ok(report.exit_code())
        }
    }
}
