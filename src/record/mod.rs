//! Recording real C/C++ programs: `cprace cc` builds them against the
//! recorder runtime (`recorder/`, libcprace_rt.so), `cprace record` runs them
//! and turns the runtime's per-thread event files into an STD trace.

pub mod cc;
pub mod events;
mod shadow;
pub mod symbols;
pub mod write;

use std::ffi::OsString;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitStatus;

use anyhow::{Context, Result, bail};

use crate::race::Relation;

/// Arguments of `cprace cc`.
#[derive(clap::Args, Debug)]
pub struct CcArgs {
    /// The compiler to run (gcc, clang, g++, ...).
    pub compiler: OsString,
    /// The compiler's arguments, passed through.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// The trace formats `cprace record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    /// STD text (`T1|w(x)|prog.c:12`).
    Std,
    /// STD text compressed with zstd (every cprace command reads it).
    Zstd,
    /// RapidBin (8 bytes an event) with its side file of names,
    /// `TRACE.names.json`; zstd-compressed STD instead when the run does not
    /// fit RapidBin (volatile accesses, over 1024 threads or 32,767
    /// locations).
    #[value(name = "rapidbin")]
    RapidBin,
}

impl OutFormat {
    /// The format an output's name asks for: `.bin`/`.rapidbin` RapidBin,
    /// `.zst`/`.zstd` zstd-compressed STD, anything else STD.
    pub fn for_path(p: &std::path::Path) -> OutFormat {
        match p.extension().and_then(|e| e.to_str()) {
            Some("bin" | "rapidbin") => OutFormat::RapidBin,
            Some("zst" | "zstd") => OutFormat::Zstd,
            _ => OutFormat::Std,
        }
    }
}

/// Arguments of `cprace record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The trace to write (replaced only when the recording succeeds), in
    /// the format `--format` names, by default the one its name asks for:
    /// `.bin` RapidBin (the fastest: 8 bytes an event), `.zst` zstd-compressed
    /// STD, anything else STD text.
    #[arg(short, long)]
    pub output: PathBuf,
    /// The trace's format, whatever its name.
    #[arg(long, value_enum)]
    pub format: Option<OutFormat>,
    /// Analyze the trace with this relation right away and print the report
    /// (exit status then that of `cprace analyze`).
    #[arg(long, value_enum)]
    pub analyze: Option<Relation>,
    /// Convert the event files a run left in this directory (made by running
    /// a `cprace cc` program with CPRACE_RECORD_DIR=DIR) instead of running a
    /// program: measures the trace writing alone.
    #[arg(long, value_name = "DIR", conflicts_with = "program")]
    pub from_events: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(
        required_unless_present = "from_events",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub program: Vec<OsString>,
}

impl RecordArgs {
    /// The output format: `--format`, else the one the output's name asks for.
    pub fn out_format(&self) -> OutFormat {
        self.format
            .unwrap_or_else(|| OutFormat::for_path(&self.output))
    }
}

/// A child's exit status as a shell reports it (128 + signal when killed).
pub fn exit_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(2)
}

/// `cprace cc COMPILER ARGS...`.
pub fn run_cc(args: &CcArgs) -> Result<i32> {
    cc::run(&args.compiler, &args.args)
}

/// `cprace record -o TRACE [--analyze REL] -- PROGRAM [ARGS]`: returns the
/// program's exit status (or the analysis's with `--analyze`).
pub fn run_record(args: &RecordArgs, out: &mut impl Write) -> Result<i32> {
    if let Some(dir) = &args.from_events {
        let listing = std::fs::read_to_string(dir.join("modules"))
            .with_context(|| format!("{} holds no recording", dir.display()))?;
        let c = write_trace(dir, &listing, &args.output, args.out_format())?;
        eprintln!(
            "cprace record: {} events ({} threads) written to {}",
            c.events,
            c.threads,
            args.output.display()
        );
        return Ok(0);
    }
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let (prog, prog_args) = args.program.split_first().expect("clap requires a program");
    let st = std::process::Command::new(prog)
        .args(prog_args)
        .env("CPRACE_RECORD_DIR", dir.path())
        .status()
        .with_context(|| format!("cannot run `{}`", prog.to_string_lossy()))?;
    let code = exit_code(st);
    if let Ok(msg) = std::fs::read_to_string(dir.path().join("error")) {
        bail!("recording `{}` failed: {msg}", prog.to_string_lossy());
    }
    let listing = std::fs::read_to_string(dir.path().join("modules")).unwrap_or_default();
    if listing.is_empty() {
        bail!(
            "`{}` recorded nothing (exit status {code}): build it with `cprace cc`, and let it exit normally (not by a signal, abort or _exit)",
            prog.to_string_lossy()
        );
    }
    let counts = write_trace(dir.path(), &listing, &args.output, args.out_format())?;
    eprintln!(
        "cprace record: {} events ({} threads; {} accesses, {} volatile, {} lock, {} fork/join) written to {}; `{}` exited with status {code}",
        counts.events,
        counts.threads,
        counts.accesses,
        counts.volatiles,
        counts.locks,
        counts.forks_joins,
        args.output.display(),
        prog.to_string_lossy(),
    );
    match args.analyze {
        None => Ok(code),
        Some(rel) => {
            let cli = <crate::cli::Cli as clap::Parser>::try_parse_from([
                OsString::from("cprace"),
                "analyze".into(),
                args.output.clone().into_os_string(),
                "--relation".into(),
                rel.name().into(),
            ])?;
            crate::cli::run(cli, out)
        }
    }
}

