//! The `cprace` binary: parse arguments, call the library, map errors to exit codes.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Failure, run};

/// Counts heap bytes so `cprace sweep` can report each run's peak memory.
#[global_allocator]
static ALLOC: cprace::alloc::Counting = cprace::alloc::Counting;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Buffer the whole output so a failure never leaves a partial result behind.
    let mut out = Vec::new();
    match run(cli, &mut out) {
        Ok(code) => {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout.write_all(&out).and_then(|_| stdout.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                eprintln!("cprace: error: cannot write output: {e}");
                return ExitCode::from(2);
            }
            ExitCode::from(code as u8)
        }
        // A reader that closed the pipe early (`cprace ... | head -1`) wanted
        // no more output: exit quietly, as ripgrep does.
        Err(Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(Failure::Error { code, error }) => {
            eprintln!("cprace: error: {error:#}");
            ExitCode::from(code)
        }
    }
}
