//! Goldilocks (Elmas, Qadeer & Tasiran, "Goldilocks: Efficiently Computing
//! the Happens-Before Relation Using Locksets", 2006): HB through locksets.
//!
//! The lockset of an access contains the threads, locks and volatile
//! variables that the access has reached through HB edges since it happened.
//! It starts as `{owner}` and grows by the paper's Figure 1 rules, one per
//! synchronization action α of thread t:
//!
//! | α          | rule                                   |
//! |------------|----------------------------------------|
//! | `acq(l)`   | `l ∈ LS` ⇒ add `t`                      |
//! | `rel(l)`   | `t ∈ LS` ⇒ add `l`                      |
//! | `fork(u)`  | `t ∈ LS` ⇒ add `u`                      |
//! | `join(u)`  | `u ∈ LS` ⇒ add `t` (only if u had events) |
//! | `vw(v)`    | `t ∈ LS` ⇒ add `v`                      |
//! | `vr(v)`    | `v ∈ LS` ⇒ add `t`                      |
//!
//! and a later access by thread t is ordered after the access iff `t ∈ LS`
//! (the paper's Theorem 1). Every rule has the form "if `src` ∈ LS then add
//! `dst`", so a cell of the update list is just the pair `(src, dst)` over one
//! element space of threads, locks and volatile variables.
//!
//! As in Section 3 the rules are evaluated lazily: synchronization actions are
//! appended as cells to an update list, each tracked access remembers its list
//! position, and only when a later conflicting access needs the verdict is a
//! temporary lockset built by walking the list from that position, stopping as
//! soon as the accessing thread enters it. Before walking, the short-circuit
//! checks run: same thread (program order; such pairs are never checked),
//! `alock` (Section 3: a lock the earlier accessor held at its access that the
//! current thread holds now; the lock changed hands in between, so a
//! release/acquire pair orders the accesses; the paper picks `alock` at random
//! among the held locks, we pick the outermost, which keeps runs reproducible),
//! and two of ours, both caches of earlier walks' verdicts (locksets only
//! grow, so a thread once in a lockset stays ordered after the access):
//!
//! - `memo`: the threads (ids below 64) earlier walks of the same access found
//!   in its lockset, which saves re-walking when one write is checked by reads
//!   of several threads;
//! - `reach[u][t]`: the latest update-list position p of an access of thread u
//!   whose lockset was found to contain t. An earlier access of u reaches at
//!   least what a later one reaches (program order), so every access of u at a
//!   position ≤ p is ordered before t's current and later events, whatever
//!   variable it is on.
//!
//! Walks run with the lockset as a bitset of elements, in a `u64` register
//! when there are at most 64 elements, applying each cell branch-free
//! (`ls |= ((ls >> src) & 1) << dst`) and testing for the current thread once
//! per chunk of cells.
//!
//! Cost: a walk is proportional to the synchronization between the two
//! accesses until an HB path reaches the current thread. Thread-local and
//! consistently locked data take the paper's short circuits; unlocked data
//! shared at random between threads mostly takes `reach`, and the walks that
//! remain make Goldilocks a few times slower than FastTrack per event.
//!
//! # Reads and writes
//! The 2006 paper does not distinguish reads from writes (its Section 2.1
//! leaves it as future work). We extend it directly: a variable keeps a
//! lockset origin for its last write and for the latest read of each thread
//! since that write. A read is checked against the last write; a
//! write against the last write and every such read, latest first, so the first
//! unordered one found is the witness (the latest unordered conflicting access,
//! as [`crate::engine::history`] picks). A write then clears the reads (before the first
//! race they are all HB-before it).
//!
//! Atomic accesses are accesses too (checked after a volatile read's
//! acquire, before a volatile write's release), and accesses conflict only
//! when their bytes overlap and not both are atomic, so the tracked accesses
//! are kept per *shape* of the variable (bytes touched, kind), as in
//! [`super::epoch`]: the plain whole-variable shape (every access of a text
//! trace) as above, and for other shapes their last write (plain) or each
//! thread's latest write (atomic: those never race with each other) and each
//! thread's latest read. An access is checked against every shape it may
//! conflict with.
//!
//! # Bounded memory
//! The update list is garbage collected: when it holds more than
//! `max(2^20, 4 × tracked accesses)` cells, every tracked access is advanced
//! to the tail (its lockset is materialized by walking, stopping early once it
//! contains every thread, lock and volatile seen so far, since it cannot grow
//! any further within the list) and the list is emptied. So memory is per
//! thread (pair, for `reach`), lock, volatile and tracked access, never per
//! event.
//!
//! # Guarantee and where it differs from `vc`
//! Like FastTrack, this is exact up to and including the first race on each
//! variable (same racy event and witness as `vc`, with or without a window, by
//! the argument in [`super::epoch`]): before that race, writes are totally
//! ordered and every read before the last write is HB-before it. Later racy
//! events can be missed: a write replaces the last write and clears the reads
//! even when it races with them, so an access ordered after the new write but
//! not after the replaced accesses is not reported. Every reported event is racy
//! for `vc` as well.

