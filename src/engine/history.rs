//! Per-variable access history shared by the exact race checkers.
//!
//! Every exact engine answers the same question for each access `e2`: is
//! some earlier conflicting access `e1` of another thread (within the window)
//! left unordered? Orderings are closed under program order on the left, so only
//! the latest read and the latest write of each thread need checking, per
//! shape: the bytes touched and whether the access is atomic (two accesses
//! conflict only when their bytes overlap and not both are atomic, see
//! [`Event::conflicts`]). The latest unordered one becomes the race witness,
//! so all engines pick the same witness.

use std::num::NonZeroU32;

use crate::engine::paged::Paged;
use crate::report::{Access, Race};
use crate::trace::{Event, EventId, Op, ThreadId};

/// One remembered access: its event, location, and the performing thread's
/// local clock at it (the value orderings are tested against). The event
/// id is kept plus one, so that "no access" costs no extra word: an entry is
/// 32 bytes, not 40, and every variable has at least one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Event id + 1 (ids are below `u32::MAX`: the loaders stop there).
    id1: NonZeroU32,
    /// Location id.
    pub loc: u32,
    /// Clock of the performing thread at the access.
    pub clock: u32,
}

impl Stamp {
    fn new(id: EventId, loc: u32, clock: u32) -> Stamp {
        debug_assert!(id < u32::MAX);
        Stamp {
            id1: NonZeroU32::MIN.saturating_add(id),
            loc,
            clock,
        }
    }

    /// Event id.
    #[inline]
    pub(crate) fn id(&self) -> EventId {
        self.id1.get() - 1
    }
}

/// The latest write and read of one thread, of one shape.
#[derive(Clone, Copy, Debug)]
struct Entry {
    thread: ThreadId,
    write: Option<Stamp>,
    read: Option<Stamp>,
    /// Bytes of the variable the accesses touched (0xff: all).
    mask: u8,
    /// Atomic accesses (else plain).
    atomic: bool,
    /// The ops of `write` and `read` (an atomic entry holds `vw` and `aw`
    /// alike, and a witness names its own op).
    wop: Op,
    rop: Op,
}

impl Entry {
    /// Thread and shape (bytes, atomic): the accesses this entry keeps the
    /// latest of.
    #[inline(always)]
    fn key(&self) -> (ThreadId, u8, bool) {
        (self.thread, self.mask, self.atomic)
    }
}

/// Whether an earlier access of kind (`s_write`, `s_atomic`) ordered before
/// this access (`write`, `atomic`, which touches every byte the earlier one
/// did) may be forgotten: every access conflicting with the earlier one
/// conflicts with this one, which is later and unordered with it whenever
/// the earlier one is, so the earlier one is never the witness again.
#[inline(always)]
fn covers(write: bool, atomic: bool, s_write: bool, s_atomic: bool) -> bool {
    match (s_atomic, s_write) {
        // Conflicts with writes of every kind: only a plain access does too.
        (false, false) => !atomic,
        // Conflicts with everything: only a plain write does too.
        (false, true) => write && !atomic,
        // Conflicts with plain writes: so does every access.
        (true, false) => true,
        // Conflicts with plain accesses: so does every write.
        (true, true) => write,
    }
}

/// One stamp of a variable with several entries ([`Head::Many`]): 20
/// bytes, where an [`Entry`] holding one of its two stamps spends 32.
/// Byte-wise code touches a cell through up to eight masks per thread,
/// each an entry of its own, and those are mostly only reads or only
/// writes: zstd's input buffer, written whole by one thread and read a byte
/// at a time by another, kept 4.6 million such variables at once.
#[derive(Clone, Copy, Debug)]
struct Half {
    /// `None` once pruned (dropped at the end of the check).
    stamp: Option<Stamp>,
    thread: ThreadId,
    mask: u8,
    /// The access's op: whether it writes and is atomic.
    op: Op,
}

impl Half {
    /// The stamps of `e`, as halves.
    fn of(e: &Entry) -> impl Iterator<Item = Half> + '_ {
        [(e.write, e.wop), (e.read, e.rop)]
            .into_iter()
            .filter(|(s, _)| s.is_some())
            .map(|(stamp, op)| Half {
                stamp,
                thread: e.thread,
                mask: e.mask,
                op,
            })
    }

    /// A new access's entry (one stamp) as its half.
    fn from_entry(e: &Entry) -> Half {
        let (stamp, op) = match e.write {
            Some(_) => (e.write, e.wop),
            None => (e.read, e.rop),
        };
        Half {
            stamp,
            thread: e.thread,
            mask: e.mask,
            op,
        }
    }

    /// Thread and shape, as [`Entry::key`].
    #[inline(always)]
    fn key(&self) -> (ThreadId, u8, bool) {
        (self.thread, self.mask, self.op.is_atomic())
    }
}

