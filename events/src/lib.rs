//! The words of the recorder runtime's per-thread event files: the one
//! definition that the runtime (`recorder/`, which writes them) and cprace
//! (`src/record/`, which reads them) share.
//!
//! A thread's file is a sequence of little-endian 64-bit words. The top four
//! bits of a word ([`TAG_SHIFT`]) say what it is; a word of tag 0 has not been
//! written yet (the files are zero-filled mappings), so the first zero word
//! ends what the thread committed, however the program ended.
//!
//! - Tags 1 to 8 ([`access_tag`]): a plain read or write of 1, 2, 4 or 8
//!   bytes, one word: the address in bits 0-47, the slot of its pc in the
//!   thread's pc table in bits 48-57. It takes the thread's current `seq` and
//!   stack node.
//! - [`TAG_SEQ`]: bits 0-39 become the thread's current `seq`: the number of
//!   synchronization events begun before the accesses that follow.
//! - [`TAG_PC`]: slot bits 48-57 of the thread's pc table now holds bits 0-47.
//! - [`TAG_STACK`]: bits 0-31 become the thread's current stack node.
//! - [`TAG_NODE`]: a new stack node (numbered 1, 2, ... per thread; 0 is the
//!   empty stack): bits 0-31 its parent, the next word the pc of the call
//!   into it (two words).
//! - [`TAG_LONG`]: any other event: bits 0-7 its [`Kind`], bits 8-23 flags,
//!   bits 24-27 the number of payload words that follow (at least 3):
//!   address, pc, `seq | arg << 40`, then the kind's extra words.
//!   An atomic operation whose address and pc are below 2^48 takes two
//!   words instead ([`atomic_word`]): the first has kind [`Kind::Atomic`],
//!   its flags, a payload count of 1 and, in bits 28-59, its number less the
//!   thread's current `seq` (which then becomes its number); the second
//!   holds the address and the slot of the pc, as a plain access's word (a
//!   C++ test suite makes a hundred million atomic operations: half its
//!   files' bytes in the four-word form).
//! - [`TAG_PENDING`]: a long event whose call has not returned: a thread
//!   blocked in a lock. The runtime rewrites the tag to [`TAG_LONG`] when
//!   the call returns; a file that ends with a pending event belongs to a
//!   thread that never got the lock. A pending event followed by other
//!   records of its thread is void (the runtime recorded the acquire anew
//!   after a signal handler's events).
//!
//! - [`TAG_SKIP`]: nothing more in this chunk: the next record starts at
//!   the next multiple of [`CHUNK_WORDS`] words of the file.
//!
//! A record is committed by writing its first word last (with release
//! order), so a reader that sees a nonzero first word sees the whole record.
//! The runtime maps its file [`CHUNK_WORDS`] words at a time and never lets
//! a record straddle two chunks.

#![no_std]
#![forbid(unsafe_code)]

/// The first line of the `modules` file: names this format, so that cprace
/// refuses event files it cannot read (a program built by another version).
pub const FORMAT: &str = "cprace-events 6";

/// Bit position of a word's tag.
pub const TAG_SHIFT: u32 = 60;
/// The low 48 bits: addresses and pcs.
pub const LOW48: u64 = (1 << 48) - 1;
/// `seq` keeps 40 bits.
pub const SEQ_MASK: u64 = (1 << 40) - 1;
/// Tag: the thread's current `seq` changes.
pub const TAG_SEQ: u64 = 9;
/// Tag: a slot of the thread's pc table changes.
pub const TAG_PC: u64 = 10;
/// Tag: the thread's current stack node changes.
pub const TAG_STACK: u64 = 11;
/// Tag: a new stack node (two words).
pub const TAG_NODE: u64 = 12;
/// Tag: a long event.
pub const TAG_LONG: u64 = 13;
/// Tag: a long event whose call has not returned yet.
pub const TAG_PENDING: u64 = 14;
/// Tag: the rest of this chunk is unused.
pub const TAG_SKIP: u64 = 15;
/// Words of one chunk of a thread's file (1 MiB).
pub const CHUNK_WORDS: usize = 1 << 17;
/// Bytes of a thread's tail file (`t<ID>.tail`: the chunk it is writing)
/// before its chunk: the first 8 are the index of that chunk in the
/// thread's `.bin` file.
pub const TAIL_HEADER_BYTES: u64 = 4096;
/// Call depth the runtime records by default (deeper calls are not pushed).
pub const DEFAULT_STACK_DEPTH: u32 = 255;
/// Slots of a thread's pc table (10 bits of a plain access's word).
pub const PC_SLOTS: usize = 1 << 10;
/// Most payload words of a long event.
pub const MAX_PAYLOAD: usize = 6;
/// Words of the longest record (a long event with its header).
pub const MAX_RECORD: usize = 1 + MAX_PAYLOAD;
/// Addresses and pcs a plain access's word holds are below this.
pub const SHORT_LIMIT: u64 = 1 << 48;
/// Largest recorder thread id (ids are dense from 0; 24 bits of `arg`).
pub const MAX_TID: u64 = (1 << 24) - 1;
/// Largest heap block, range or object size a file may hold (the user half
/// of the x86-64 address space).
pub const MAX_SIZE: u64 = 1 << 47;
/// Most bytes one range event or synchronization-object event covers. The
/// runtime splits a longer range (a large `memcpy`) into events of at most
/// this many bytes, so that what a file's events lower to is bounded by the
/// file's size: a corrupt size word cannot stand for terabytes of accesses.
pub const MAX_RANGE: u64 = 4096;