/// Merges the event files in `dir` (with `listing`, the run's `modules`
/// file) into the trace `output` in `format` (written to a temporary file
/// next to it, renamed over it only when complete). RapidBin that the run does not fit becomes zstd-compressed STD,
/// with a note on stderr.
pub fn write_trace(
    dir: &std::path::Path,
    listing: &str,
    output: &std::path::Path,
    format: OutFormat,
) -> Result<write::Counts> {
    let listing = events::segments(listing)?;
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = crate::output::output_builder()
        .tempfile_in(&parent)
        .with_context(|| format!("cannot create a file in {}", parent.display()))?;
    let cannot = || format!("cannot write {}", output.display());
    let side = crate::trace::rapid_bin::side_path(output);
    let mut format = format;
    let mut n = write::Namer::new(symbols::Symbolizer::from_listing(listing));
    if format == OutFormat::RapidBin {
        match write_rapidbin(dir, &mut n, tmp.as_file()).with_context(cannot)? {
            Ok(()) => {
                let side_tmp = crate::output::output_builder()
                    .tempfile_in(&parent)
                    .with_context(|| format!("cannot create a file in {}", parent.display()))?;
                write::RapidBinWriter::write_side(
                    &n,
                    &mut std::io::BufWriter::with_capacity(1 << 20, side_tmp.as_file()),
                )
                .with_context(|| format!("cannot write {}", side.display()))?;
                side_tmp
                    .persist(&side)
                    .with_context(|| format!("cannot write {}", side.display()))?;
                tmp.persist(output).with_context(cannot)?;
                return Ok(n.counts);
            }
            Err(why) => {
                eprintln!(
                    "cprace record: {why}; writing zstd-compressed STD to {} instead",
                    output.display()
                );
                format = OutFormat::Zstd;
                n = write::Namer::new(symbols::Symbolizer::from_listing(listing));
                tmp.as_file().set_len(0).with_context(cannot)?;
                tmp.as_file()
                    .seek(SeekFrom::Start(0))
                    .with_context(cannot)?;
            }
        }
    }
    let mut w = write::StdWriter::default();
    let mut each = |n: &mut write::Namer, out: &mut dyn Write| -> Result<()> {
        events::merge(dir, |e| {
            if let Some(e) = n.event(e) {
                w.event(n, e, &mut *out)?;
            }
            Ok(())
        })?;
        w.finish(&mut *out)?;
        Ok(())
    };
    if format == OutFormat::Zstd {
        let mut z = zstd::stream::Encoder::new(tmp.as_file(), 1).with_context(cannot)?;
        // Compression on a thread of its own, beside the formatting.
        let _ = z.multithread(1);
        each(&mut n, &mut z).with_context(cannot)?;
        z.finish().with_context(cannot)?;
    } else {
        let mut out = write::ThreadWriter::new(tmp.as_file().try_clone().with_context(cannot)?)
            .with_context(cannot)?;
        each(&mut n, &mut out).with_context(cannot)?;
        out.finish().with_context(cannot)?;
    }
    tmp.persist(output).with_context(cannot)?;
    // A side file left from an earlier RapidBin trace of this name no longer
    // belongs to it.
    let _ = std::fs::remove_file(&side);
    Ok(n.counts)
}

/// Writes the events in `dir` as RapidBin to `file`; the inner error says why
/// the run does not fit RapidBin.
fn write_rapidbin(
    dir: &std::path::Path,
    n: &mut write::Namer,
    mut file: &std::fs::File,
) -> Result<Result<(), String>> {
    let mut w = write::RapidBinWriter::default();
    file.write_all(&write::RapidBinWriter::header(n, 0))?;
    let mut out = write::ThreadWriter::new(file.try_clone()?)?;
    let mut unfit = None;
    let r = events::merge(dir, |e| {
        if let Some(e) = n.event(e) {
            match w.event(n, e, &mut out) {
                Ok(r) => r?,
                Err(why) => {
                    unfit = Some(why);
                    anyhow::bail!("unfit");
                }
            }
        }
        Ok(())
    });
    if let Some(why) = unfit {
        return Ok(Err(why));
    }
    r?;
    w.finish(&mut out)?;
    out.finish()?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&write::RapidBinWriter::header(n, n.counts.events))?;
    Ok(Ok(()))
}