/// The halves of a variable as one inline entry, when they fit one (one
/// stamp, or a write and a read of one thread and shape).
fn as_entry(halves: &[Half]) -> Option<Entry> {
    let (&first, rest) = halves.split_first()?;
    let mut e = Entry {
        thread: first.thread,
        write: None,
        read: None,
        mask: first.mask,
        atomic: first.op.is_atomic(),
        wop: first.op,
        rop: first.op,
    };
    let mut put = |h: &Half| {
        let slot = if h.op.is_write() {
            e.wop = h.op;
            &mut e.write
        } else {
            e.rop = h.op;
            &mut e.read
        };
        slot.replace(h.stamp?).is_none().then_some(())
    };
    put(&first)?;
    match rest {
        [] => {}
        [h] if h.key() == first.key() => put(h)?,
        _ => return None,
    }
    Some(e)
}

/// The entries of one variable in the bytes of one entry. Most variables of
/// array code are touched by one thread only (often once or twice): their
/// entry lives inline; a variable with more has its stamps in a vector
/// whose pointer is inline. 32 bytes a variable, not the 48 of an inline
/// small vector: a trace's variables are counted by the hundred thousand
/// (the Java Grande `sor`, 671,111), and each costs this whether or not it
/// is ever shared. (An index into a pool of vectors cost a second cache
/// miss per access: zstd's HB spent 40 % of the history's time there.)
#[derive(Clone, Debug, Default)]
enum Head {
    /// Never accessed, or every entry pruned.
    #[default]
    Empty,
    One(Entry),
    /// The stamps, when they do not fit one entry.
    Many(Vec<Half>),
}

/// Latest read and write of every thread, per variable (only those that can
/// still be a witness: see [`AccessHistory::access`]).
#[derive(Clone, Debug, Default)]
pub struct AccessHistory {
    /// In pages freed when their variables are retired (see
    /// [`AccessHistory::retire`]).
    vars: Paged<Head>,
    window: Option<u64>,
}

