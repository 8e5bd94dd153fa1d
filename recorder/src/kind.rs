//! Event kinds and the words of the event files. cprace's reader
//! (`src/record/events.rs`) keeps the same numbers.
//!
//! An event file is a sequence of little-endian 64-bit words; the top four
//! bits of a word ([`TAG_SHIFT`]) say what it is:
//! - tag [`READ`] or [`WRITE`]: a plain access, one word: the address in bits
//!   0-47, the slot of its pc in bits 48-57 (see [`TAG_PC`]); its `seq` is the
//!   thread's current one (see [`TAG_SEQ`]).
//! - [`TAG_SEQ`]: bits 0-39 become the thread's current `seq`, the number of
//!   synchronization events begun before the plain accesses that follow.
//! - [`TAG_PC`]: bits 48-57 name a slot of the thread's table of
//!   [`PC_SLOTS`] pcs (all 0 at first), which from now on holds the pc in
//!   bits 0-47.
//! - [`TAG_LONG`]: any event, four words: this one with the kind in bits
//!   0-7, then the address, the pc (the block size for [`FREE`]), and
//!   `seq | arg << 40`. Every synchronization event is written so, and a
//!   plain access whose address or pc does not fit 48 bits.

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

/// The first line of the `modules` file: names this format, so that cprace
/// refuses event files it cannot read (a program built by another version).
pub const FORMAT: &str = "cprace-events 2";

/// Bit position of a word's tag.
pub const TAG_SHIFT: u32 = 60;
/// Tag: the thread's current `seq` changes.
pub const TAG_SEQ: u64 = 2;
/// Tag: a slot of the thread's pc table changes.
pub const TAG_PC: u64 = 3;
/// Tag: an event written in four words.
pub const TAG_LONG: u64 = 4;
/// Words of a [`TAG_LONG`] event.
pub const LONG_WORDS: usize = 4;
/// Slots of a thread's pc table (10 bits of a plain access's word).
pub const PC_SLOTS: usize = 1 << 10;
/// Addresses and pcs a plain access's word holds are below this.
pub const SHORT_LIMIT: u64 = 1 << 48;

/// The slot of `pc` in a thread's pc table (a multiplicative hash: return
/// addresses a few bytes apart spread over the table).
#[inline(always)]
pub fn pc_slot(pc: u64) -> usize {
    (pc.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize
}
