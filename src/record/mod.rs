//! Recording real C/C++ programs: `cprace cc` builds them against the
//! recorder runtime (`recorder/`, libcprace_rt.so), `cprace record` runs them
//! and turns the runtime's per-thread event files ([`events`]) into trace
//! events ([`lower`]) and a trace file ([`write`]).

pub mod cc;
pub(crate) mod cpt;
pub(crate) mod events;
mod live;
pub(crate) mod lower;
mod shadow;
pub(crate) mod symbols;
pub(crate) mod write;

pub use write::Counts;

/// Call depth recorded by default (as ThreadSanitizer's).
pub const DEFAULT_STACK_DEPTH: u32 = cprace_events::DEFAULT_STACK_DEPTH;

use std::ffi::OsString;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::trace::records::Records;

/// The trace formats `cprace record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OutFormat {
    /// cprace's binary format: numeric ids, byte masks, call stacks and what
    /// reports describe (the default; `convert --to std` gives RAPID's STD).
    Cprace,
    /// cprace's binary format compressed with zstd.
    #[cfg_attr(feature = "clap", value(name = "cprace-zstd"))]
    CpraceZstd,
    /// STD text (`T1|w(x)|prog.c:12`), which RAPID reads (variables by
    /// address, no stacks).
    Std,
    /// STD text compressed with zstd (every cprace command reads it).
    Zstd,
    /// RapidBin (8 bytes an event) with its side file of names,
    /// `TRACE.names.json`; zstd-compressed STD instead when the run does not
    /// fit RapidBin (volatile accesses, over 1024 threads or 32,767
    /// locations).
    #[cfg_attr(feature = "clap", value(name = "rapidbin"))]
    RapidBin,
}

impl OutFormat {
    /// The format an output's name asks for: `.std` STD, `.std.zst` or
    /// `.zst` zstd-compressed STD, `.bin`/`.rapidbin` RapidBin, `.cpt.zst`
    /// zstd-compressed cprace binary, anything else (`.cpt`) cprace binary.
    pub fn for_path(p: &std::path::Path) -> OutFormat {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".cpt.zst") || name.ends_with(".cpt.zstd") {
            return OutFormat::CpraceZstd;
        }
        match p.extension().and_then(|e| e.to_str()) {
            Some("std") => OutFormat::Std,
            Some("bin" | "rapidbin") => OutFormat::RapidBin,
            Some("zst" | "zstd") => OutFormat::Zstd,
            _ => OutFormat::Cprace,
        }
    }
}

/// Where a recording's events come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// Run this program (built with `cprace cc`) with these arguments.
    Program(Vec<OsString>),
    /// Convert the event files a run left in this directory (made by running
    /// a `cprace cc` program with CPRACE_RECORD_DIR=DIR).
    Events(PathBuf),
}

/// A recording to make: where the events come from and the trace to write.
#[derive(Clone, Debug)]
pub struct Recording {
    /// The program to run, or the event files to convert.
    pub source: Source,
    /// The trace to write (replaced only when the recording succeeds).
    pub output: PathBuf,
    /// The trace's format.
    pub format: OutFormat,
    /// Stop the program after this many seconds (a hang, a deadlock); the
    /// events recorded until then become the trace.
    pub timeout: Option<f64>,
    /// Deepest call stack recorded per event.
    pub stack_depth: u32,
    /// Leave out each plain access that repeats the access just before it
    /// to the same variable (cprace's binary format only): the trace then
    /// serves HB and WCP only ([`crate::trace::reduce`]).
    pub reduce: bool,
    /// The trace is a temporary file, analysed and removed (the summary
    /// line does not name it).
    pub temporary: bool,
    /// Where the program's event files go, kept (None: a temporary
    /// directory, removed).
    pub events_dir: Option<PathBuf>,
}

impl Recording {
    /// The directory the program's event files go to.
    fn run_dir(&self) -> Result<RunDir> {
        match &self.events_dir {
            None => Ok(RunDir::Temp(
                tempfile::tempdir().context("cannot create a temporary directory")?,
            )),
            Some(d) => {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create {}", d.display()))?;
                let empty = std::fs::read_dir(d)
                    .with_context(|| format!("cannot read {}", d.display()))?
                    .next()
                    .is_none();
                if !empty {
                    bail!(
                        "{} is not empty: the event files need a directory of their own",
                        d.display()
                    );
                }
                Ok(RunDir::Given(d.clone()))
            }
        }
    }
}

