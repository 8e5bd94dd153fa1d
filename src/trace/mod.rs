//! Traces: the event model, the three input formats, validation and interning.

pub(crate) mod cprace_bin;
pub mod csv_format;
pub(crate) mod decompress;
pub(crate) mod error;
pub(crate) mod intern;
pub mod lenient;
pub(crate) mod line_cache;
pub(crate) mod lines;
pub mod load;
pub mod model;
pub(crate) mod parallel;
pub mod rapid_bin;
pub mod rapid_csv;
pub mod recorded;
pub(crate) mod records;
pub mod reduce;
pub(crate) mod scan;
pub mod std_format;
#[cfg(test)]
mod testing;
pub(crate) mod validate;

pub use error::LoadError;
pub(crate) use load::stream_retiring;
pub use load::{
    Format, carries_stacks, load, load_recorded, load_str, recorded_stacks, stream, stream_recorded,
};
pub use model::{Event, EventId, LoadStats, Names, Op, ThreadId, Trace};
pub use recorded::Recording;
