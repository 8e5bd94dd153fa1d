//! Event kinds (the top byte of an event's third word). cprace's reader
//! (`src/record/events.rs`) keeps the same numbers.

/// Data read of `addr`.
pub const READ: u64 = 0;
/// Data write of `addr`.
pub const WRITE: u64 = 1;
/// Atomic (volatile) read of `addr`.
pub const VREAD: u64 = 2;
/// Atomic (volatile) write of `addr`.
pub const VWRITE: u64 = 3;
/// Lock `addr` acquired.
pub const ACQUIRE: u64 = 4;
/// Lock `addr` about to be released.
pub const RELEASE: u64 = 5;
/// Thread `addr` (a recorder thread id) about to be created.
pub const FORK: u64 = 6;
/// Thread `addr` joined.
pub const JOIN: u64 = 7;
/// Heap block at `addr` of `pc` bytes about to be freed (not a trace event:
/// later accesses to those bytes are new variables).
pub const FREE: u64 = 8;
/// Volatile read of a synchronization object's variable: `arg` 0 is the
/// object itself (semaphore, barrier, once, annotation), 1 the writer side of
/// an rwlock, `2 + t` the reader side of thread `t`.
pub const SYNC_VREAD: u64 = 9;
/// Volatile write of a synchronization object's variable (`arg` as above).
pub const SYNC_VWRITE: u64 = 10;