/// What a recording wrote.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The trace written.
    pub trace: PathBuf,
    /// Its format: the one asked for, or zstd-compressed STD when the run
    /// did not fit RapidBin.
    pub format: OutFormat,
    /// What it holds.
    pub counts: write::Counts,
    /// The program's exit status (0 when converting event files).
    pub exit_code: i32,
    /// How the program ended (None when converting event files).
    pub ending: Option<Ending>,
}

/// A child's exit status as a shell reports it (128 + signal when killed).
pub fn exit_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(2)
}

/// How a recorded program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Signal(i32),
    /// `record --timeout` stopped it.
    TimedOut,
}

impl Ending {
    /// The status a shell would report (128 + signal when killed).
    pub fn code(self) -> i32 {
        match self {
            Ending::Exited(c) => c,
            Ending::Signal(s) => 128 + s,
            Ending::TimedOut => 128 + libc::SIGKILL,
        }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Ending::Exited(c) => write!(f, "exited with status {c}"),
            Ending::Signal(s) => write!(f, "was killed by signal {} ({s})", signal_name(s)),
            Ending::TimedOut => write!(f, "was stopped by --timeout"),
        }
    }
}

fn signal_name(s: i32) -> String {
    // SAFETY: strsignal returns a static or thread-local string.
    let p = unsafe { libc::strsignal(s) };
    if p.is_null() {
        return format!("signal {s}");
    }
    // SAFETY: a NUL-terminated string from libc.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// The child a running `record` waits for: SIGINT and SIGTERM sent to
/// `record` go to it (the recording is written once it has ended).
static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Starts `prog` with the recorder on, writing its event files into `dir`.
fn start_program(
    prog: &OsString,
    args: &[OsString],
    dir: &Path,
    stack_depth: u32,
) -> Result<std::process::Child> {
    std::process::Command::new(prog)
        .args(args)
        .env("CPRACE_RECORD_DIR", dir)
        .env("CPRACE_STACK_DEPTH", stack_depth.to_string())
        .spawn()
        .with_context(|| format!("cannot run `{}`", prog.to_string_lossy()))
}

/// Waits for the program `child` to end, or stops it when `timeout`
/// passes; the signals that would stop cprace go to it meanwhile.
fn wait_program(mut child: std::process::Child, timeout: Option<f64>) -> Result<Ending> {
    use std::os::unix::process::ExitStatusExt;
    CHILD.store(child.id() as i32, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: installing a handler that only calls kill.
    let old: Vec<_> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .iter()
        .map(|&s| {
            // SAFETY: `forward` only calls kill, which is async-signal-safe.
            (s, unsafe {
                libc::signal(s, forward as *const () as libc::sighandler_t)
            })
        })
        .collect();
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().context("cannot wait for the program")? {
            break Ok(st);
        }
        if let Some(t) = timeout
            && started.elapsed() >= Duration::from_secs_f64(t)
        {
            let _ = child.kill();
            let _ = child.wait();
            break Err(Ending::TimedOut);
        }
        std::thread::sleep(
            Duration::from_millis(5).min(started.elapsed() / 4 + Duration::from_micros(200)),
        );
    };
    CHILD.store(0, std::sync::atomic::Ordering::Relaxed);
    for (s, h) in old {
        // SAFETY: restoring the previous handler.
        unsafe { libc::signal(s, h) };
    }
    Ok(match status {
        Ok(st) => match (st.code(), st.signal()) {
            (Some(c), _) => Ending::Exited(c),
            (None, Some(s)) => Ending::Signal(s),
            _ => Ending::Exited(2),
        },
        Err(e) => e,
    })
}

/// `cprace record -o TRACE -- PROGRAM [ARGS]`: runs the program (or reads
/// the event files of a run) and writes its trace.
pub fn record(args: &Recording) -> Result<Recorded> {
    run(args)?.write(args, None)
}

/// A run's event files: a program's, in a temporary directory that goes
/// with this, or those of a directory given.
pub struct Run {
    dir: RunDir,
    listing: String,
    /// The program and how it ended (None for event files given).
    program: Option<(String, Ending)>,
}

enum RunDir {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

/// Runs the program `args` names with the recorder (or takes the event
/// files of a run it names); its output path is checked first, so that an
/// output that cannot be written does not lose the run.
pub fn run(args: &Recording) -> Result<Run> {
    let Source::Events(dir) = &args.source else {
        return run_live(args, |_, _| ()).map(|(run, ())| run);
    };
    crate::output::check_output_path(&args.output)?;
    let listing = std::fs::read_to_string(dir.join("modules"))
        .with_context(|| format!("{} holds no recording", dir.display()))?;
    Ok(Run {
        dir: RunDir::Given(dir.clone()),
        listing,
        program: None,
    })
}

/// Runs the program `args` names with the recorder (its output path
/// checked first) while `analyse` reads its event files (`running` is true
/// until the program ended; [`Run::analyse`] takes it): the run, once the
/// program ended, and what `analyse` gave.
pub fn run_live<T>(
    args: &Recording,
    analyse: impl FnOnce(&Run, &AtomicBool) -> T,
) -> Result<(Run, T)> {
    crate::output::check_output_path(&args.output)?;
    let Source::Program(program) = &args.source else {
        bail!("no program to record");
    };
    let Some((prog, prog_args)) = program.split_first() else {
        bail!("no program to record");
    };
    let dir = args.run_dir()?;
    let child = start_program(prog, prog_args, dir.path(), args.stack_depth)?;
    let mut run = Run {
        dir,
        listing: String::new(),
        program: None,
    };
    let running = AtomicBool::new(true);
    let (ending, out) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let ending = wait_program(child, args.timeout);
            running.store(false, Ordering::Release);
            ending
        });
        let out = analyse(&run, &running);
        let ending = waiter
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (ending, out)
    });
    run.ended(prog, ending?)?;
    Ok((run, out))
}

