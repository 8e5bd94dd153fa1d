//! cprace: predict data races from recorded executions of multithreaded programs.
//!
//! Traces are loaded once ([`trace`]), exposed as the relations the CP paper
//! names ([`facts`]), analysed by one engine per relation, and every engine fills
//! the same [`report::Report`].

mod error;
pub use error::{Error, Result};

// Input: traces in every format, and the relations the CP paper reads off them.
pub mod facts;
pub mod trace;

// The vocabulary: relations, engines, and which engines each relation has.
pub mod relation;

// Engines: the building blocks they share, then the race relations, each with
// its engines in its own folder, and deadlock prediction.
pub mod deadlock;
pub mod engine;
pub mod race;

// Results: the one report every engine fills, and witness reorderings.
pub mod report;
pub mod suppress;
pub mod witness;

// Tools on top of the analysis, and recording C/C++ programs.
pub mod record;
pub mod tools;

// Process-wide plumbing: heap accounting, progress display, output files.
pub mod alloc;
mod cache;
pub mod output;
pub mod pipe;
pub mod progress;
