//! cprace: predict data races from recorded executions of multithreaded programs.
//!
//! Traces are loaded once ([`trace`]), exposed as the relations the CP paper
//! names ([`facts`]), analysed by one engine per relation, and every engine fills
//! the same [`report::Report`].

pub mod alloc;
pub mod analyze;
pub mod cli;
pub mod clock;
pub mod convert;
pub mod cp;
pub mod deadlock;
pub mod detector;
pub mod facts;
pub mod generate;
pub mod hb;
pub mod history;
pub mod lenient;
pub mod output;
pub mod plot;
pub mod po;
pub mod progress;
pub mod query;
pub mod record;
pub mod reference;
pub mod report;
pub mod shb;
pub mod stats;
pub mod sweep;
pub mod syncp;
pub mod trace;
pub mod wcp;
pub mod witness;

/// A command-line usage error (exit code 2), as opposed to a failed analysis.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An error that carries its own exit status (e.g. 3 when `--engine compare`
/// finds engines disagreeing). Every other error exits with 2.
#[derive(Debug)]
pub struct ExitStatus(pub u8, pub String);

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl std::error::Error for ExitStatus {}
