//! What every engine builds on: logical clocks, the per-variable access
//! history that decides races and picks their witnesses, tables by
//! variable that give back what retired variables held, the streaming
//! pipeline that feeds detectors, and the helpers of the Datalog reference
//! engines.

pub(crate) mod clock;
pub mod detector;
pub mod history;
pub(crate) mod paged;
pub mod reference;
pub mod sync;