/// The slot of `pc` in a thread's pc table (a multiplicative hash: return
/// addresses a few bytes apart spread over the table).
#[inline(always)]
pub fn pc_slot(pc: u64) -> usize {
    (pc.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize
}

/// Tag of a plain access of `1 << log2size` bytes (log2size 0 to 3).
#[inline(always)]
pub const fn access_tag(write: bool, log2size: u32) -> u64 {
    1 + write as u64 + 2 * log2size as u64
}

/// The word of a plain access whose pc sits in `slot` (address below 2^48).
#[inline(always)]
pub const fn access_word(write: bool, log2size: u32, slot: usize, addr: u64) -> u64 {
    access_tag(write, log2size) << TAG_SHIFT | (slot as u64) << 48 | addr
}

/// The word setting the thread's `seq`.
#[inline(always)]
pub const fn seq_word(seq: u64) -> u64 {
    TAG_SEQ << TAG_SHIFT | (seq & SEQ_MASK)
}

/// The word putting `pc` (below 2^48) in `slot` of the thread's pc table.
#[inline(always)]
pub const fn pc_word(slot: usize, pc: u64) -> u64 {
    TAG_PC << TAG_SHIFT | (slot as u64) << 48 | pc
}

/// The word making `node` the thread's current stack node.
#[inline(always)]
pub const fn stack_word(node: u32) -> u64 {
    TAG_STACK << TAG_SHIFT | node as u64
}

/// The first word of a new stack node whose parent is `parent` (the pc
/// follows in the next word).
#[inline(always)]
pub const fn node_word(parent: u32) -> u64 {
    TAG_NODE << TAG_SHIFT | parent as u64
}

/// The first word of a long event of `kind` with `flags` and `payload`
/// payload words (3 to [`MAX_PAYLOAD`]); `pending` for a call that has not
/// returned.
#[inline(always)]
pub const fn long_word(kind: Kind, flags: u16, payload: usize, pending: bool) -> u64 {
    let tag = if pending { TAG_PENDING } else { TAG_LONG };
    tag << TAG_SHIFT | (payload as u64) << 24 | (flags as u64) << 8 | kind as u64
}

/// The first word of a two-word atomic operation with `flags`, numbered
/// `delta` after the thread's current `seq`; the second is
/// [`atomic_payload`].
#[inline(always)]
pub const fn atomic_word(flags: u16, delta: u32) -> u64 {
    TAG_LONG << TAG_SHIFT
        | (delta as u64) << 28
        | 1 << 24
        | (flags as u64) << 8
        | Kind::Atomic as u64
}

/// The second word of a two-word atomic operation: the address (below
/// 2^48) and the slot of its pc, as in [`access_word`].
#[inline(always)]
pub const fn atomic_payload(slot: usize, addr: u64) -> u64 {
    (slot as u64) << 48 | addr
}

/// The pc slot of a plain access's, a pc word's or a two-word atomic's
/// second word.
#[inline(always)]
const fn slot_of(word: u64) -> usize {
    (word >> 48) as usize & (PC_SLOTS - 1)
}

/// The third payload word of a long event.
#[inline(always)]
pub const fn seq_arg(seq: u64, arg: u64) -> u64 {
    (seq & SEQ_MASK) | arg << 40
}

/// What a long event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// An atomic operation on `addr` (flags: [`Atomic`]).
    Atomic = 1,
    /// Lock `addr` acquired (flags: [`LOCK_SHARED`], [`LOCK_TRY`]).
    Acquire = 2,
    /// Lock `addr` about to be released (flags: [`LOCK_SHARED`]).
    Release = 3,
    /// Thread `addr` (a recorder thread id) about to be created.
    Fork = 4,
    /// Thread `addr` joined.
    Join = 5,
    /// Heap block `addr` of `extra[0]` bytes allocated (flags: [`Alloc`]).
    Alloc = 6,
    /// Heap block `addr` of `extra[0]` bytes about to be freed (flags: [`Alloc`]).
    Free = 7,
    /// `extra[0]` bytes from `addr` read or written by a libc function or a
    /// range instrumentation (flags: [`RANGE_WRITE`]). Takes the current `seq`.
    Range = 8,
    /// Acquire of the synchronization variable (`addr`, `arg`): `arg`
    /// [`SYNC_MEMORY`] is the memory at `addr` (semaphores, barriers, once
    /// controls, static guards), [`SYNC_KEY`] an object that is not memory
    /// (a file descriptor, a fiber, an annotation's key).
    SyncRead = 9,
    /// Release of the synchronization variable (`addr`, `arg`).
    SyncWrite = 10,
    /// A synchronization object's memory: initialized or destroyed (a write
    /// of its `extra[0]` bytes) or used (an atomic read of its first byte);
    /// flags: [`Object`]. Takes the current `seq`.
    Object = 11,
    /// Thread `addr` is named `extra[0..2]` (16 bytes, NUL-padded).
    /// Takes the current `seq`.
    ThreadName = 12,
    /// The thread starts; its stack is `addr..extra[0]`, its static TLS
    /// `extra[1]..extra[2]` (0 when unknown). `pc`: its start routine.
    /// Takes the current `seq`.
    ThreadStart = 13,
    /// The thread ends (returns from its start routine or exits).
    ThreadEnd = 14,
    /// Races on the `extra[0]` bytes from `addr` are benign and not to be
    /// reported (`AnnotateBenignRaceSized`). Takes the current `seq`.
    Benign = 15,
}