impl AccessHistory {
    /// A history that only pairs accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        AccessHistory {
            window,
            ..AccessHistory::default()
        }
    }

    /// Start loading the entries of the variable `ev` accesses into the
    /// cache, if it is an access (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, ev: &Event) {
        if ev.op.is_memory()
            && let Some(h) = self.vars.get(ev.target as usize)
        {
            crate::cache::prefetch(h);
        }
    }

    /// Start loading the stamps of the variable `ev` accesses when they are
    /// not in its head (a hint, given after [`AccessHistory::prefetch`]
    /// loaded the head: a variable with several entries otherwise misses
    /// the cache on its vector's buffer, half the time of an access in
    /// zstd's HB).
    #[inline]
    pub(crate) fn prefetch_stamps(&self, ev: &Event) {
        if ev.op.is_memory()
            && let Some(Head::Many(halves)) = self.vars.get(ev.target as usize)
        {
            crate::cache::prefetch(halves.as_ptr());
        }
    }

    /// Forgets the variables `vars`, which no later event touches (see
    /// [`crate::engine::detector::Detector::retire`]): a recorded program
    /// allocating memory again and again keeps the history of the memory
    /// it holds, not of all it ever allocated.
    pub(crate) fn retire(&mut self, vars: &[u32]) {
        for &v in vars {
            self.vars.retire(v as usize, |h| !matches!(h, Head::Empty));
        }
    }

    /// Check access `ev` (event `id`, local clock `clock`) against the
    /// history, then record it. `ordered(t, c)` tells whether the access of
    /// thread `t` with local clock `c` is ordered before `ev`. Returns the race
    /// witness (latest unordered conflicting access), if any.
    pub fn access(
        &mut self,
        id: EventId,
        ev: &Event,
        clock: u32,
        mut ordered: impl FnMut(ThreadId, u32) -> bool,
    ) -> Option<Race> {
        self.access_at(id, ev, clock, |t, c, _| ordered(t, c))
    }

    /// [`AccessHistory::access`] whose `ordered(t, c, e1)` also gets the
    /// earlier access's event id (windowed CP decides pairs K or more apart
    /// with a different clock than closer ones).
    pub(crate) fn access_at(
        &mut self,
        id: EventId,
        ev: &Event,
        clock: u32,
        ordered: impl FnMut(ThreadId, u32, EventId) -> bool,
    ) -> Option<Race> {
        debug_assert!(ev.op.is_memory());
        let (head, live) = self.vars.slot(ev.target as usize);
        let is_write = ev.op.is_write();
        let stamp = Stamp::new(id, ev.loc, clock);
        let new = Entry {
            thread: ev.thread,
            write: is_write.then_some(stamp),
            read: (!is_write).then_some(stamp),
            mask: ev.bytes(),
            atomic: ev.op.is_atomic(),
            wop: ev.op,
            rop: ev.op,
        };
        let best = match &mut *head {
            Head::Empty => {
                *head = Head::One(new);
                *live += 1;
                None
            }
            Head::One(e) => {
                // In place: a copy out and back measured 5 % slower (sor's
                // HB).
                let mut probe = Probe::new(self.window, id, ev, ordered);
                probe.entry(e);
                if e.write.is_none() && e.read.is_none() {
                    *e = new;
                } else if !record(e, &new) {
                    // Exactly as many as it holds: most such variables
                    // are one thread's write and another's read, and stay so.
                    let n = usize::from(e.write.is_some()) + usize::from(e.read.is_some());
                    let mut halves = Vec::with_capacity(n + 1);
                    halves.extend(Half::of(e));
                    let new = Half::from_entry(&new);
                    if e.thread == new.thread {
                        trim(&mut halves, &new);
                        halves.retain(|h| h.stamp.is_some());
                    }
                    push(&mut halves, new);
                    *head = match as_entry(&halves) {
                        Some(e) => Head::One(e),
                        None => Head::Many(halves),
                    };
                }
                probe.best
            }
            Head::Many(halves) => {
                let new = Half::from_entry(&new);
                let mut probe = Probe::new(self.window, id, ev, ordered);
                // One pass: the other threads' stamps checked, this
                // thread's trimmed of the bytes this access covers (the
                // first one left with none takes its place).
                let mut own = None;
                let mut emptied = false;
                for (k, h) in halves.iter_mut().enumerate() {
                    if h.thread == new.thread {
                        if trim_one(h, &new) {
                            if own.is_none() {
                                own = Some(k);
                            } else {
                                emptied = true;
                            }
                        }
                    } else {
                        probe.half(h);
                    }
                }
                if let Some(k) = own {
                    halves[k] = new;
                }
                if probe.pruned || emptied {
                    halves.retain(|h| h.stamp.is_some());
                }
                if own.is_none() {
                    push(halves, new);
                }
                if halves.len() <= 2
                    && let Some(e) = as_entry(halves)
                {
                    // Back inline: pruning left this variable one entry.
                    *head = Head::One(e);
                }
                probe.best
            }
        };
        best.map(|(s, t, op)| Race {
            first: Access {
                id: s.id(),
                thread: t,
                op,
                loc: s.loc,
            },
            second: Access::of(id, ev),
            variable: ev.target,
        })
    }
}

/// Forget, in the stamps of `new`'s thread, the bytes `new` covers (see
/// [`trim_one`]); a stamp left with none is emptied.
fn trim(halves: &mut [Half], new: &Half) {
    for h in halves.iter_mut().filter(|h| h.thread == new.thread) {
        trim_one(h, new);
    }
}

/// Take from `h`, an earlier stamp of `new`'s thread, the bytes of `new`
/// when `new` conflicts with everything `h` conflicts with there (see
/// [`covers`]): `h` is program-ordered before `new`, so whenever it is
/// unordered with a later access, so is `new`, which is later and so the
/// witness instead. `h` stays the latest of its kind for its other bytes.
/// Without this, byte-wise code keeps a stamp per shape it used (zstd
/// read cells by 1, 2, 4 and 8 bytes at a time: up to 15 stamps a thread
/// where 8 bytes allow at most 8). Whether `h` was emptied (its stamp is
/// then `None`).
#[inline(always)]
fn trim_one(h: &mut Half, new: &Half) -> bool {
    if h.mask & new.mask == 0
        || h.stamp.is_none()
        || !covers(
            new.op.is_write(),
            new.op.is_atomic(),
            h.op.is_write(),
            h.op.is_atomic(),
        )
    {
        return false;
    }
    h.mask &= !new.mask;
    if h.mask == 0 {
        h.stamp = None;
    }
    h.mask == 0
}