impl RunDir {
    fn path(&self) -> &Path {
        match self {
            RunDir::Temp(t) => t.path(),
            RunDir::Given(d) => d,
        }
    }
}

impl Run {
    /// Takes in how the program `prog` ended and the listing it left;
    /// errors when its recording failed or it recorded nothing.
    fn ended(&mut self, prog: &OsString, ending: Ending) -> Result<()> {
        let dir = self.dir().to_path_buf();
        if let Ok(msg) = std::fs::read_to_string(dir.join("error")) {
            bail!("recording `{}` failed: {msg}", prog.to_string_lossy());
        }
        let listing = std::fs::read_to_string(dir.join("modules")).unwrap_or_default();
        if listing.is_empty() {
            bail!(
                "`{}` recorded nothing ({ending}): build it with `cprace cc`",
                prog.to_string_lossy()
            );
        }
        self.listing = listing;
        self.program = Some((prog.to_string_lossy().into_owned(), ending));
        Ok(())
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the trace `args` asks for and says on standard error what it
    /// holds. In cprace's binary format its bytes also go to `tee` as they
    /// are made (`record --analyze` reads them from a pipe while the trace
    /// is being written); `tee` is dropped when the writing ends,
    /// successfully or not, so that its reader then sees the end.
    pub fn write(&self, args: &Recording, tee: Option<Box<dyn Write + Send>>) -> Result<Recorded> {
        if tee.is_some() && args.format != OutFormat::Cprace {
            bail!("only cprace's binary format is written to a second reader");
        }
        let (counts, format) = self.trace(args, tee)?;
        self.summary(args, &counts);
        Ok(Recorded {
            trace: args.output.clone(),
            format,
            counts,
            exit_code: self.program.as_ref().map_or(0, |(_, e)| e.code()),
            ending: self.program.as_ref().map(|(_, e)| *e),
        })
    }

    /// Writes the trace `args` asks for without the summary line (a report
    /// reads what describes races from it after [`Run::analyse`]).
    pub fn write_quietly(&self, args: &Recording) -> Result<()> {
        self.trace(args, None).map(drop)
    }

    /// [`write_trace`] of this run as `args` asks.
    fn trace(
        &self,
        args: &Recording,
        tee: Option<Box<dyn Write + Send>>,
    ) -> Result<(write::Counts, OutFormat)> {
        write_trace(
            self.dir(),
            &self.listing,
            &args.output,
            args.format,
            args.reduce,
            tee,
        )
    }

    /// The summary line on standard error: what the recording holds (said
    /// by [`Run::write`], and by [`Run::analyse`] unless the program still
    /// ran).
    pub fn summary(&self, args: &Recording, counts: &write::Counts) {
        match &self.program {
            None => eprintln!(
                "cprace record: {} events ({} threads{}) {}",
                counts.events,
                counts.threads,
                repeats(counts),
                written(args)
            ),
            Some((prog, ending)) => eprintln!(
                "cprace record: {} events ({} threads; {} accesses, {} atomic, {} lock, {} fork/join{}) {}; `{}` {ending}",
                counts.events,
                counts.threads,
                counts.accesses,
                counts.volatiles,
                counts.locks,
                counts.forks_joins,
                repeats(counts),
                written(args),
                prog,
            ),
        }
    }

    /// Analyses the run as `req` asks, the lowered events going straight
    /// to the analysis: no trace is encoded, written or read back, and
    /// everything is named as reading the trace [`Run::write`] makes would
    /// name it (the same events, ids and names). The recording's outcome
    /// (its counts, said on standard error as [`Run::write`] says them,
    /// unless the program still runs: see [`Run::summary`]) and the
    /// analysis's; None when `req` is no streaming analysis (its trace must
    /// be written and loaded). With `running` (see [`run_live`]) the events
    /// are read while the program runs.
    #[allow(clippy::type_complexity)]
    pub fn analyse(
        &self,
        args: &Recording,
        req: &crate::race::Request,
        running: Option<&AtomicBool>,
    ) -> Option<(
        Result<write::Counts>,
        crate::Result<(crate::report::Report, crate::trace::Names)>,
    )> {
        let mut recorded = None;
        let feed = Lowering {
            run: self,
            reduce: args.reduce,
            recorded: &mut recorded,
            running,
        };
        let analysed = crate::race::analyze_fed(req, feed)?;
        let recorded = recorded.unwrap_or_else(|| Err(anyhow::anyhow!("nothing was recorded")));
        if let (Ok(c), None) = (&recorded, running) {
            self.summary(args, c);
        }
        Some((recorded, analysed))
    }
}

/// A [`Run`] lowered into an analysis's trace builder (see [`Run::analyse`]).
struct Lowering<'a> {
    run: &'a Run,
    reduce: bool,
    /// The recording's outcome, once fed.
    recorded: &'a mut Option<Result<write::Counts>>,
    /// While the program runs (see [`run_live`]).
    running: Option<&'a AtomicBool>,
}

