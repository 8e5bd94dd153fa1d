//! The command line, the edge of cprace: one module per subcommand owning its
//! options and turning them into the library's; this one parses, handles the
//! options every subcommand shares, and dispatches.

mod analyze;
mod cc;
mod convert;
mod deadlocks;
mod generate;
mod manual;
mod query;
mod record;
mod stats;
mod sweep;
mod values;
mod verify;

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use cprace::trace::Format;

/// Predict data races from recorded executions of multithreaded programs.
///
/// A trace is a sequence of events `thread, op, target, loc` with op one of
/// r, w (data read/write of variable target), acq, rel (lock target), fork,
/// join (thread target), vr, vw (volatile read/write). Formats: cprace CSV
/// (header `thread,op,target,loc`), RAPID STD (`T0|r(x)|loc`) and RAPID CSV
/// (one column per thread), detected automatically. Event ids are 0-based
/// positions in the input trace everywhere.
///
/// Exit codes follow diff(1): 0 no race, 1 races reported, 2 bad input or usage,
/// 3 when `--engine compare` finds two engines disagreeing.
#[derive(Parser, Debug)]
#[command(name = "cprace", version, propagate_version = true)]
pub(crate) struct Cli {
    /// No progress display on standard error (it shows only on a terminal,
    /// once a command has run for a second).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// What to do.
    #[command(subcommand)]
    command: Command,
    /// --lenient of the commands that read a trace, given before the
    /// command's name. Not a global option: it has no meaning for gen, cc
    /// or record, so their help does not list it.
    #[arg(long)]
    lenient: bool,
}

/// `--lenient`, an option of every command that reads a trace.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub(crate) struct Lenient {
    /// Skip malformed or ill-formed trace lines (as RAPID does) instead of
    /// failing: they are counted and the first few named on standard error.
    /// Never the default. Event ids are then positions among the kept events.
    #[arg(long = "lenient")]
    on: bool,
}

/// `--suppressions FILE`, of the commands that report races or deadlocks.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct Suppress {
    /// ThreadSanitizer suppressions file (`race:PATTERN`, `race_top:`,
    /// `called_from_lib:`, `deadlock:`, ... one rule a line): reports a rule
    /// matches are dropped, counted in the summary, and do not count for
    /// the exit status. Default: the `suppressions=FILE` of the
    /// TSAN_OPTIONS environment variable, if any.
    #[arg(long, value_name = "FILE")]
    suppressions: Option<std::path::PathBuf>,
}

impl Suppress {
    /// `--suppressions` given as `file` (None: not given).
    pub(crate) fn new(file: Option<std::path::PathBuf>) -> Suppress {
        Suppress { suppressions: file }
    }

    /// The rules: `--suppressions`, else TSAN_OPTIONS' `suppressions`, else
    /// none. A file that cannot be read or parsed is an error (exit 2).
    pub(crate) fn load(&self) -> Result<Option<cprace::suppress::Suppressions>, cprace::Error> {
        use cprace::suppress::{Suppressions, from_tsan_options};
        if let Some(path) = &self.suppressions {
            return Ok(Some(Suppressions::read(path)?));
        }
        let Some(file) = std::env::var("TSAN_OPTIONS")
            .ok()
            .and_then(|o| from_tsan_options(&o))
        else {
            return Ok(None);
        };
        Suppressions::read(std::path::Path::new(&file))
            .map(Some)
            .map_err(|mut e| {
                e.problem = format!("{} (named by TSAN_OPTIONS)", e.problem);
                e.into()
            })
    }
}

/// Subcommands.
#[derive(Subcommand, Debug)]
enum Command {
    Stats(stats::StatsArgs),
    Convert(convert::ConvertArgs),
    Analyze(analyze::AnalyzeArgs),
    Verify(verify::VerifyArgs),
    Deadlocks(deadlocks::DeadlocksArgs),
    Gen(generate::GenArgs),
    Sweep(sweep::SweepArgs),
    Query(query::QueryArgs),
    Completions(manual::CompletionsArgs),
    /// Print the manual page (roff)
    ///
    /// Examples:
    ///   cprace man > cprace.1 && man ./cprace.1
    #[command(verbatim_doc_comment)]
    Man,
    Cc(cc::CcArgs),
    Record(record::RecordArgs),
}