impl Kind {
    /// The kind numbered `k`.
    pub const fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::Atomic,
            2 => Kind::Acquire,
            3 => Kind::Release,
            4 => Kind::Fork,
            5 => Kind::Join,
            6 => Kind::Alloc,
            7 => Kind::Free,
            8 => Kind::Range,
            9 => Kind::SyncRead,
            10 => Kind::SyncWrite,
            11 => Kind::Object,
            12 => Kind::ThreadName,
            13 => Kind::ThreadStart,
            14 => Kind::ThreadEnd,
            15 => Kind::Benign,
            _ => return None,
        })
    }

    /// Payload words of this kind.
    pub const fn payload(self) -> usize {
        match self {
            Kind::Alloc | Kind::Free | Kind::Range | Kind::Object | Kind::Benign => 4,
            Kind::ThreadName => 5,
            Kind::ThreadStart => 6,
            _ => 3,
        }
    }

    /// True when the event takes a number of its own in the run's order of
    /// synchronization events (a fetch-add of the global counter); the
    /// others, like plain accesses, carry the number of synchronization
    /// events begun before them.
    pub const fn numbered(self) -> bool {
        !matches!(
            self,
            Kind::Range | Kind::Object | Kind::ThreadName | Kind::ThreadStart | Kind::Benign
        )
    }
}

/// `arg` of a synchronization variable that is the memory at its address.
pub const SYNC_MEMORY: u32 = 0;
/// `arg` of a synchronization variable named by an opaque key.
pub const SYNC_KEY: u32 = 1;

/// Flag of [`Kind::Acquire`]/[`Kind::Release`]: the shared (reader) side of
/// an rwlock.
pub const LOCK_SHARED: u16 = 1;
/// Flag of [`Kind::Acquire`]: a trylock (it never blocked).
pub const LOCK_TRY: u16 = 2;
/// Flag of [`Kind::Acquire`]/[`Kind::Release`]: the lock is an rwlock
/// (shared or exclusive side).
pub const LOCK_RW: u16 = 4;
/// Flag of [`Kind::Acquire`]: the lock's owner died holding it (a robust
/// mutex, taken with EOWNERDEAD).
pub const LOCK_OWNER_DEAD: u16 = 8;
/// Flag of [`Kind::Range`]: a write (else a read).
pub const RANGE_WRITE: u16 = 1;

/// C11 memory orders, as the instrumentation passes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Order {
    /// No synchronization.
    Relaxed = 0,
    /// Treated as acquire (as every compiler does).
    Consume = 1,
    /// Acquire.
    Acquire = 2,
    /// Release.
    Release = 3,
    /// Acquire and release.
    AcqRel = 4,
    /// Sequentially consistent.
    SeqCst = 5,
}

impl Order {
    /// The order the instrumentation's `int mo` names (unknown values are
    /// taken as seq_cst: the strongest, so never a false alarm).
    pub const fn from_c(mo: i32) -> Order {
        match mo & 0xffff {
            0 => Order::Relaxed,
            1 => Order::Consume,
            2 => Order::Acquire,
            3 => Order::Release,
            4 => Order::AcqRel,
            _ => Order::SeqCst,
        }
    }

    const fn from_bits(b: u16) -> Order {
        match b {
            0 => Order::Relaxed,
            1 => Order::Consume,
            2 => Order::Acquire,
            3 => Order::Release,
            4 => Order::AcqRel,
            _ => Order::SeqCst,
        }
    }

    /// True when a load with this order acquires.
    pub const fn acquires(self) -> bool {
        matches!(
            self,
            Order::Consume | Order::Acquire | Order::AcqRel | Order::SeqCst
        )
    }

    /// True when a store with this order releases.
    pub const fn releases(self) -> bool {
        matches!(self, Order::Release | Order::AcqRel | Order::SeqCst)
    }
}

