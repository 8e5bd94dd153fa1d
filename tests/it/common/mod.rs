//! Shared test helpers.

pub mod cli;
pub mod deadlock_gen;
pub mod laws;
pub mod oracle;
pub mod query;
pub mod sweep;
pub mod traces;
