//! `cprace record`: its options, turned into a [`Recording`]; with
//! `--analyze`, the recorded trace analysed through the library, as
//! `cprace analyze` would.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use super::Outcome;

use cprace::race::Request;
use cprace::record::{OutFormat, Recording, Source};
use cprace::relation::Relation;

#[derive(clap::Args, Debug)]
/// Run a program built with `cprace cc` and write its trace
///
/// Passes the program's exit status through and prints on standard error
/// how many events were recorded. Locations are `file:line` from the debug
/// info (build with -g); variables are named after globals where the
/// symbol table knows them, addresses otherwise. The trace is cprace's
/// binary format, or by its name STD text (`.std`), zstd-compressed STD
/// (`.zst`) or RapidBin (`.bin`; zstd-compressed STD when the run has
/// volatile accesses).
///
/// Examples:
///   cprace record -o prog.std -- ./prog arg1 arg2
///   cprace record -o prog.bin -- ./prog arg1 arg2
///   cprace record -o prog.std --analyze cp -- ./prog
///   cprace record --analyze hb -- ./prog        (no trace kept)
///   cprace record -o prog.std --timeout 5 --analyze deadlocks -- ./prog
#[command(verbatim_doc_comment)]
pub(crate) struct RecordArgs {
    /// The trace to write (replaced only when the recording succeeds), in
    /// the format `--format` names, by default the one its name asks for:
    /// `.std` STD text, `.zst` zstd-compressed STD, `.cpt.zst` zstd-compressed
    /// cprace binary, `.bin` RapidBin (8 bytes an event), anything else
    /// (`.cpt`) cprace's binary format. May be left out with `--analyze`:
    /// the recording then goes straight to the analysis, and a temporary
    /// trace is written only to describe the races found.
    #[arg(short, long, required_unless_present = "analyze")]
    output: Option<PathBuf>,
    /// The trace's format, whatever its name.
    #[arg(long, value_enum, requires = "output")]
    format: Option<OutFormat>,
    /// Analyze the trace right away and print the report: a relation (po,
    /// hb, lockset, cp, wcp, shb, syncp; exit status then that of `cprace
    /// analyze`) or `deadlocks` (that of `cprace deadlocks --witness`: the
    /// deadlock that happened when the program hung, and the predicted ones).
    #[arg(long, value_name = "RELATION|deadlocks", value_parser = parse_analysis)]
    analyze: Option<Analysis>,
    /// Stop the program after this many seconds (a hang, a deadlock): the
    /// events recorded up to then become the trace.
    #[arg(long, allow_hyphen_values = true, value_name = "SECONDS", value_parser = parse_seconds)]
    timeout: Option<f64>,
    /// Deepest call stack recorded per event (deeper calls keep their
    /// outermost frames).
    #[arg(long, allow_hyphen_values = true, value_name = "FRAMES", default_value_t = cprace_events_depth(), value_parser = super::values::parse_u32)]
    stack_depth: u32,
    /// Convert the event files a run left in this directory (made by running
    /// a `cprace cc` program with CPRACE_RECORD_DIR=DIR) instead of running a
    /// program: measures the trace writing alone, or analyses one run in
    /// several ways.
    #[arg(long, value_name = "DIR", conflicts_with = "program")]
    from_events: Option<PathBuf>,
    /// Keep the program's event files in DIR (created, or empty): `record
    /// --from-events DIR` reads the same run again, in other formats or
    /// analyses.
    #[arg(long, value_name = "DIR", conflicts_with = "from_events")]
    keep_events: Option<PathBuf>,
    /// With --analyze: ThreadSanitizer suppressions, as `cprace analyze
    /// --suppressions` (default: TSAN_OPTIONS' `suppressions=FILE`).
    #[arg(long, value_name = "FILE")]
    suppressions: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(
        required_unless_present = "from_events",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    program: Vec<OsString>,
}

/// What `--analyze` runs on the recorded trace.
#[derive(Clone, Copy, Debug)]
enum Analysis {
    Races(Relation),
    Deadlocks,
}

fn parse_analysis(s: &str) -> Result<Analysis, String> {
    if s == "deadlocks" {
        return Ok(Analysis::Deadlocks);
    }
    <Relation as clap::ValueEnum>::from_str(s, false)
        .map(Analysis::Races)
        .map_err(|_| {
            format!(
                "`{s}`: expected a relation (po, hb, lockset, cp, wcp, shb, syncp) or `deadlocks`"
            )
        })
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "`{s}` is not a timeout; expected a positive number of seconds (e.g. 10 or 0.5)"
        )),
    }
}

fn cprace_events_depth() -> u32 {
    cprace::record::DEFAULT_STACK_DEPTH
}