use serde_json::json;

use super::{Kind, in_window};
use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op};

const NONE: u32 = u32::MAX;
/// The update list is never collected below this many cells.
const MIN_CELLS: usize = 1 << 20;

/// One synchronization action in the update list. Every rule of Figure 1 has
/// the form "if `src` ∈ LS then add `dst`", over one element space holding
/// threads, locks and volatile variables:
/// `acq(t,l)`: l→t, `rel(t,l)`: t→l, `fork(t,u)`: t→u, `join(t,u)`: u→t,
/// `vw(t,v)`: t→v, `vr(t,v)`: v→t.
#[derive(Clone, Copy, Debug)]
struct Cell {
    src: u32,
    dst: u32,
}

/// A tracked access: the origin of a lazily evaluated lockset.
#[derive(Clone, Copy, Debug)]
struct Acc {
    id: u32,
    loc: u32,
    thread: u32,
    /// Element of `thread`.
    elem: u32,
    /// Update-list position the lockset is evaluated up to (exclusive).
    pos: u32,
    /// Update-list position at the access itself (`pos` moves on collection).
    origin: u32,
    /// A lock held by `thread` at the access, or NONE.
    alock: u32,
    /// Materialized lockset at `pos` (index into the pool), or NONE for `{thread}`.
    ls: u32,
    /// Threads (ids below 64) already found in the lockset: it only grows, so
    /// they stay ordered after this access.
    memo: u64,
}

/// The tracked accesses of a variable: those of plain accesses to all of it
/// (every access of a text trace), and when `more` is not 0 its other shapes
/// in `sides[more - 1]`.
#[derive(Clone, Debug, Default)]
struct VarInfo {
    write: Option<Acc>,
    reads: Vec<Acc>,
    more: u32,
}

/// A shape besides the plain whole-variable one (bytes touched, kind) and
/// its tracked accesses: a plain shape keeps its last write and the latest
/// read of each thread since; an atomic shape the latest write and read of
/// each thread (its writes never race with each other, so none replaces
/// another thread's).
#[derive(Clone, Debug)]
struct Side {
    mask: u8,
    kind: Kind,
    writes: Vec<Acc>,
    reads: Vec<Acc>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    checks: u64,
    alock_hits: u64,
    memo_hits: u64,
    reach_hits: u64,
    walks: u64,
    cells_walked: u64,
    compactions: u64,
    materialized: u64,
    ordered_walks: u64,
    ordered_cells: u64,
}

/// The update list, the element space and lockset evaluation.
#[derive(Debug, Default)]
struct Lazy {
    cells: Vec<Cell>,
    /// Global position of `cells[0]`.
    base: u32,
    /// Thread id of each element (NONE for locks and volatiles).
    elem_thread: Vec<u32>,
    thread_elem: Vec<u32>,
    lock_elem: Vec<u32>,
    vol_elem: Vec<u32>,
    /// Scratch lockset bitset of [`Lazy::walk_bits`].
    bits: Vec<u64>,
    /// Materialized locksets (element lists) and free slots.
    pool: Vec<Vec<u32>>,
    free: Vec<u32>,
    /// Lock id -> holding thread (NONE when free).
    holder: Vec<u32>,
    /// `reach[u][t] = p + 1`: an access of thread u at update-list position p
    /// was found HB-before thread t's current point (0: nothing known).
    reach: Vec<Vec<u32>>,
    n: Counters,
}