/// What an atomic operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AtomicOp {
    /// A load.
    Load = 0,
    /// A store.
    Store = 1,
    /// A read-modify-write (exchange, fetch-op, successful compare-exchange).
    Rmw = 2,
    /// A compare-exchange that failed: a load with the failure order.
    FailedCas = 3,
    /// A fence (`addr` 0, no access): orders the thread's relaxed atomics.
    Fence = 4,
}

/// The flags of a [`Kind::Atomic`] event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Atomic {
    /// The operation.
    pub op: AtomicOp,
    /// Its memory order.
    pub order: Order,
    /// Bytes accessed, as a power of two (0 to 4: 1 to 16 bytes).
    pub log2size: u8,
}

impl Atomic {
    /// The flags word.
    pub const fn flags(self) -> u16 {
        (self.log2size as u16 & 7) | (self.order as u16) << 3 | (self.op as u16) << 6
    }

    /// Decodes the flags word (None: not one [`Atomic::flags`] writes).
    pub const fn from_flags(f: u16) -> Option<Atomic> {
        let op = match (f >> 6) & 7 {
            0 => AtomicOp::Load,
            1 => AtomicOp::Store,
            2 => AtomicOp::Rmw,
            3 => AtomicOp::FailedCas,
            4 => AtomicOp::Fence,
            _ => return None,
        };
        let order = (f >> 3) & 7;
        if order > 5 || f & 7 > 4 || f >> 9 != 0 {
            return None;
        }
        Some(Atomic {
            op,
            order: Order::from_bits(order),
            log2size: (f & 7) as u8,
        })
    }
}

/// Which synchronization object a [`Kind::Object`] event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectType {
    /// pthread_mutex_t.
    Mutex = 0,
    /// pthread_cond_t.
    Cond = 1,
    /// pthread_barrier_t.
    Barrier = 2,
    /// pthread_rwlock_t.
    RwLock = 3,
    /// sem_t.
    Semaphore = 4,
    /// pthread_spinlock_t.
    Spin = 5,
}

/// What happens to the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectOp {
    /// `*_init`: a write of the object.
    Init = 0,
    /// `*_destroy`: a write of the object.
    Destroy = 1,
    /// Any other call on it (signal, broadcast, ...): an atomic read.
    Use = 2,
}

/// The flags of a [`Kind::Object`] event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Object {
    /// The object's type.
    pub ty: ObjectType,
    /// What happens to it.
    pub op: ObjectOp,
}

impl Object {
    /// The flags word.
    pub const fn flags(self) -> u16 {
        self.ty as u16 | (self.op as u16) << 4
    }

    /// Decodes the flags word.
    pub const fn from_flags(f: u16) -> Option<Object> {
        let ty = match f & 15 {
            0 => ObjectType::Mutex,
            1 => ObjectType::Cond,
            2 => ObjectType::Barrier,
            3 => ObjectType::RwLock,
            4 => ObjectType::Semaphore,
            5 => ObjectType::Spin,
            _ => return None,
        };
        let op = match f >> 4 {
            0 => ObjectOp::Init,
            1 => ObjectOp::Destroy,
            2 => ObjectOp::Use,
            _ => return None,
        };
        Some(Object { ty, op })
    }
}

/// How a heap block came or went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Alloc {
    /// malloc, calloc, realloc, aligned_alloc, posix_memalign, ...
    Malloc = 0,
    /// C++ operator new (or new[]).
    New = 1,
}

impl Alloc {
    /// The flags word.
    pub const fn flags(self) -> u16 {
        self as u16
    }

    /// Decodes the flags word.
    pub const fn from_flags(f: u16) -> Option<Alloc> {
        match f {
            0 => Some(Alloc::Malloc),
            1 => Some(Alloc::New),
            _ => None,
        }
    }
}

/// One decoded record of a thread's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A plain read or write.
    Access {
        /// A write (else a read).
        write: bool,
        /// Bytes accessed: 1, 2, 4 or 8.
        size: u8,
        /// The address.
        addr: u64,
        /// The instrumented code's pc.
        pc: u64,
    },
    /// A long event.
    Long(Long),
    /// A new stack node: its id, its parent's, and the pc of the call into it.
    Node {
        /// The node's id (1, 2, ... in order of definition).
        id: u32,
        /// Its parent (0: the empty stack).
        parent: u32,
        /// Where the call into it was made.
        pc: u64,
    },
}

/// A plain access as [`Decoder::access`] decodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// A write (else a read).
    pub write: bool,
    /// Bytes accessed: 1, 2, 4 or 8.
    pub size: u8,
    /// The address.
    pub addr: u64,
    /// The instrumented code's pc.
    pub pc: u64,
    /// The thread's `seq` at it.
    pub seq: u64,
    /// The thread's stack node at it.
    pub node: u32,
}

/// A long event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Long {
    /// What it records.
    pub kind: Kind,
    /// Kind-specific flags.
    pub flags: u16,
    /// The call has not returned (a thread blocked in a lock).
    pub pending: bool,
    /// Address (or thread id, by kind).
    pub addr: u64,
    /// The instrumented code's pc.
    pub pc: u64,
    /// Kind-specific argument (24 bits).
    pub arg: u32,
    /// The extra payload words (`payload() - 3` of them used).
    pub extra: [u64; MAX_PAYLOAD - 3],
}