/// `cprace record`: the program's exit status, or with `--analyze` the
/// analysis's.
pub(crate) fn run(args: RecordArgs, out: &mut dyn Write) -> Outcome {
    // The output and its format (`--format`, else the one its name asks
    // for); without -o a temporary trace (kept until the analysis is done).
    let (output, format, temp) = match args.output {
        Some(o) => {
            let format = args.format.unwrap_or_else(|| OutFormat::for_path(&o));
            (o, format, None)
        }
        None => {
            let t = tempfile::tempdir()
                .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?;
            (t.path().join("trace.cpt"), OutFormat::Cprace, Some(t))
        }
    };
    // A bad suppressions file is found before the program runs.
    let suppress = super::Suppress::new(args.suppressions);
    let suppressions = match args.analyze {
        Some(_) => suppress.load()?,
        None => None,
    };
    let source = match args.from_events {
        Some(dir) => Source::Events(dir),
        None => Source::Program(args.program),
    };
    let recording = Recording {
        source,
        output,
        format,
        timeout: args.timeout,
        stack_depth: args.stack_depth,
        // Every event: leaving out repeated accesses for hb and wcp
        // (`trace::reduce`) measured slower end to end than analysing them
        // (zstd 7 %, BS::thread_pool's tests 15 %: BENCHMARKS.md).
        reduce: false,
        temporary: temp.is_some(),
        events_dir: args.keep_events,
    };
    if let (Some(_), Some(Analysis::Races(relation))) = (&temp, args.analyze) {
        let mut req = Request::new(PathBuf::new(), relation);
        req.suppressions = suppressions;
        // A program's events are analysed while it runs.
        let (run, done) = match &recording.source {
            Source::Program(_) => {
                let (run, done) = cprace::record::run_live(&recording, |run, running| {
                    run.analyse(&recording, &req, Some(running))
                })?;
                if let Some((Ok(counts), _)) = &done {
                    run.summary(&recording, counts);
                }
                (run, done)
            }
            Source::Events(_) => {
                let run = cprace::record::run(&recording)?;
                let done = run.analyse(&recording, &req, None);
                (run, done)
            }
        };
        if let Some(done) = done {
            return fed(&run, &recording, req, done, out);
        }
        if std::path::Path::new(PIPES).is_dir() {
            return streamed(&run, &recording, req, out);
        }
        req.trace = run.write(&recording, None)?.trace;
        return super::analyze::report(&req, out);
    }
    let recorded = cprace::record::record(&recording)?;
    match args.analyze {
        None => Ok(recorded.exit_code),
        Some(Analysis::Races(relation)) => {
            let mut req = Request::new(recorded.trace, relation);
            req.suppressions = suppressions;
            super::analyze::report(&req, out)
        }
        Some(Analysis::Deadlocks) => super::deadlocks::run(
            super::deadlocks::DeadlocksArgs::witnessed(recorded.trace, suppress),
            out,
        ),
    }
}

/// Where a process's open files are named (Linux): the analysis reads the
/// pipe the recording writes through its name there.
const PIPES: &str = "/proc/self/fd";

/// What [`cprace::record::Run::analyse`] gives.
type Fed = (
    anyhow::Result<cprace::record::Counts>,
    cprace::Result<(cprace::report::Report, cprace::trace::Names)>,
);

/// `record --analyze R` without `-o` for a streaming analysis: the lowered
/// events went straight to it. A report that describes races (stacks,
/// memory, threads) reads them from a trace, written now from the same
/// event files: the same ids.
fn fed(
    run: &cprace::record::Run,
    recording: &Recording,
    mut req: Request,
    (recorded, analysed): Fed,
    out: &mut dyn Write,
) -> Outcome {
    // The recording's own error comes first: the analysis only saw its
    // events stop.
    let (report, names) = match (recorded, analysed) {
        (Err(e), _) => return Err(e.into()),
        (Ok(_), Err(a)) => return Err(a.into()),
        (Ok(_), Ok(a)) => a,
    };
    if report.race_count() > 0 && req.format.shown(&req.layout).is_some() {
        run.write_quietly(recording)?;
        req.trace = recording.output.clone();
        req.input_format = Some(cprace::trace::Format::Cprace);
    }
    super::analyze::present(&req, report, names, out)
}

/// `record --analyze R` without `-o` for an analysis that loads its trace:
/// the trace is read from a pipe as it is written, instead of after (the
/// recording's merge and encoding on one core, the reading on the other).
/// The temporary trace is still written, for a report that describes
/// races from it.
fn streamed(
    run: &cprace::record::Run,
    recording: &Recording,
    mut req: Request,
    out: &mut dyn Write,
) -> Outcome {
    use std::os::fd::AsRawFd;
    let (reader, writer) =
        std::io::pipe().map_err(|e| anyhow::anyhow!("cannot make a pipe for the analysis: {e}"))?;
    cprace::pipe::grow_pipe(writer.as_raw_fd());
    req.trace = PathBuf::from(format!("{PIPES}/{}", reader.as_raw_fd()));
    req.input_format = Some(cprace::trace::Format::Cprace);
    let (recorded, analysed) = std::thread::scope(|s| {
        let recording = s.spawn(move || run.write(recording, Some(Box::new(writer))));
        let analysed = cprace::race::analyze(&req);
        // The recording's writes fail from now on if the analysis stopped
        // early (an error): nothing reads the pipe any more.
        drop(reader);
        let recorded = recording
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (recorded, analysed)
    });
    // The recording's own error comes first: the analysis of a recording
    // that failed (a full disk) only saw the pipe close early.
    let (recorded, (report, names)) = match (recorded, analysed) {
        (Ok(r), Ok(a)) => (r, a),
        (Err(e), Err(a)) if is_broken_pipe(&e) => return Err(a.into()),
        (Err(e), _) => return Err(e.into()),
        (Ok(_), Err(a)) => return Err(a.into()),
    };
    req.trace = recorded.trace;
    super::analyze::present(&req, report, names, out)
}

/// Whether the recording stopped because its reader, the analysis, had.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