impl Lazy {
    #[inline]
    fn tail(&self) -> u32 {
        self.base + self.cells.len() as u32
    }

    #[inline]
    fn elem(table: &mut Vec<u32>, id: u32, elem_thread: &mut Vec<u32>, thread: u32) -> u32 {
        let i = id as usize;
        if i >= table.len() {
            table.resize(i + 1, NONE);
        }
        if table[i] == NONE {
            table[i] = elem_thread.len() as u32;
            elem_thread.push(thread);
        }
        table[i]
    }

    #[inline]
    fn thread(&mut self, t: u32) -> u32 {
        Self::elem(&mut self.thread_elem, t, &mut self.elem_thread, t)
    }

    #[inline]
    fn lock(&mut self, l: u32) -> u32 {
        Self::elem(&mut self.lock_elem, l, &mut self.elem_thread, NONE)
    }

    #[inline]
    fn vol(&mut self, v: u32) -> u32 {
        Self::elem(&mut self.vol_elem, v, &mut self.elem_thread, NONE)
    }

    /// Is access `a` HB-before the current access of thread `t` (element
    /// `te`, `t != a.thread`)? Short circuits first, then the lazy walk.
    #[inline]
    fn ordered(&mut self, a: &mut Acc, t: u32, te: u32) -> bool {
        self.n.checks += 1;
        if a.alock != NONE && self.holder[a.alock as usize] == t {
            self.n.alock_hits += 1;
            return true;
        }
        if t < 64 && a.memo >> t & 1 == 1 {
            self.n.memo_hits += 1;
            return true;
        }
        if self
            .reach
            .get(a.thread as usize)
            .and_then(|r| r.get(t as usize))
            .is_some_and(|&p| a.origin < p)
        {
            self.n.reach_hits += 1;
            return true;
        }
        self.n.walks += 1;
        let start = (a.pos - self.base) as usize;
        let (found, walked) = if self.elem_thread.len() <= 64 {
            self.walk_small(a, te, start)
        } else {
            self.walk_bits(a, te, start)
        };
        self.n.cells_walked += walked as u64;
        if found {
            self.n.ordered_walks += 1;
            self.n.ordered_cells += walked as u64;
            if t < 64 {
                a.memo |= 1 << t;
            }
        }
        self.learn(a);
        found
    }

    /// Record in `reach` every thread the lockset of `a` is known to contain.
    fn learn(&mut self, a: &Acc) {
        let u = a.thread as usize;
        if u >= self.reach.len() {
            self.reach.resize(u + 1, Vec::new());
        }
        let row = &mut self.reach[u];
        let mut memo = a.memo;
        while memo != 0 {
            let t = memo.trailing_zeros() as usize;
            memo &= memo - 1;
            if t >= row.len() {
                row.resize(t + 1, 0);
            }
            row[t] = row[t].max(a.origin + 1);
        }
    }

    /// The walk with the lockset in one register (at most 64 elements): each
    /// cell is the branch-free `ls |= ((ls >> src) & 1) << dst`; whether the
    /// current thread got in is tested once per chunk of cells.
    #[inline]
    fn walk_small(&mut self, a: &mut Acc, te: u32, start: usize) -> (bool, usize) {
        let mut ls: u64 = match a.ls {
            NONE => 1 << a.elem,
            i => self.pool[i as usize].iter().fold(0, |m, &e| m | 1 << e),
        };
        let tbit = 1u64 << te;
        let mut walked = 0;
        if ls & tbit == 0 {
            for chunk in self.cells[start..].chunks(16) {
                for c in chunk {
                    ls |= ((ls >> c.src) & 1) << c.dst;
                }
                walked += chunk.len();
                if ls & tbit != 0 {
                    break;
                }
            }
        }
        // Remember every thread the lockset reached (it only grows).
        let mut threads = ls;
        while threads != 0 {
            let e = threads.trailing_zeros() as usize;
            threads &= threads - 1;
            let th = self.elem_thread[e];
            if th < 64 {
                a.memo |= 1 << th;
            }
        }
        (ls & tbit != 0, walked)
    }