/// What an analysis's errors name as its input.
const LOWERING: &str = "the recording";

impl crate::engine::detector::Feed for Lowering<'_> {
    fn name(&self) -> String {
        LOWERING.into()
    }

    fn feed<S: FnMut(crate::trace::EventId, &crate::trace::Event)>(
        self,
        sink: S,
        retire: crate::trace::cprace_bin::Retire<'_>,
    ) -> Result<crate::trace::Names, crate::trace::LoadError> {
        use crate::trace::records::Apply;
        crate::progress::start_reading();
        let mut b =
            crate::trace::validate::Builder::new(LOWERING, crate::trace::load::counted(sink));
        let lowered = (|| -> Result<write::Counts> {
            // While the program runs, the merge hands over its listing
            // (see `events::merge`).
            let listing = match self.running {
                Some(_) => "",
                None => events::segments(&self.run.listing)?,
            };
            let sym = symbols::Symbolizer::from_listing(listing);
            let w = cpt::CptWriter::to(Apply::new(&mut b, Some(retire)), sym);
            let what = "the recording to its analysis";
            lower_records(self.run.dir(), self.reduce, w, &what, self.running).map(|(_, c)| c)
        })();
        let failed = lowered
            .as_ref()
            .err()
            .map(|e| crate::trace::LoadError::new(LOWERING, 0, b"", format!("{e:#}")));
        *self.recorded = Some(lowered);
        if let Some(e) = failed {
            return Err(e);
        }
        crate::progress::done_reading(b.count());
        Ok(b.finish().0)
    }
}