/// Append `h`, growing the vector by half its length (not doubling it):
/// millions of variables hold two to nine stamps, and a doubled buffer
/// left a third of zstd's history unused.
fn push(halves: &mut Vec<Half>, h: Half) {
    if halves.len() == halves.capacity() {
        halves.reserve_exact((halves.len() / 2).max(2));
    }
    halves.push(h);
}

/// Record access `new` in `e` when `e` is of the same thread and shape.
#[inline(always)]
fn record(e: &mut Entry, new: &Entry) -> bool {
    if e.key() != new.key() {
        return false;
    }
    if new.write.is_some() {
        e.write = new.write;
        e.wop = new.wop;
    } else {
        e.read = new.read;
        e.rop = new.rop;
    }
    true
}

/// Checks one access (event `id`) against a variable's stamps, one at a
/// time: the latest unordered conflicting access (its stamp, thread and
/// op), and whether a stamp was pruned (set to `None`: the entries or halves
/// left without one must go).
struct Probe<F> {
    window: Option<u64>,
    id: EventId,
    thread: ThreadId,
    mask: u8,
    is_write: bool,
    atomic: bool,
    ordered: F,
    best: Option<(Stamp, ThreadId, Op)>,
    pruned: bool,
}

impl<F: FnMut(ThreadId, u32, EventId) -> bool> Probe<F> {
    #[inline(always)]
    fn new(window: Option<u64>, id: EventId, ev: &Event, ordered: F) -> Self {
        Probe {
            window,
            id,
            thread: ev.thread,
            mask: ev.bytes(),
            is_write: ev.op.is_write(),
            atomic: ev.op.is_atomic(),
            ordered,
            best: None,
            pruned: false,
        }
    }

    /// Both stamps of an inline entry (none if it is this thread's).
    #[inline(always)]
    fn entry(&mut self, e: &mut Entry) {
        if e.thread == self.thread {
            return;
        }
        let (thread, mask, atomic, wop, rop) = (e.thread, e.mask, e.atomic, e.wop, e.rop);
        self.stamp(&mut e.write, thread, mask, atomic, true, wop);
        self.stamp(&mut e.read, thread, mask, atomic, false, rop);
    }

    /// One stamp of a variable with several entries, of another thread.
    #[inline(always)]
    fn half(&mut self, h: &mut Half) {
        debug_assert_ne!(h.thread, self.thread);
        let (thread, mask, op) = (h.thread, h.mask, h.op);
        self.stamp(
            &mut h.stamp,
            thread,
            mask,
            op.is_atomic(),
            op.is_write(),
            op,
        );
    }

    /// The stamp `slot` of an earlier access by `thread` (another thread)
    /// to bytes `mask` (a write when `s_write`, atomic when `s_atomic`, of
    /// op `op`).
    #[inline(always)]
    fn stamp(
        &mut self,
        slot: &mut Option<Stamp>,
        thread: ThreadId,
        mask: u8,
        s_atomic: bool,
        s_write: bool,
        op: Op,
    ) {
        let Some(s) = *slot else { return };
        if mask & self.mask == 0 {
            return;
        }
        // Two atomic accesses never conflict; two reads neither.
        let conflicts = !(self.atomic && s_atomic) && (s_write || self.is_write);
        // Whether the stamp stays: an access ordered before this one is
        // dropped when this access conflicts with everything it conflicts
        // with (see `covers`): every later access unordered with it is
        // unordered with this later, conflicting access too (or is of this
        // thread, hence ordered), so it would never be the witness again.
        // That keeps a variable's history to its mutually unordered
        // accesses (100,000 threads passing a lock leave one entry, not
        // 100,000). Stamps touching bytes this access does not may still
        // be the witness of a later access to those bytes: never dropped.
        let prunable =
            mask & !self.mask == 0 && covers(self.is_write, self.atomic, s_write, s_atomic);
        if !conflicts && !prunable {
            return;
        }
        // A stamp K or more events back is never a witness again (later
        // accesses are farther still): it goes unasked, so a window bounds
        // the history whatever the order answers.
        if !in_window(self.window, self.id, s.id()) {
            *slot = None;
            self.pruned = true;
            return;
        }
        let candidate = conflicts && self.best.is_none_or(|(b, _, _)| s.id() > b.id());
        if !candidate && !prunable {
            return;
        }
        if (self.ordered)(thread, s.clock, s.id()) {
            if prunable {
                *slot = None;
                self.pruned = true;
            }
        } else if candidate {
            self.best = Some((s, thread, op));
        }
    }
}

