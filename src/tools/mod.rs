//! Tools built on the analysis: trace statistics, conversion and generation,
//! the window sweep and its figure, and queries of the derived relations.

pub mod convert;
pub mod describe;
pub mod generate;
pub mod plot;
pub mod query;
pub mod stats;
pub mod sweep;