/// Where the summary line says the trace went.
fn written(args: &Recording) -> String {
    if args.temporary {
        "recorded".into()
    } else {
        format!("written to {}", args.output.display())
    }
}

/// The summary line's note on repeated accesses left out, if any were.
fn repeats(c: &write::Counts) -> String {
    if c.repeats == 0 {
        return String::new();
    }
    format!(
        "; {} repeated accesses left out: they cannot change an hb or wcp report",
        c.repeats
    )
}

/// What [`lower_all`] hands the lowered trace to.
pub(crate) trait LoweredSink {
    /// One trace event (with the lowerer, for its tables).
    fn event(
        &mut self,
        low: &lower::Lowerer,
        l: &lower::Lowered,
        stacks: &events::Stacks,
    ) -> Result<()>;
    /// Variables no later event touches, sorted (see
    /// [`lower::Lowerer::retired`]); a trace format without a way to say
    /// so ignores them.
    fn retire(&mut self, _low: &lower::Lowerer, _ids: &[u32]) -> Result<()> {
        Ok(())
    }
    /// The run's `modules` listing, from the next event on (see
    /// [`events::Merged::listing`]).
    fn listing(&mut self, _listing: &str) -> Result<()> {
        Ok(())
    }
}

impl<F> LoweredSink for F
where
    F: FnMut(&lower::Lowerer, &lower::Lowered, &events::Stacks) -> Result<()>,
{
    fn event(
        &mut self,
        low: &lower::Lowerer,
        l: &lower::Lowered,
        stacks: &events::Stacks,
    ) -> Result<()> {
        self(low, l, stacks)
    }
}

/// A [`LoweredSink`] writing cprace's binary format to `output`.
struct ToCpt<'a, R: Records> {
    w: &'a mut cpt::CptWriter<R>,
    /// What it writes, for errors (`cannot write WHAT`).
    what: &'a dyn std::fmt::Display,
}

impl<R: Records> LoweredSink for ToCpt<'_, R> {
    fn event(
        &mut self,
        low: &lower::Lowerer,
        l: &lower::Lowered,
        stacks: &events::Stacks,
    ) -> Result<()> {
        self.w
            .event(low, l, stacks)
            .with_context(|| format!("cannot write {}", self.what))
    }

    fn retire(&mut self, low: &lower::Lowerer, ids: &[u32]) -> Result<()> {
        self.w
            .retire(low, ids)
            .with_context(|| format!("cannot write {}", self.what))
    }

    fn listing(&mut self, listing: &str) -> Result<()> {
        self.w
            .symbolize_with(symbols::Symbolizer::from_listing(events::segments(
                listing,
            )?));
        Ok(())
    }
}

/// The merged events lowered into a sink (see [`lower_all`]).
struct Lower<S> {
    low: lower::Lowerer,
    buf: Vec<lower::Lowered>,
    retired: Vec<u32>,
    sink: S,
}

impl<S: LoweredSink> events::Merged for Lower<S> {
    fn event(
        &mut self,
        e: &events::Event,
        ahead: Option<&events::Event>,
        stacks: &events::Stacks,
    ) -> Result<()> {
        if let Some(a) = ahead {
            self.low.prefetch(a);
        }
        self.buf.clear();
        self.low.event(e, &mut |l| self.buf.push(l));
        for l in &self.buf {
            self.sink.event(&self.low, l, stacks)?;
        }
        if !self.low.retired.is_empty() {
            self.low.take_retired(&mut self.retired);
            self.sink.retire(&self.low, &self.retired)?;
        }
        Ok(())
    }

    fn listing(&mut self, listing: &str) -> Result<()> {
        self.sink.listing(listing)
    }
}

/// Reads the event files in `dir` in the global order, lowers them, and
/// hands every trace event and retired variable to `sink`; returns the
/// lowerer and the run's call stacks. Tells on standard error what it had
/// to drop to keep the trace well formed.
pub(crate) fn lower_all(
    dir: &Path,
    reduce: bool,
    sink: impl LoweredSink,
    running: Option<&AtomicBool>,
) -> Result<(lower::Lowerer, events::Stacks)> {
    let mut low = lower::Lowerer::default();
    low.reduce = reduce.then(Default::default);
    let mut m = Lower {
        low,
        buf: Vec::new(),
        retired: Vec::new(),
        sink,
    };
    let stacks = events::merge(dir, running, &mut m)?;
    let low = m.low;
    let d = low.dropped;
    if d.total() > 0 {
        eprintln!(
            "cprace record: warning: dropped {} events the recording could not hold in a well-formed trace ({} releases of locks not held, {} acquires of locks held by another thread, {} repeated forks or joins, {} events after a join)",
            d.total(),
            d.releases,
            d.acquires,
            d.forks_joins,
            d.after_join
        );
    }
    Ok((low, stacks))
}