    /// The walk for more than 64 elements: the lockset as a bitset of words,
    /// each cell the same branch-free rule as in [`Lazy::walk_small`].
    fn walk_bits(&mut self, a: &mut Acc, te: u32, start: usize) -> (bool, usize) {
        let words = self.elem_thread.len().div_ceil(64);
        let ls = &mut self.bits;
        ls.clear();
        ls.resize(words, 0);
        let set = |ls: &mut Vec<u64>, e: u32| ls[e as usize >> 6] |= 1 << (e & 63);
        match a.ls {
            NONE => set(ls, a.elem),
            i => self.pool[i as usize].iter().for_each(|&e| set(ls, e)),
        }
        let has = |ls: &[u64], e: u32| ls[e as usize >> 6] >> (e & 63) & 1 == 1;
        let mut walked = 0;
        if !has(ls, te) {
            for chunk in self.cells[start..].chunks(16) {
                for c in chunk {
                    let (s, d) = (c.src as usize, c.dst as usize);
                    let bit = (ls[s >> 6] >> (s & 63)) & 1;
                    ls[d >> 6] |= bit << (d & 63);
                }
                walked += chunk.len();
                if has(ls, te) {
                    break;
                }
            }
        }
        // Remember every thread the lockset reached (it only grows).
        for (t, &e) in self.thread_elem.iter().take(64).enumerate() {
            if e != NONE && has(ls, e) {
                a.memo |= 1 << t;
            }
        }
        (has(ls, te), walked)
    }

    /// Advance `a` to the tail, materializing its lockset. Stops walking
    /// early once the lockset holds every element seen so far: it cannot grow
    /// within the list any more.
    fn advance(&mut self, a: &mut Acc) {
        let tail = self.tail();
        if a.pos == tail {
            return;
        }
        let known = self.elem_thread.len();
        let ls = &mut self.bits;
        ls.clear();
        ls.resize(known.div_ceil(64), 0);
        let slot = match a.ls {
            NONE => self.free.pop().unwrap_or_else(|| {
                self.pool.push(Vec::new());
                self.pool.len() as u32 - 1
            }),
            i => i,
        };
        let mut members = std::mem::take(&mut self.pool[slot as usize]);
        if a.ls == NONE {
            members.clear();
            members.push(a.elem);
        }
        for &e in &members {
            ls[e as usize >> 6] |= 1 << (e & 63);
        }
        let start = (a.pos - self.base) as usize;
        let size = |ls: &[u64]| ls.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        if members.len() < known {
            for chunk in self.cells[start..].chunks(64) {
                for c in chunk {
                    let (s, d) = (c.src as usize, c.dst as usize);
                    let bit = (ls[s >> 6] >> (s & 63)) & 1;
                    ls[d >> 6] |= bit << (d & 63);
                }
                if size(ls) == known {
                    break;
                }
            }
        }
        members.clear();
        for (w, &word) in ls.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                members.push((w * 64) as u32 + word.trailing_zeros());
                word &= word - 1;
            }
        }
        for &e in &members {
            let th = self.elem_thread[e as usize];
            if th < 64 {
                a.memo |= 1 << th;
            }
        }
        self.pool[slot as usize] = members;
        a.ls = slot;
        a.pos = tail;
        self.learn(a);
        self.n.materialized += 1;
    }

    fn release(&mut self, a: &Acc) {
        if a.ls != NONE {
            self.pool[a.ls as usize].clear();
            self.free.push(a.ls);
        }
    }
}

/// Streaming Goldilocks detector (`--relation hb --engine lockset`).
pub struct GoldilocksDetector {
    lazy: Lazy,
    vars: Vec<VarInfo>,
    /// The shapes besides the plain whole-variable one, per variable that
    /// has any (see [`VarInfo::more`]).
    sides: Vec<Vec<Side>>,
    /// Tracked accesses (last writes plus reads since them).
    live: usize,
    /// Locks held per thread, in acquisition order.
    held: Vec<Vec<u32>>,
    has_events: Vec<bool>,
    window: Option<u64>,
    /// Candidates of a check: (event id, side or NONE, index).
    order: Vec<(u32, u32, u32)>,
    /// Fixed collection threshold (tests); None: `max(2^20, 4 × live)`.
    gc_limit: Option<usize>,
    pub(crate) report: Report,
}

