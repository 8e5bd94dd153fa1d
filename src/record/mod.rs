//! Recording real C/C++ programs: `cprace cc` builds them against the
//! recorder runtime (`recorder/`, libcprace_rt.so), `cprace record` runs them
//! and turns the runtime's per-thread event files into an STD trace.

pub mod cc;
pub mod events;
pub mod symbols;
pub mod write;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitStatus;

use anyhow::{Context, Result, bail};

use crate::analyze::Relation;

/// Arguments of `cprace cc`.
#[derive(clap::Args, Debug)]
pub struct CcArgs {
    /// The compiler to run (gcc, clang, g++, ...).
    pub compiler: OsString,
    /// The compiler's arguments, passed through.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// Arguments of `cprace record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The STD trace to write (replaced only when the recording succeeds).
    #[arg(short, long)]
    pub output: PathBuf,
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
        let c = write_trace(dir, &listing, &args.output)?;
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
    let counts = write_trace(dir.path(), &listing, &args.output)?;
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

/// Merges the event files in `dir` into the STD trace `output` (written to a
/// temporary file next to it, renamed over it only when complete).
pub fn write_trace(
    dir: &std::path::Path,
    listing: &str,
    output: &std::path::Path,
) -> Result<write::Counts> {
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(&parent)
        .with_context(|| format!("cannot create a file in {}", parent.display()))?;
    let mut w = write::StdWriter::new(symbols::Symbolizer::from_listing(listing));
    {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
        events::merge(dir, |e| w.event(e, &mut out))
            .and_then(|_| out.flush().map_err(Into::into))
            .with_context(|| format!("cannot write {}", output.display()))?;
    }
    tmp.persist(output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    Ok(w.counts)
}