/// Why a file's words cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// A word with a tag this format does not use.
    Tag(u64),
    /// A long event of an unknown kind.
    Kind(u8),
    /// A long event whose payload count does not match its kind.
    Payload {
        /// The kind.
        kind: u8,
        /// The count the word gives.
        count: u8,
    },
    /// Flags no runtime writes for this kind.
    Flags {
        /// The kind.
        kind: u8,
        /// The flags.
        flags: u16,
    },
    /// A stack node or stack word naming a node not defined yet.
    Node(u64),
    /// A size (block, range, object) beyond the address space.
    Size(u64),
    /// A range or object event longer than [`MAX_RANGE`] bytes.
    Range(u64),
    /// A thread id beyond [`MAX_TID`].
    Thread(u64),
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            DecodeError::Tag(t) => write!(f, "a word has tag {t}, which no event has"),
            DecodeError::Kind(k) => write!(f, "an event has kind {k}, which does not exist"),
            DecodeError::Payload { kind, count } => write!(
                f,
                "an event of kind {kind} says it has {count} payload words, not the {} it has",
                Kind::from_u8(kind).map_or(0, Kind::payload)
            ),
            DecodeError::Flags { kind, flags } => {
                write!(
                    f,
                    "an event of kind {kind} has flags {flags:#x}, which no runtime writes"
                )
            }
            DecodeError::Node(n) => write!(f, "stack node {n} is used before it is defined"),
            DecodeError::Size(s) => write!(f, "a size of {s} bytes is beyond the address space"),
            DecodeError::Range(s) => write!(
                f,
                "a range of {s} bytes is longer than the runtime writes ({MAX_RANGE})"
            ),
            DecodeError::Thread(t) => write!(f, "thread id {t} is beyond {MAX_TID}"),
        }
    }
}

/// What [`Decoder::next`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A record, which took `words` words, with the thread's `seq` and stack
    /// node for it (for a numbered long event, its own number).
    Record {
        /// The record.
        record: Record,
        /// Its `seq`.
        seq: u64,
        /// The thread's stack node at it.
        node: u32,
        /// Words consumed (state words before it included).
        words: usize,
    },
    /// The words end before the next record does (more may come, or the
    /// thread stopped mid-record); `words` state words were consumed.
    NeedMore {
        /// Words consumed.
        words: usize,
    },
    /// A [`TAG_SKIP`] word: the rest of the chunk is unused; `words` words
    /// were consumed before it.
    Skip {
        /// Words consumed.
        words: usize,
    },
    /// A zero word: nothing more was committed.
    End {
        /// Words consumed before it.
        words: usize,
    },
}

/// The state a thread's file carries from word to word.
#[derive(Clone, Debug)]
pub struct Decoder {
    seq: u64,
    node: u32,
    nodes: u32,
    pcs: [u64; PC_SLOTS],
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            seq: 0,
            node: 0,
            nodes: 0,
            pcs: [0; PC_SLOTS],
        }
    }
}

impl Decoder {
    /// Stack nodes defined so far.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The thread's `seq` as of the words decoded so far: every record
    /// after them carries at least this.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The common case of [`Decoder::next`], kept small enough to inline
    /// into a reader's loop: passes the `seq` and pc words at the start of
    /// `w` and decodes the plain access after them. Returns the words
    /// consumed and the access, if the next record is one (with the
    /// thread's `seq` and stack node as [`Step::Record`] has them); any
    /// other word is left for [`Decoder::next`], which decodes from there
    /// exactly as from the start.
    #[inline]
    pub fn access(&mut self, w: &[u64]) -> (usize, Option<Access>) {
        for (i, &word) in w.iter().enumerate() {
            match word >> TAG_SHIFT {
                1..=8 => return (i + 1, Some(self.plain(word))),
                TAG_SEQ => self.seq = word & SEQ_MASK,
                TAG_PC => self.pcs[slot_of(word)] = word & LOW48,
                _ => return (i, None),
            }
        }
        (w.len(), None)
    }

    /// The plain access word `word` (tag 1 to 8) records.
    #[inline(always)]
    fn plain(&self, word: u64) -> Access {
        let t = (word >> TAG_SHIFT) - 1;
        Access {
            write: t & 1 == 1,
            size: 1 << (t >> 1),
            addr: word & LOW48,
            pc: self.pcs[slot_of(word)],
            seq: self.seq,
            node: self.node,
        }
    }