impl GoldilocksDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        GoldilocksDetector {
            lazy: Lazy::default(),
            vars: Vec::new(),
            sides: Vec::new(),
            live: 0,
            held: Vec::new(),
            has_events: Vec::new(),
            window,
            order: Vec::new(),
            gc_limit: None,
            report: Report::new(Relation::Hb, Engine::Lockset, window, 0),
        }
    }

    /// Like [`GoldilocksDetector::new`], but collecting the update list
    /// whenever it holds `limit` cells (for testing the collection).
    pub fn with_gc_limit(window: Option<u64>, limit: usize) -> Self {
        GoldilocksDetector {
            gc_limit: Some(limit.max(1)),
            ..Self::new(window)
        }
    }

    #[inline]
    fn push(&mut self, src: u32, dst: u32) {
        self.lazy.cells.push(Cell { src, dst });
        let len = self.lazy.cells.len();
        if len
            >= self
                .gc_limit
                .unwrap_or_else(|| MIN_CELLS.max(4 * self.live))
        {
            self.compact();
        }
    }

    /// Garbage-collect the update list: advance every tracked access to the tail.
    fn compact(&mut self) {
        let lazy = &mut self.lazy;
        lazy.n.compactions += 1;
        for var in &mut self.vars {
            if let Some(w) = var.write.as_mut() {
                lazy.advance(w);
            }
            for r in &mut var.reads {
                lazy.advance(r);
            }
        }
        for side in self.sides.iter_mut().flatten() {
            for a in side.writes.iter_mut().chain(&mut side.reads) {
                lazy.advance(a);
            }
        }
        lazy.base = lazy.tail();
        lazy.cells.clear();
    }

    /// Feed the next event.
    #[inline]
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let t = ev.thread;
        let ti = t as usize;
        let te = self.lazy.thread(t);
        if ti >= self.held.len() {
            self.held.resize(ti + 1, Vec::new());
            self.has_events.resize(ti + 1, false);
        }
        self.has_events[ti] = true;
        match ev.op {
            // Relaxed atomics synchronize nothing; every access is checked.
            Op::Read | Op::Write | Op::AtomicRead | Op::AtomicWrite => {
                let race = self.access(id, ev, te);
                self.push_race(id, ev, race);
            }
            Op::Acquire => {
                let l = ev.target as usize;
                if l >= self.lazy.holder.len() {
                    self.lazy.holder.resize(l + 1, NONE);
                }
                self.lazy.holder[l] = t;
                self.held[ti].push(ev.target);
                let le = self.lazy.lock(ev.target);
                self.push(le, te);
            }
            Op::Release => {
                if let Some(h) = self.lazy.holder.get_mut(ev.target as usize) {
                    *h = NONE;
                }
                if let Some(p) = self.held[ti].iter().rposition(|&l| l == ev.target) {
                    self.held[ti].remove(p);
                }
                let le = self.lazy.lock(ev.target);
                self.push(te, le);
            }
            Op::Fork => {
                let ue = self.lazy.thread(ev.target);
                self.push(te, ue);
            }
            Op::Join => {
                if self
                    .has_events
                    .get(ev.target as usize)
                    .copied()
                    .unwrap_or(false)
                {
                    let ue = self.lazy.thread(ev.target);
                    self.push(ue, te);
                }
            }
            // A volatile write is checked before its release, a volatile
            // read after its acquire.
            Op::VolatileWrite => {
                let race = self.access(id, ev, te);
                let ve = self.lazy.vol(ev.target);
                self.push(te, ve);
                self.push_race(id, ev, race);
            }
            Op::VolatileRead => {
                let ve = self.lazy.vol(ev.target);
                self.push(ve, te);
                let race = self.access(id, ev, te);
                self.push_race(id, ev, race);
            }
            Op::ReentrantAcquire | Op::ReentrantRelease | Op::Request => {}
        }
    }

    fn push_race(&mut self, id: EventId, ev: &Event, race: Option<Access>) {
        if let Some(first) = race {
            self.report.push(Race {
                first,
                second: Access::of(id, ev),
                variable: ev.target,
            });
        }
    }

    fn access(&mut self, id: EventId, ev: &Event, te: u32) -> Option<Access> {
        let t = ev.thread;
        let v = ev.target as usize;
        if v >= self.vars.len() {
            self.vars.resize(v + 1, VarInfo::default());
        }
        let now = Acc {
            id,
            loc: ev.loc,
            thread: t,
            elem: te,
            pos: self.lazy.tail(),
            origin: self.lazy.tail(),
            alock: self.held[t as usize].first().copied().unwrap_or(NONE),
            ls: NONE,
            memo: 0,
        };
        // Every access of a text trace is plain and touches the whole
        // variable: one shape.
        if !ev.op.is_access() || ev.bytes() != 0xff || self.vars[v].more != 0 {
            return self.shaped(ev, now);
        }
        let window = self.window;
        let lazy = &mut self.lazy;
        let var = &mut self.vars[v];
        let as_access = |a: &Acc, op: Op| Access {
            id: a.id,
            thread: a.thread,
            op,
            loc: a.loc,
        };
        if ev.op == Op::Read {
            let race = match var.write.as_mut() {
                Some(w) if w.thread != t && in_window(window, id, w.id) => {
                    (!lazy.ordered(w, t, te)).then(|| as_access(w, Op::Write))
                }
                _ => None,
            };
            Self::record(lazy, &mut self.live, &mut var.reads, now);
            return race;
        }
        // A write: candidates latest first; the first unordered one is the witness.
        let order = &mut self.order;
        order.clear();
        if let Some(w) = var.write
            && w.thread != t
            && in_window(window, id, w.id)
        {
            order.push((w.id, NONE, NONE));
        }
        for (i, r) in var.reads.iter().enumerate() {
            if r.thread != t && in_window(window, id, r.id) {
                order.push((r.id, NONE, i as u32));
            }
        }
        order.sort_unstable_by_key(|&(id, _, _)| std::cmp::Reverse(id));
        let mut race = None;
        for &(_, _, i) in order.iter() {
            let (a, op) = match i {
                NONE => (var.write.as_mut(), Op::Write),
                i => (var.reads.get_mut(i as usize), Op::Read),
            };
            if let Some(a) = a
                && !lazy.ordered(a, t, te)
            {
                race = Some(as_access(a, op));
                break;
            }
        }
        for r in &var.reads {
            lazy.release(r);
        }
        self.live -= var.reads.len();
        var.reads.clear();
        match var.write.replace(now) {
            Some(old) => lazy.release(&old),
            None => self.live += 1,
        }
        race
    }

    /// An access of a variable with more than one shape (bytes touched,
    /// kind), or of another shape than the plain whole-variable one: checked
    /// against the tracked accesses of every shape it may conflict with
    /// (bytes overlap, not both atomic), latest first, then recorded in its
    /// own shape.
    fn shaped(&mut self, ev: &Event, now: Acc) -> Option<Access> {
        let (t, te, id) = (now.thread, now.elem, now.id);
        let v = ev.target as usize;
        let (kind, mask, write) = (Kind::of(ev.op), ev.bytes(), ev.op.is_write());
        let atomic = kind != Kind::Plain;
        let own = if kind == Kind::Plain && mask == 0xff {
            NONE
        } else {
            let var = &mut self.vars[v];
            if var.more == 0 {
                self.sides.push(Vec::new());
                var.more = self.sides.len() as u32;
            }
            let list = &mut self.sides[var.more as usize - 1];
            match list.iter().position(|s| s.mask == mask && s.kind == kind) {
                Some(i) => i as u32,
                None => {
                    list.push(Side {
                        mask,
                        kind,
                        writes: Vec::new(),
                        reads: Vec::new(),
                    });
                    list.len() as u32 - 1
                }
            }
        };
        let window = self.window;
        let near = |a: &Acc| a.thread != t && in_window(window, id, a.id);
        let var = &mut self.vars[v];
        let sides: &mut [Side] = match var.more {
            0 => &mut [],
            m => &mut self.sides[m as usize - 1],
        };
        // Candidates: (id, side or NONE, index << 1 | is_read), index NONE
        // for the plain whole-variable shape's write.
        let order = &mut self.order;
        order.clear();
        if let Some(w) = var.write.as_ref().filter(|w| near(w)) {
            order.push((w.id, NONE, NONE));
        }
        for (i, r) in var.reads.iter().enumerate() {
            if write && near(r) {
                order.push((r.id, NONE, (i as u32) << 1 | 1));
            }
        }
        for (k, side) in sides.iter().enumerate() {
            if side.mask & mask == 0 || (atomic && side.kind != Kind::Plain) {
                continue;
            }
            for (i, w) in side.writes.iter().enumerate() {
                if near(w) {
                    order.push((w.id, k as u32, (i as u32) << 1));
                }
            }
            for (i, r) in side.reads.iter().enumerate() {
                if write && near(r) {
                    order.push((r.id, k as u32, (i as u32) << 1 | 1));
                }
            }
        }
        order.sort_unstable_by_key(|&(id, _, _)| std::cmp::Reverse(id));
        let lazy = &mut self.lazy;
        let mut race = None;
        for &(_, k, i) in order.iter() {
            let (a, op) = match (k, i) {
                (NONE, NONE) => (var.write.as_mut(), Op::Write),
                (NONE, i) => (var.reads.get_mut(i as usize >> 1), Op::Read),
                (k, i) => {
                    let side = &mut sides[k as usize];
                    let (wop, rop) = side.kind.ops();
                    match i & 1 {
                        0 => (side.writes.get_mut(i as usize >> 1), wop),
                        _ => (side.reads.get_mut(i as usize >> 1), rop),
                    }
                }
            };
            if let Some(a) = a
                && !lazy.ordered(a, t, te)
            {
                race = Some(Access {
                    id: a.id,
                    thread: a.thread,
                    op,
                    loc: a.loc,
                });
                break;
            }
        }
        // Record it in its own shape.
        if own == NONE {
            // A plain access to the whole variable, which has other shapes.
            if !write {
                Self::record(lazy, &mut self.live, &mut var.reads, now);
                return race;
            }
            for r in var.reads.drain(..) {
                lazy.release(&r);
                self.live -= 1;
            }
            match var.write.replace(now) {
                Some(old) => lazy.release(&old),
                None => self.live += 1,
            }
            return race;
        }
        let side = &mut sides[own as usize];
        if !write {
            Self::record(lazy, &mut self.live, &mut side.reads, now);
        } else if atomic {
            Self::record(lazy, &mut self.live, &mut side.writes, now);
        } else {
            // A plain write: the reads of its shape, and its last write, are
            // HB-before it until the first race.
            for a in side.reads.drain(..).chain(side.writes.drain(..)) {
                lazy.release(&a);
                self.live -= 1;
            }
            side.writes.push(now);
            self.live += 1;
        }
        race
    }

    /// Make `now` its thread's access in `list` (one per thread).
    fn record(lazy: &mut Lazy, live: &mut usize, list: &mut Vec<Acc>, now: Acc) {
        match list.iter_mut().find(|a| a.thread == now.thread) {
            Some(a) => {
                lazy.release(a);
                *a = now;
            }
            None => {
                list.push(now);
                *live += 1;
            }
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let n = self.lazy.n;
        let s = &mut self.report.stats;
        s.insert("checks".into(), json!(n.checks));
        s.insert("alock_short_circuits".into(), json!(n.alock_hits));
        s.insert("memo_short_circuits".into(), json!(n.memo_hits));
        s.insert("reach_short_circuits".into(), json!(n.reach_hits));
        s.insert("lockset_walks".into(), json!(n.walks));
        s.insert("cells_walked".into(), json!(n.cells_walked));
        s.insert("update_list_cells".into(), json!(self.lazy.tail()));
        s.insert("compactions".into(), json!(n.compactions));
        s.insert("ordered_walks".into(), json!(n.ordered_walks));
        s.insert("cells_walked_ordered".into(), json!(n.ordered_cells));
        s.insert("materialized_locksets".into(), json!(n.materialized));
        self.report.notes.push(
            "Goldilocks is exact up to the first race on each variable; later racy events on a variable may be missed"
                .into(),
        );
        self.report.normalize();
        self.report
    }
}
