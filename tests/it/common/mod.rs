//! Shared test helpers.

pub mod browser;
pub mod cli;
pub mod deadlock_gen;
pub mod hb;
pub mod laws;
pub mod oracle;
pub mod query;
pub mod recorded;
pub mod traces;
