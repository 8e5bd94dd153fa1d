//! Shared test helpers.

pub mod cli;
pub mod oracle;
pub mod query;
pub mod traces;