/// Whether access `earlier` pairs with access `current` under `window`
/// (less than K events apart).
#[inline]
pub(crate) fn in_window(window: Option<u64>, current: EventId, earlier: EventId) -> bool {
    window.is_none_or(|k| ((current - earlier) as u64) < k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_costs_32_bytes() {
        // Every variable has its head; most have one entry, kept inline.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<Head>(), 32);
        // A variable with several entries keeps each stamp in 20.
        assert_eq!(std::mem::size_of::<Half>(), 20);
    }

    /// The stamps of variable `v` as (thread, write, atomic, mask).
    fn stamps(h: &AccessHistory, v: usize) -> Vec<(ThreadId, bool, bool, u8)> {
        match h.vars.get(v).unwrap_or(&Head::Empty) {
            Head::Empty => vec![],
            Head::One(e) => Half::of(e)
                .map(|h| (h.thread, h.op.is_write(), h.op.is_atomic(), h.mask))
                .collect(),
            Head::Many(hs) => hs
                .iter()
                .map(|h| (h.thread, h.op.is_write(), h.op.is_atomic(), h.mask))
                .collect(),
        }
    }

    #[test]
    fn a_thread_keeps_each_byte_once_per_kind() {
        // Thread 1 writes the cell whole; thread 0 then reads and writes it
        // in every aligned shape (1, 2, 4 and 8 bytes), plain and atomic,
        // in a scrambled order, never ordered with thread 1's write.
        let shapes: Vec<u8> = (0..4)
            .flat_map(|k| {
                let n = 1u32 << k;
                (0..8 / n).map(move |i| (((1u32 << n) - 1) << (i * n)) as u8)
            })
            .collect();
        assert_eq!(shapes.len(), 15);
        let ops = [Op::Read, Op::Write, Op::AtomicRead, Op::AtomicWrite];
        let mut h = AccessHistory::new(None);
        let ev = |thread, op, mask| Event {
            thread,
            target: 0,
            loc: 0,
            op,
            mask,
        };
        let mut id = 0;
        h.access(id, &ev(1, Op::Write, 0), 1, |_, _| false);
        let mut x = 12345u32;
        let mut max_len = 0;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let mask = shapes[(x % 15) as usize];
            let op = ops[((x >> 8) % 4) as usize];
            id += 1;
            h.access(id, &ev(0, op, mask), 1, |_, _| false);
            let st = stamps(&h, 0);
            max_len = max_len.max(st.len());
            // Of each kind (read or write, plain or atomic), thread 0's
            // stamps touch each byte at most once: at most 32 stamps.
            for kind in [(false, false), (false, true), (true, false), (true, true)] {
                let mut seen = 0u8;
                for &(t, w, a, m) in &st {
                    if t == 0 && (w, a) == kind {
                        assert_eq!(seen & m, 0, "overlapping stamps: {st:?}");
                        seen |= m;
                    }
                }
            }
            assert!(st.iter().all(|&(_, _, _, m)| m != 0));
        }
        // Plain writes take every earlier stamp's bytes: rarely many left.
        assert!(max_len <= 1 + 32, "{max_len}");
    }

    #[test]
    fn a_page_goes_when_its_last_variable_is_retired() {
        let page = crate::engine::paged::PAGE;
        let mut h = AccessHistory::new(None);
        let w = |thread, target| Event {
            thread,
            target,
            loc: 0,
            op: Op::Write,
            mask: 0,
        };
        // Variables 0..10 and one on the second page; two threads on 3.
        for v in (0..10).chain([page as u32 + 1]) {
            h.access(v, &w(0, v), 1, |_, _| true);
        }
        assert!(h.access(20, &w(1, 3), 1, |_, _| false).is_some());
        assert_eq!(h.vars.live(0), 10);
        // Retiring a variable never touched, or twice, counts nothing.
        h.retire(&[0, 0, 11, 4000]);
        assert_eq!(h.vars.live(0), 9);
        h.retire(&(1..10).collect::<Vec<_>>());
        assert!(!h.vars.page_held(0), "the page stays");
        assert_eq!(h.vars.live(page), 1);
        // A variable of the freed page not touched before gets a new one.
        assert!(h.access(30, &w(0, 12), 1, |_, _| true).is_none());
        assert!(h.access(31, &w(1, 12), 1, |_, _| false).is_some());
        assert_eq!(h.vars.live(0), 1);
        assert!(stamps(&h, 3).is_empty());
    }

    #[test]
    fn stamps_keep_every_event_id() {
        for id in [0, 1, 12345, u32::MAX - 1] {
            assert_eq!(Stamp::new(id, 3, 4).id(), id);
        }
    }
}
