//! Recording real C/C++ programs: `cprace cc` builds them against the
//! recorder runtime (`recorder/`, libcprace_rt.so), `cprace record` runs them
//! and turns the runtime's per-thread event files into an STD trace.

pub mod cc;
pub(crate) mod events;
mod shadow;
pub(crate) mod symbols;
pub(crate) mod write;

pub use write::Counts;

use std::ffi::OsString;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitStatus;

use anyhow::{Context, Result, bail};

/// The trace formats `cprace record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OutFormat {
    /// STD text (`T1|w(x)|prog.c:12`).
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
}

/// A child's exit status as a shell reports it (128 + signal when killed).
pub fn exit_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(2)
}

/// `cprace record -o TRACE -- PROGRAM [ARGS]`: runs the program (or reads
/// the event files of a run) and writes its trace.
pub fn record(args: &Recording) -> Result<Recorded> {
    if let Source::Events(dir) = &args.source {
        let listing = std::fs::read_to_string(dir.join("modules"))
            .with_context(|| format!("{} holds no recording", dir.display()))?;
        let (c, format) = write_trace(dir, &listing, &args.output, args.format)?;
        eprintln!(
            "cprace record: {} events ({} threads) written to {}",
            c.events,
            c.threads,
            args.output.display()
        );
        return Ok(Recorded {
            trace: args.output.clone(),
            format,
            counts: c,
            exit_code: 0,
        });
    }
    let Source::Program(program) = &args.source else {
        unreachable!("event files are converted above")
    };
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let Some((prog, prog_args)) = program.split_first() else {
        bail!("no program to record");
    };
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
    let (counts, format) = write_trace(dir.path(), &listing, &args.output, args.format)?;
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
    Ok(Recorded {
        trace: args.output.clone(),
        format,
        counts,
        exit_code: code,
    })
}

/// Merges the event files in `dir` (with `listing`, the run's `modules`
/// file) into the trace `output` in `format` (written to a temporary file
/// next to it, renamed over it only when complete). RapidBin that the run does not fit becomes zstd-compressed STD,
/// with a note on stderr. Returns what it wrote and in which format.
pub fn write_trace(
    dir: &std::path::Path,
    listing: &str,
    output: &std::path::Path,
    format: OutFormat,
) -> Result<(write::Counts, OutFormat)> {
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
                return Ok((n.counts, format));
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
    Ok((n.counts, format))
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