/// Merges the event files in `dir` (with `listing`, the run's `modules`
/// file) into the trace `output` in `format` (written to a temporary file
/// next to it, renamed over it only when complete). RapidBin that the run
/// does not fit becomes zstd-compressed STD, with a note on stderr. The
/// bytes of cprace's binary format also go to `tee` (see [`Run::write`]).
pub fn write_trace(
    dir: &Path,
    listing: &str,
    output: &Path,
    format: OutFormat,
    reduce: bool,
    tee: Option<Box<dyn Write + Send>>,
) -> Result<(write::Counts, OutFormat)> {
    let listing = events::segments(listing)?;
    let parent = crate::output::temp_dir_for(output);
    let tmp = crate::output::output_builder()
        .tempfile_in(&parent)
        .with_context(|| format!("cannot create a file in {}", parent.display()))?;
    let cannot = || format!("cannot write {}", output.display());
    let side = crate::trace::rapid_bin::side_path(output);
    let mut format = format;
    if matches!(format, OutFormat::Cprace | OutFormat::CpraceZstd) {
        let sym = symbols::Symbolizer::from_listing(listing);
        if format == OutFormat::CpraceZstd {
            let mut z = zstd::stream::Encoder::new(tmp.as_file(), 3).with_context(cannot)?;
            let _ = z.multithread(1);
            let (z, counts) = write_cpt(dir, reduce, z, sym, output)?;
            z.finish().with_context(cannot)?;
            crate::output::persist(tmp, output).with_context(cannot)?;
            let _ = std::fs::remove_file(&side);
            return Ok((counts, format));
        }
        let out = write::ThreadWriter::teed(tmp.as_file().try_clone().with_context(cannot)?, tee)
            .with_context(cannot)?;
        let (mut out, counts) = write_cpt(dir, reduce, out, sym, output)?;
        out.finish().with_context(cannot)?;
        crate::output::persist(tmp, output).with_context(cannot)?;
        let _ = std::fs::remove_file(&side);
        return Ok((counts, format));
    }
    if format == OutFormat::RapidBin {
        let mut n = write::Namer::new(symbols::Symbolizer::from_listing(listing));
        match write_rapidbin(dir, &mut n, tmp.as_file(), output)? {
            Ok(()) => {
                let side_tmp = crate::output::output_builder()
                    .tempfile_in(crate::output::temp_dir_for(&side))
                    .with_context(|| format!("cannot write {}", side.display()))?;
                write::RapidBinWriter::write_side(
                    &n,
                    &mut std::io::BufWriter::with_capacity(1 << 20, side_tmp.as_file()),
                )
                .with_context(|| format!("cannot write {}", side.display()))?;
                crate::output::persist(side_tmp, &side)
                    .with_context(|| format!("cannot write {}", side.display()))?;
                crate::output::persist(tmp, output).with_context(cannot)?;
                return Ok((n.counts, format));
            }
            Err(why) => {
                eprintln!(
                    "cprace record: {why}; writing zstd-compressed STD to {} instead",
                    output.display()
                );
                format = OutFormat::Zstd;
                tmp.as_file().set_len(0).with_context(cannot)?;
                tmp.as_file()
                    .seek(SeekFrom::Start(0))
                    .with_context(cannot)?;
            }
        }
    }
    let mut n = write::Namer::new(symbols::Symbolizer::from_listing(listing));
    let mut w = write::StdWriter::default();
    let mut each = |out: &mut dyn Write| -> Result<()> {
        lower_all(
            dir,
            false,
            |low: &lower::Lowerer, l: &lower::Lowered, _: &_| {
                for l in l.singles() {
                    if let Some(e) = n.event(low, &l) {
                        w.event(&n, e, &mut *out).with_context(cannot)?;
                    }
                }
                Ok(())
            },
            None,
        )?;
        w.finish(&mut *out).with_context(cannot)?;
        Ok(())
    };
    if format == OutFormat::Zstd {
        let mut z = zstd::stream::Encoder::new(tmp.as_file(), 1).with_context(cannot)?;
        // Compression on a thread of its own, beside the formatting.
        let _ = z.multithread(1);
        each(&mut z)?;
        z.finish().with_context(cannot)?;
    } else {
        let mut out = write::ThreadWriter::new(tmp.as_file().try_clone().with_context(cannot)?)
            .with_context(cannot)?;
        each(&mut out)?;
        out.finish().with_context(cannot)?;
    }
    crate::output::persist(tmp, output).with_context(cannot)?;
    // A side file left from an earlier RapidBin trace of this name no longer
    // belongs to it.
    let _ = std::fs::remove_file(&side);
    Ok((n.counts, format))
}

