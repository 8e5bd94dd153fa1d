//! Logical clocks: the one clock module every engine uses.
//!
//! # Conventions
//!
//! - A clock maps dense thread ids (`u32`, as interned by the loader) to
//!   logical times (`u32`). Entries never stored are 0; 0 means "nothing of
//!   that thread is known".
//! - A thread's own entry starts at 1, so "access `e` of thread `u` at local
//!   time `c` is ordered before the owner of clock `C`" is the O(1) epoch test
//!   `C.get(u) >= c` (no time is ever 0 for an event).
//! - A thread's own entry is incremented (ticked) after each event an edge
//!   leaves the thread from (release, fork, volatile write; WCP ticks lazily
//!   before the next event instead). Joins happen before the event that
//!   receives the edge. So the events of one epoch (one own-entry value) are
//!   interchangeable for every ordering question.
//! - Exception, CP (`crate::engine::sync`): its fixpoint relates single events,
//!   so its clocks tick at *every* event: an entry is the 1-based position of
//!   the latest known event within its thread, and the epoch test reads
//!   `C.get(u) >= position`.
//! - Clocks only grow: [`VectorClock::join`] is the pointwise maximum, and a
//!   copy ([`Clone`], `clone_from`) replaces one clock by another that is at
//!   least as large wherever engines use it (a release copies the releaser's
//!   clock into the lock's, which the releaser has joined at its acquire).
//!
//! # Representations
//!
//! - [`VectorClock`] (vector.rs): while it knows only threads 0-7, its
//!   entries inline (32 bytes: a copy is a memcpy, a join eight maxima, no
//!   allocation or reference count; most traces have a handful of threads
//!   and their detectors copy and join at every synchronization event).
//!   From thread 8 on, a persistent radix tree of 16-entry blocks shared
//!   between clocks copy-on-write. Copying is O(1) (a release makes the
//!   lock's clock the thread's clock, sharing everything), a join shares every
//!   block the joined-into clock lacks and skips blocks both clocks share, and
//!   memory follows the distinct blocks alive, not threads x clocks: 100,000
//!   threads passing one lock along hold one path of blocks each. Any engine,
//!   any relation (HB, WCP, CP) can use it; a clock is 40 bytes.
//! - [`TreeClock`] (tree.rs): the tree clocks of Mathur, Pavlogiannis, Tunç
//!   and Viswanathan (ASPLOS 2022): join in time proportional to the entries
//!   that change. Valid only for clocks whose knowledge is transitively
//!   closed, as HB's is (if a clock knows thread u up to time c, it knows
//!   everything u knew at c); the HB `treeclock` engine uses it. Its nodes
//!   live in a persistent copy-on-write store (store.rs, the block layout of
//!   `VectorClock`), so a copy is O(1) and clocks share the nodes they agree
//!   on: memory follows what differs, not threads x clocks.
//!
//! - [`Published`] (published.rs): a thread's clock at a release as its
//!   shared snapshot and its own entry, so that many releases between two
//!   changes of the clock (a worker setting atomics) keep one clock.
//!
//! Every engine uses these: HB (`vc`, `epoch`, `treeclock`), WCP, SHB, and
//! CP, whose sync points each store a `VectorClock` (O(1) copies sharing
//! structure; [`VectorClock::diff`] walks only the blocks two clocks do not
//! share).

mod published;
mod store;
mod tree;
mod vector;

pub(crate) use published::Published;
pub(crate) use tree::TreeClock;
pub(crate) use vector::VectorClock;