    /// Decodes the next record of `w`, updating the state for the state
    /// words it passes. A record is only decoded whole: when `w` ends in
    /// the middle of one, the state words before it are consumed and
    /// [`Step::NeedMore`] says how many. An error comes with the index of
    /// the word at fault.
    #[inline]
    pub fn next(&mut self, w: &[u64]) -> Result<Step, (usize, DecodeError)> {
        let mut i = 0;
        while i < w.len() {
            let word = w[i];
            let tag = word >> TAG_SHIFT;
            match tag {
                0 => return Ok(Step::End { words: i }),
                TAG_SKIP => return Ok(Step::Skip { words: i }),
                1..=8 => {
                    let a = self.plain(word);
                    return Ok(Step::Record {
                        record: Record::Access {
                            write: a.write,
                            size: a.size,
                            addr: a.addr,
                            pc: a.pc,
                        },
                        seq: a.seq,
                        node: a.node,
                        words: i + 1,
                    });
                }
                TAG_SEQ => self.seq = word & SEQ_MASK,
                TAG_PC => self.pcs[slot_of(word)] = word & LOW48,
                TAG_STACK => {
                    let n = word & 0xffff_ffff;
                    if n > u64::from(self.nodes) || word & !(0xffff_ffff | 0xf << TAG_SHIFT) != 0 {
                        return Err((i, DecodeError::Node(n)));
                    }
                    self.node = n as u32;
                }
                TAG_NODE => {
                    if i + 1 >= w.len() {
                        return Ok(Step::NeedMore { words: i });
                    }
                    let parent = word & 0xffff_ffff;
                    if parent > u64::from(self.nodes)
                        || word & !(0xffff_ffff | 0xf << TAG_SHIFT) != 0
                        || self.nodes == u32::MAX
                    {
                        return Err((i, DecodeError::Node(parent)));
                    }
                    self.nodes += 1;
                    return Ok(Step::Record {
                        record: Record::Node {
                            id: self.nodes,
                            parent: parent as u32,
                            pc: w[i + 1],
                        },
                        seq: self.seq,
                        node: self.node,
                        words: i + 2,
                    });
                }
                TAG_LONG | TAG_PENDING => {
                    let k = word as u8;
                    let kind = Kind::from_u8(k).ok_or((i, DecodeError::Kind(k)))?;
                    let count = ((word >> 24) & 0xf) as usize;
                    if count == 1 && tag == TAG_LONG && kind == Kind::Atomic {
                        return self.short_atomic(w, i);
                    }
                    if count != kind.payload() || word >> 28 & 0xffff_ffff != 0 {
                        return Err((
                            i,
                            DecodeError::Payload {
                                kind: k,
                                count: count as u8,
                            },
                        ));
                    }
                    if i + 1 + count > w.len() {
                        return Ok(Step::NeedMore { words: i });
                    }
                    let flags = (word >> 8) as u16;
                    let p = &w[i + 1..i + 1 + count];
                    let mut extra = [0; MAX_PAYLOAD - 3];
                    extra[..count - 3].copy_from_slice(&p[3..]);
                    let long = Long {
                        kind,
                        flags,
                        pending: tag == TAG_PENDING,
                        addr: p[0],
                        pc: p[1],
                        arg: (p[2] >> 40) as u32,
                        extra,
                    };
                    check(&long).map_err(|e| (i, e))?;
                    let seq = if kind.numbered() {
                        p[2] & SEQ_MASK
                    } else {
                        self.seq
                    };
                    return Ok(Step::Record {
                        record: Record::Long(long),
                        seq,
                        node: self.node,
                        words: i + 1 + count,
                    });
                }
                t => return Err((i, DecodeError::Tag(t))),
            }
            i += 1;
        }
        Ok(Step::NeedMore { words: i })
    }
}

impl Decoder {
    /// The two-word atomic operation at `w[i]` ([`atomic_word`]).
    fn short_atomic(&mut self, w: &[u64], i: usize) -> Result<Step, (usize, DecodeError)> {
        let word = w[i];
        if i + 1 >= w.len() {
            return Ok(Step::NeedMore { words: i });
        }
        let flags = (word >> 8) as u16;
        let p = w[i + 1];
        let seq = self.seq + (word >> 28 & 0xffff_ffff);
        if Atomic::from_flags(flags).is_none() || p >> 58 != 0 || seq > SEQ_MASK {
            return Err((
                i,
                DecodeError::Flags {
                    kind: Kind::Atomic as u8,
                    flags,
                },
            ));
        }
        self.seq = seq;
        let long = Long {
            kind: Kind::Atomic,
            flags,
            pending: false,
            addr: p & LOW48,
            pc: self.pcs[slot_of(p)],
            arg: 0,
            extra: [0; MAX_PAYLOAD - 3],
        };
        Ok(Step::Record {
            record: Record::Long(long),
            seq,
            node: self.node,
            words: i + 2,
        })
    }
}