/// Lowers the run in `dir` into cprace's binary format on `out` (named
/// `output` in errors); returns `out` and what the trace holds.
fn write_cpt<W: Write>(
    dir: &Path,
    reduce: bool,
    out: W,
    sym: symbols::Symbolizer,
    output: &Path,
) -> Result<(W, write::Counts)> {
    let w = cpt::CptWriter::new(out, sym)
        .with_context(|| format!("cannot write {}", output.display()))?;
    lower_records(dir, reduce, w, &output.display(), None)
}

/// Lowers the run in `dir` through `w` (what its records go to named
/// `what` in errors: `cannot write WHAT`); returns where they went and what
/// the trace holds.
fn lower_records<R: Records>(
    dir: &Path,
    reduce: bool,
    mut w: cpt::CptWriter<R>,
    what: &dyn std::fmt::Display,
    running: Option<&AtomicBool>,
) -> Result<(R::Done, write::Counts)> {
    let (low, stacks) = lower_all(dir, reduce, ToCpt { w: &mut w, what }, running)?;
    let events = w.events;
    let done = w
        .finish(&low, &stacks)
        .with_context(|| format!("cannot write {what}"))?;
    Ok((done, counts_of(&low, events)))
}

/// The summary counts of a lowered recording of `events` trace events.
fn counts_of(low: &lower::Lowerer, events: u64) -> write::Counts {
    write::Counts {
        events,
        threads: low.thread_tids.len() as u64,
        accesses: low.counts.accesses,
        volatiles: low.counts.atomics,
        locks: low.counts.locks,
        forks_joins: low.counts.forks_joins,
        allocations: low.blocks.len() as u64,
        repeats: low.reduce.as_ref().map_or(0, |r| r.dropped),
    }
}

/// Writes the events in `dir` as RapidBin to `file`; the inner error says why
/// the run does not fit RapidBin.
fn write_rapidbin(
    dir: &Path,
    n: &mut write::Namer,
    mut file: &std::fs::File,
    output: &Path,
) -> Result<Result<(), String>> {
    let cannot = || format!("cannot write {}", output.display());
    let mut w = write::RapidBinWriter::default();
    file.write_all(&write::RapidBinWriter::header(n, 0))
        .with_context(cannot)?;
    let mut out =
        write::ThreadWriter::new(file.try_clone().with_context(cannot)?).with_context(cannot)?;
    let mut unfit = None;
    let r = lower_all(
        dir,
        false,
        |low: &lower::Lowerer, l: &lower::Lowered, _: &_| {
            for l in l.singles() {
                if let Some(e) = n.event(low, &l) {
                    match w.event(n, e, &mut out) {
                        Ok(r) => r.with_context(cannot)?,
                        Err(why) => {
                            unfit = Some(why);
                            anyhow::bail!("unfit");
                        }
                    }
                }
            }
            Ok(())
        },
        None,
    );
    if let Some(why) = unfit {
        return Ok(Err(why));
    }
    r?;
    w.finish(&mut out).with_context(cannot)?;
    out.finish().with_context(cannot)?;
    file.seek(SeekFrom::Start(0)).with_context(cannot)?;
    file.write_all(&write::RapidBinWriter::header(n, n.counts.events))
        .with_context(cannot)?;
    Ok(Ok(()))
}
