//! cprace: predict data races from recorded executions of multithreaded programs.
//!
//! Traces are loaded once ([`trace`]), exposed as the relations the CP paper
//! names ([`facts`]), analysed by one engine per relation, and every engine fills
//! the same [`report::Report`].

// Input: traces in every format, and the relations the CP paper reads off them.
pub mod facts;
pub mod trace;

// The vocabulary: relations, engines, and which engines each relation has.
pub mod relation;

// Engines: the building blocks they share, then the race relations, each with
// its engines in its own folder.
pub mod engine;
pub mod race;

// Results: the one report every engine fills, and witness reorderings.
pub mod report;
pub mod witness;

// Tools on top of the analysis, and recording C/C++ programs.
pub mod record;
pub mod tools;

// Process-wide plumbing: heap accounting, progress display, output files.
pub mod alloc;
pub mod output;
pub mod progress;

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