/// Checks what a long event's kind allows of its flags and payload.
fn check(l: &Long) -> Result<(), DecodeError> {
    let bad = || DecodeError::Flags {
        kind: l.kind as u8,
        flags: l.flags,
    };
    // A block or range lies in the 48-bit address space.
    let size = |s: u64| {
        if s > MAX_SIZE || l.addr.saturating_add(s) > 1 << 48 {
            Err(DecodeError::Size(s))
        } else {
            Ok(())
        }
    };
    let range = |s: u64| {
        size(s)?;
        if s > MAX_RANGE {
            Err(DecodeError::Range(s))
        } else {
            Ok(())
        }
    };
    match l.kind {
        Kind::Atomic => {
            Atomic::from_flags(l.flags).ok_or_else(bad)?;
        }
        Kind::Acquire if l.flags & !(LOCK_SHARED | LOCK_TRY | LOCK_RW | LOCK_OWNER_DEAD) != 0 => {
            return Err(bad());
        }
        Kind::Release if l.flags & !(LOCK_SHARED | LOCK_RW) != 0 => return Err(bad()),
        Kind::Fork | Kind::Join | Kind::ThreadName if l.addr > MAX_TID => {
            return Err(DecodeError::Thread(l.addr));
        }
        Kind::Alloc | Kind::Free => {
            Alloc::from_flags(l.flags).ok_or_else(bad)?;
            size(l.extra[0])?;
        }
        Kind::Range => {
            if l.flags & !RANGE_WRITE != 0 {
                return Err(bad());
            }
            range(l.extra[0])?;
        }
        Kind::Benign => size(l.extra[0])?,
        Kind::Object => {
            Object::from_flags(l.flags).ok_or_else(bad)?;
            range(l.extra[0])?;
        }
        Kind::SyncRead | Kind::SyncWrite if l.arg > SYNC_KEY => return Err(bad()),
        _ => {}
    }
    if l.pending && l.kind != Kind::Acquire {
        return Err(bad());
    }
    Ok(())
}