impl Command {
    /// The trace file the command reads, its input format and whether
    /// `--lenient` was given after the command's name, if it reads one.
    fn input(&mut self) -> Option<(&mut PathBuf, Option<Format>, bool)> {
        match self {
            Command::Stats(a) => Some(a.input()),
            Command::Convert(a) => Some(a.input()),
            Command::Analyze(a) => Some(a.input()),
            Command::Verify(a) => Some(a.input()),
            Command::Deadlocks(a) => Some(a.input()),
            Command::Sweep(a) => Some(a.input()),
            Command::Query(a) => Some(a.input()),
            Command::Gen(_)
            | Command::Completions(_)
            | Command::Man
            | Command::Cc(_)
            | Command::Record(_) => None,
        }
    }
}

/// Why a command did not finish normally.
pub(crate) enum Failure {
    /// The reader of standard output closed the pipe: it wanted no more.
    ClosedPipe,
    /// An error, and the exit code it ends the process with.
    Error {
        /// 2 for bad input or usage, 3 when engines disagree.
        code: u8,
        /// The message, with what caused it.
        error: anyhow::Error,
    },
}

/// What running a subcommand gives: its exit code, or why it failed.
pub(crate) type Outcome = Result<i32, Failure>;

impl From<cprace::Error> for Failure {
    fn from(e: cprace::Error) -> Failure {
        if e.is_broken_pipe() {
            return Failure::ClosedPipe;
        }
        Failure::Error {
            code: e.exit_code(),
            error: e.into(),
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::Error { code: 2, error }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        cprace::Error::from(e).into()
    }
}

impl From<cprace::trace::LoadError> for Failure {
    fn from(e: cprace::trace::LoadError) -> Failure {
        cprace::Error::from(e).into()
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        anyhow::Error::from(e).into()
    }
}

/// Run a parsed command line; returns the process exit code. Output that is
/// the result goes to `out` (or, for streamed formats, straight to standard
/// output once the work has succeeded).
pub(crate) fn run(mut cli: Cli, out: &mut dyn Write) -> Outcome {
    // Cleared when this returns, before main prints an error or the output.
    let _progress = cprace::progress::start(cli.quiet);
    // --lenient: read a cleaned copy of the trace (kept until the command ends).
    let reads_trace = cli.command.input().is_some();
    if cli.lenient && !reads_trace {
        return Err(anyhow::anyhow!(
            "--lenient applies only to the commands that read a trace (stats, convert, analyze, verify, deadlocks, sweep, query)"
        )
        .into());
    }
    let _cleaned = match cli.command.input() {
        Some((path, format, lenient)) if cli.lenient || lenient => {
            let cleaned = cprace::trace::lenient::clean(path, format)?;
            if let Some(c) = &cleaned {
                cprace::trace::lenient::report(c);
                *path = c.path.to_path_buf();
            }
            cleaned
        }
        _ => None,
    };
    match cli.command {
        Command::Stats(args) => stats::run(args, out),
        Command::Convert(args) => convert::run(args, out),
        Command::Analyze(args) => analyze::run(args, out),
        Command::Verify(args) => verify::run(args, out),
        Command::Deadlocks(args) => deadlocks::run(args, out),
        Command::Gen(args) => generate::run(&args),
        Command::Sweep(args) => sweep::run(args, out),
        Command::Query(args) => query::run(args, out),
        Command::Completions(args) => manual::completions(args, out),
        Command::Man => manual::man(out),
        Command::Cc(args) => cc::run(args),
        Command::Record(args) => record::run(args, out),
    }
}