/// The words of a long event, first word first (the runtime writes the
/// payload, then the first word).
// One argument per field of the record, in wire order: a struct would only
// restate them.
#[allow(clippy::too_many_arguments)]
pub fn encode_long(
    kind: Kind,
    flags: u16,
    pending: bool,
    addr: u64,
    pc: u64,
    seq: u64,
    arg: u64,
    extra: &[u64],
) -> [u64; MAX_RECORD] {
    let mut w = [0; MAX_RECORD];
    w[0] = long_word(kind, flags, kind.payload(), pending);
    w[1] = addr;
    w[2] = pc;
    w[3] = seq_arg(seq, arg);
    w[4..4 + extra.len()].copy_from_slice(extra);
    w
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    type Decoded = Result<Vec<(Record, u64, u32)>, (usize, DecodeError)>;

    fn decode_all(words: &[u64]) -> Decoded {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            match d.next(&words[i..])? {
                Step::Record {
                    record,
                    seq,
                    node,
                    words,
                } => {
                    out.push((record, seq, node));
                    i += words;
                }
                Step::NeedMore { .. } | Step::End { .. } | Step::Skip { .. } => return Ok(out),
            }
        }
    }

    #[test]
    fn every_record_round_trips() {
        let slot = pc_slot(0x4010);
        let mut w = std::vec![
            node_word(0),
            0x4000,
            stack_word(1),
            seq_word(7),
            pc_word(slot, 0x4010),
        ];
        for write in [false, true] {
            for log in 0..4 {
                w.push(access_word(write, log, slot, 0x1000 + log as u64));
            }
        }
        let atomic = Atomic {
            op: AtomicOp::Rmw,
            order: Order::AcqRel,
            log2size: 2,
        };
        let l = encode_long(
            Kind::Atomic,
            atomic.flags(),
            false,
            0x2000,
            0x4020,
            9,
            0,
            &[],
        );
        w.extend_from_slice(&l[..1 + Kind::Atomic.payload()]);
        let l = encode_long(
            Kind::Alloc,
            Alloc::New.flags(),
            false,
            0x3000,
            0x4030,
            10,
            0,
            &[48],
        );
        w.extend_from_slice(&l[..1 + Kind::Alloc.payload()]);
        let l = encode_long(Kind::Acquire, 0, true, 0x5000, 0x4040, 11, 0, &[]);
        w.extend_from_slice(&l[..4]);
        w.push(0);
        let got = decode_all(&w).unwrap();
        assert_eq!(got.len(), 1 + 8 + 3);
        assert_eq!(
            got[0].0,
            Record::Node {
                id: 1,
                parent: 0,
                pc: 0x4000
            }
        );
        for (i, (r, seq, node)) in got[1..9].iter().enumerate() {
            assert_eq!(*seq, 7);
            assert_eq!(*node, 1);
            assert_eq!(
                *r,
                Record::Access {
                    write: i >= 4,
                    size: 1 << (i % 4),
                    addr: 0x1000 + (i % 4) as u64,
                    pc: 0x4010
                }
            );
        }
        let Record::Long(a) = got[9].0 else { panic!() };
        assert_eq!(
            (a.kind, a.addr, a.pc, got[9].1),
            (Kind::Atomic, 0x2000, 0x4020, 9)
        );
        assert_eq!(Atomic::from_flags(a.flags), Some(atomic));
        let Record::Long(b) = got[10].0 else { panic!() };
        assert_eq!(
            (b.kind, b.extra[0], Alloc::from_flags(b.flags)),
            (Kind::Alloc, 48, Some(Alloc::New))
        );
        let Record::Long(c) = got[11].0 else { panic!() };
        assert!(c.pending && c.kind == Kind::Acquire);
    }

    #[test]
    fn a_two_word_atomic_steps_the_seq_and_names_its_pc_by_slot() {
        let slot = pc_slot(0x4050);
        let load = Atomic {
            op: AtomicOp::Load,
            order: Order::Acquire,
            log2size: 3,
        };
        let w = std::vec![
            seq_word(7),
            pc_word(slot, 0x4050),
            atomic_word(load.flags(), 5),
            atomic_payload(slot, 0x2000),
            // Numbered 12: a step of 0 from the atomic's own number.
            atomic_word(load.flags(), 0),
            atomic_payload(slot, 0x2008),
            access_word(false, 3, slot, 0x3000),
        ];
        let got = decode_all(&w).unwrap();
        assert_eq!(got.len(), 3);
        for (k, addr) in [(0, 0x2000), (1, 0x2008)] {
            let Record::Long(a) = got[k].0 else { panic!() };
            assert_eq!(
                (a.kind, a.addr, a.pc, got[k].1),
                (Kind::Atomic, addr, 0x4050, 12)
            );
            assert_eq!(Atomic::from_flags(a.flags), Some(load));
        }
        // The atomic's number is the thread's seq from then on.
        assert_eq!(got[2].1, 12);
        let mut d = Decoder::default();
        assert_eq!(
            d.next(&w[2..3]),
            Ok(Step::NeedMore { words: 0 }),
            "the second word is still to come"
        );
        assert!(matches!(
            d.next(&[atomic_word(0x1ff, 1), 0]),
            Err((0, DecodeError::Flags { .. }))
        ));
        assert!(matches!(
            d.next(&[atomic_word(load.flags(), 1), 1 << 60]),
            Err((0, DecodeError::Flags { .. }))
        ));
    }

    #[test]
    fn a_partial_record_asks_for_more_and_keeps_its_state_words() {
        let l = encode_long(Kind::Fork, 0, false, 3, 0x10, 1, 0, &[]);
        let w = [seq_word(5), l[0], l[1]];
        let mut d = Decoder::default();
        assert_eq!(d.next(&w), Ok(Step::NeedMore { words: 1 }));
        assert_eq!(d.seq, 5);
    }

    #[test]
    fn corrupt_words_are_errors() {
        let mut d = Decoder::default();
        assert_eq!(
            d.next(&[seq_word(1), TAG_SKIP << TAG_SHIFT]),
            Ok(Step::Skip { words: 1 })
        );
        assert_eq!(
            d.next(&[seq_word(2), stack_word(1)]),
            Err((1, DecodeError::Node(1)))
        );
        assert_eq!(d.next(&[node_word(4), 0]), Err((0, DecodeError::Node(4))));
        let mut l = encode_long(Kind::Free, 0, false, 0, 0, 0, 0, &[1 << 50]);
        assert_eq!(d.next(&l[..5]), Err((0, DecodeError::Size(1 << 50))));
        l = encode_long(Kind::Free, 0, false, 0xffff_0000_0000, 0, 0, 0, &[1 << 40]);
        assert_eq!(d.next(&l[..5]), Err((0, DecodeError::Size(1 << 40))));
        // A range or object event is never longer than the runtime splits
        // ranges (a corrupt size once stood for a trace of 2^44 accesses).
        l = encode_long(Kind::Range, 0, false, 0x1000, 0, 0, 0, &[MAX_RANGE]);
        assert!(matches!(d.next(&l[..5]), Ok(Step::Record { .. })));
        l = encode_long(Kind::Range, 0, false, 0x1000, 0, 0, 0, &[MAX_RANGE + 1]);
        assert_eq!(d.next(&l[..5]), Err((0, DecodeError::Range(MAX_RANGE + 1))));
        let obj = Object {
            ty: ObjectType::Mutex,
            op: ObjectOp::Init,
        };
        l = encode_long(
            Kind::Object,
            obj.flags(),
            false,
            0x1000,
            0,
            0,
            0,
            &[1 << 30],
        );
        assert_eq!(d.next(&l[..5]), Err((0, DecodeError::Range(1 << 30))));
        l = encode_long(Kind::Join, 0, false, 1 << 30, 0, 0, 0, &[]);
        assert_eq!(d.next(&l[..4]), Err((0, DecodeError::Thread(1 << 30))));
        l = encode_long(Kind::Release, 0, true, 1, 0, 0, 0, &[]);
        assert!(matches!(
            d.next(&l[..4]),
            Err((0, DecodeError::Flags { .. }))
        ));
        let w = TAG_LONG << TAG_SHIFT | 9 << 24 | Kind::Fork as u64;
        assert!(matches!(
            d.next(&[w]),
            Err((0, DecodeError::Payload { .. }))
        ));
        assert_eq!(
            d.next(&[TAG_LONG << TAG_SHIFT | 3 << 24 | 99]),
            Err((0, DecodeError::Kind(99)))
        );
    }
}
