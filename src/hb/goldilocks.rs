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
//! (the paper's Theorem 1). As in Section 3 the rules are evaluated lazily:
//! synchronization actions are appended as cells to an update list, each
//! access remembers its list position, and only when a later conflicting
//! access needs the verdict is a temporary lockset built by walking the list
//! from that position, stopping as soon as the accessing thread enters it.
//! Before walking, the two short-circuit checks of Section 3 run: same thread
//! (program order) and `alock`, a lock the earlier accessor held at its access
//! that the current thread holds now (the lock changed hands in between, so a
//! release/acquire pair orders the accesses). The paper picks `alock` at
//! random among the held locks; we pick the outermost held lock, which keeps
//! runs reproducible.
//!
//! # Reads and writes
//! The 2006 paper does not distinguish reads from writes (its Section 2.1
//! leaves it as future work). We keep one lockset origin per access kind, as
//! the later Goldilocks versions do: the last write, and the latest read of
//! each thread since that write. A read is checked against the last write; a
//! write against the last write and every such read, latest first, so the first
//! unordered one found is the witness (the latest unordered conflicting access,
//! as [`crate::history`] picks). A write then clears the reads (before the first
//! race they are all HB-before it).
//!
//! # Bounded memory
//! The update list is garbage collected: when it holds more than
//! `max(65536, 4 × tracked accesses)` cells, every tracked access is advanced
//! to the tail (its lockset is materialized by walking, stopping early once it
//! contains every thread, lock and volatile seen so far, since it cannot grow
//! any further within the list) and the list is emptied. So memory is per
//! thread, lock, volatile and tracked access, never per event.
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

use super::in_window;
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op};

const NONE: u32 = u32::MAX;
/// The update list is never collected below this many cells.
const MIN_CELLS: usize = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Acq,
    Rel,
    Fork,
    Join,
    VolWrite,
    VolRead,
}

/// One synchronization action in the update list. `target` is a lock, a
/// thread, or a dense volatile index, depending on `kind`.
#[derive(Clone, Copy, Debug)]
struct Cell {
    thread: u32,
    target: u32,
    kind: Kind,
}

/// A tracked access: the origin of a lazily evaluated lockset.
#[derive(Clone, Copy, Debug)]
struct Acc {
    id: u32,
    loc: u32,
    thread: u32,
    /// Update-list position the lockset is evaluated up to (exclusive).
    pos: u32,
    /// A lock held by `thread` at the access, or NONE.
    alock: u32,
    /// Materialized lockset at `pos` (index into the pool), or NONE for `{thread}`.
    ls: u32,
}

#[derive(Clone, Debug, Default)]
struct VarInfo {
    write: Option<Acc>,
    reads: Vec<Acc>,
}

#[derive(Clone, Debug, Default)]
struct Materialized {
    threads: Vec<u32>,
    locks: Vec<u32>,
    vols: Vec<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    checks: u64,
    alock_hits: u64,
    walks: u64,
    cells_walked: u64,
    compactions: u64,
    materialized: u64,
    max_cells: u64,
}

/// Membership marks for one element kind: `mark[e] == gen` means present.
#[derive(Clone, Debug, Default)]
struct Marks {
    mark: Vec<u32>,
    seen: Vec<bool>,
    known: u32,
}

impl Marks {
    #[inline]
    fn ensure(&mut self, e: u32) {
        let e = e as usize;
        if e >= self.mark.len() {
            self.mark.resize(e + 1, 0);
            self.seen.resize(e + 1, false);
        }
        if !self.seen[e] {
            self.seen[e] = true;
            self.known += 1;
        }
    }
}

/// The update list and the lockset evaluation machinery.
#[derive(Debug, Default)]
struct Lazy {
    cells: Vec<Cell>,
    /// Global position of `cells[0]`.
    base: u32,
    generation: u32,
    t: Marks,
    l: Marks,
    v: Marks,
    pool: Vec<Materialized>,
    free: Vec<u32>,
    /// Lock id -> holding thread (NONE when free).
    holder: Vec<u32>,
    n: Counters,
}

/// Add thread `x` to the lockset; evaluates to whether it is `stop` and new.
macro_rules! add_thread {
    ($self:ident, $x:expr, $gen:ident, $stop:expr, $members:expr) => {{
        let x = $x;
        if $self.t.mark[x as usize] != $gen {
            $self.t.mark[x as usize] = $gen;
            if let Some(m) = $members.as_mut() {
                m.threads.push(x);
            }
            x == $stop
        } else {
            false
        }
    }};
}

impl Lazy {
    #[inline]
    fn tail(&self) -> u32 {
        self.base + self.cells.len() as u32
    }

    fn next_gen(&mut self) -> u32 {
        if self.generation == u32::MAX {
            for m in [&mut self.t, &mut self.l, &mut self.v] {
                m.mark.iter_mut().for_each(|x| *x = 0);
            }
            self.generation = 0;
        }
        self.generation += 1;
        self.generation
    }

    /// Load the lockset of `a` at `a.pos` into the marks.
    fn begin(&mut self, a: &Acc, members: &mut Option<Materialized>) -> u32 {
        let g = self.next_gen();
        if a.ls == NONE {
            self.t.mark[a.thread as usize] = g;
            if let Some(m) = members.as_mut() {
                m.threads.push(a.thread);
            }
        } else {
            let m = &self.pool[a.ls as usize];
            for &x in &m.threads {
                self.t.mark[x as usize] = g;
            }
            for &x in &m.locks {
                self.l.mark[x as usize] = g;
            }
            for &x in &m.vols {
                self.v.mark[x as usize] = g;
            }
            if let Some(out) = members.as_mut() {
                out.threads.extend_from_slice(&m.threads);
                out.locks.extend_from_slice(&m.locks);
                out.vols.extend_from_slice(&m.vols);
            }
        }
        g
    }

    /// Walk the update list from `a.pos` applying Figure 1's rules. Stops and
    /// returns true as soon as thread `stop` enters the lockset (NONE: never).
    /// With `members`, collects the final lockset and stops early once it holds
    /// every element seen so far.
    fn walk(&mut self, a: &Acc, stop: u32, members: &mut Option<Materialized>) -> bool {
        let g = self.begin(a, members);
        if stop != NONE && self.t.mark[stop as usize] == g {
            return true;
        }
        let start = (a.pos - self.base) as usize;
        let full = |s: &Lazy, m: &Option<Materialized>| {
            m.as_ref().is_some_and(|m| {
                m.threads.len() as u32 == s.t.known
                    && m.locks.len() as u32 == s.l.known
                    && m.vols.len() as u32 == s.v.known
            })
        };
        if full(self, members) {
            return false;
        }
        for i in start..self.cells.len() {
            let c = self.cells[i];
            self.n.cells_walked += 1;
            let grew = match c.kind {
                Kind::Acq => {
                    if self.l.mark[c.target as usize] == g {
                        if add_thread!(self, c.thread, g, stop, members) {
                            return true;
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::Rel => {
                    if self.t.mark[c.thread as usize] == g && self.l.mark[c.target as usize] != g {
                        self.l.mark[c.target as usize] = g;
                        if let Some(m) = members.as_mut() {
                            m.locks.push(c.target);
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::Fork => {
                    if self.t.mark[c.thread as usize] == g {
                        if add_thread!(self, c.target, g, stop, members) {
                            return true;
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::Join => {
                    if self.t.mark[c.target as usize] == g {
                        if add_thread!(self, c.thread, g, stop, members) {
                            return true;
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::VolWrite => {
                    if self.t.mark[c.thread as usize] == g && self.v.mark[c.target as usize] != g {
                        self.v.mark[c.target as usize] = g;
                        if let Some(m) = members.as_mut() {
                            m.vols.push(c.target);
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::VolRead => {
                    if self.v.mark[c.target as usize] == g {
                        if add_thread!(self, c.thread, g, stop, members) {
                            return true;
                        }
                        true
                    } else {
                        false
                    }
                }
            };
            if grew && full(self, members) {
                break;
            }
        }
        false
    }

    /// Is access `a` HB-before the current access of thread `t` (`t != a.thread`)?
    #[inline]
    fn ordered(&mut self, a: &Acc, t: u32) -> bool {
        self.n.checks += 1;
        if a.alock != NONE && self.holder[a.alock as usize] == t {
            self.n.alock_hits += 1;
            return true;
        }
        self.n.walks += 1;
        self.walk(a, t, &mut None)
    }

    /// Advance `a` to the tail, materializing its lockset.
    fn advance(&mut self, a: &mut Acc) {
        let tail = self.tail();
        if a.pos == tail {
            return;
        }
        let mut members = Some(Materialized::default());
        self.walk(a, NONE, &mut members);
        let m = members.unwrap_or_default();
        if a.ls == NONE {
            a.ls = match self.free.pop() {
                Some(i) => {
                    self.pool[i as usize] = m;
                    i
                }
                None => {
                    self.pool.push(m);
                    self.pool.len() as u32 - 1
                }
            };
        } else {
            self.pool[a.ls as usize] = m;
        }
        a.pos = tail;
        self.n.materialized += 1;
    }

    fn release(&mut self, a: &Acc) {
        if a.ls != NONE {
            let m = &mut self.pool[a.ls as usize];
            m.threads.clear();
            m.locks.clear();
            m.vols.clear();
            self.free.push(a.ls);
        }
    }
}

/// Streaming Goldilocks detector (`--relation hb --engine lockset`).
pub struct GoldilocksDetector {
    lazy: Lazy,
    vars: Vec<VarInfo>,
    /// Tracked accesses (last writes plus reads since them).
    live: usize,
    /// Locks held per thread, in acquisition order.
    held: Vec<Vec<u32>>,
    has_events: Vec<bool>,
    /// Variable id -> dense volatile index.
    vol_idx: Vec<u32>,
    nvols: u32,
    window: Option<u64>,
    order: Vec<(u32, u32)>,
    /// Fixed collection threshold (tests); None: `max(65536, 4 × live)`.
    gc_limit: Option<usize>,
    report: Report,
}

impl GoldilocksDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        GoldilocksDetector {
            lazy: Lazy::default(),
            vars: Vec::new(),
            live: 0,
            held: Vec::new(),
            has_events: Vec::new(),
            vol_idx: Vec::new(),
            nvols: 0,
            window,
            order: Vec::new(),
            gc_limit: None,
            report: Report::new("hb", "lockset", window, 0),
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

    fn vol(&mut self, v: u32) -> u32 {
        let v = v as usize;
        if v >= self.vol_idx.len() {
            self.vol_idx.resize(v + 1, NONE);
        }
        if self.vol_idx[v] == NONE {
            self.vol_idx[v] = self.nvols;
            self.nvols += 1;
        }
        self.vol_idx[v]
    }

    fn push(&mut self, kind: Kind, thread: u32, target: u32) {
        match kind {
            Kind::Acq | Kind::Rel => self.lazy.l.ensure(target),
            Kind::Fork | Kind::Join => self.lazy.t.ensure(target),
            Kind::VolWrite | Kind::VolRead => self.lazy.v.ensure(target),
        }
        self.lazy.cells.push(Cell {
            thread,
            target,
            kind,
        });
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
        lazy.n.max_cells = lazy.n.max_cells.max(lazy.cells.len() as u64);
        for var in &mut self.vars {
            if let Some(w) = var.write.as_mut() {
                lazy.advance(w);
            }
            for r in &mut var.reads {
                lazy.advance(r);
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
        self.lazy.t.ensure(t);
        if ti >= self.held.len() {
            self.held.resize(ti + 1, Vec::new());
            self.has_events.resize(ti + 1, false);
        }
        self.has_events[ti] = true;
        match ev.op {
            Op::Read | Op::Write => {
                if let Some(first) = self.access(id, ev) {
                    self.report.races.push(Race {
                        first,
                        second: Access::of(id, ev),
                        variable: ev.target,
                    });
                }
            }
            Op::Acquire => {
                let l = ev.target as usize;
                if l >= self.lazy.holder.len() {
                    self.lazy.holder.resize(l + 1, NONE);
                }
                self.lazy.holder[l] = t;
                self.held[ti].push(ev.target);
                self.push(Kind::Acq, t, ev.target);
            }
            Op::Release => {
                if let Some(h) = self.lazy.holder.get_mut(ev.target as usize) {
                    *h = NONE;
                }
                if let Some(p) = self.held[ti].iter().rposition(|&l| l == ev.target) {
                    self.held[ti].remove(p);
                }
                self.push(Kind::Rel, t, ev.target);
            }
            Op::Fork => self.push(Kind::Fork, t, ev.target),
            Op::Join => {
                if self
                    .has_events
                    .get(ev.target as usize)
                    .copied()
                    .unwrap_or(false)
                {
                    self.push(Kind::Join, t, ev.target);
                }
            }
            Op::VolatileWrite => {
                let v = self.vol(ev.target);
                self.push(Kind::VolWrite, t, v);
            }
            Op::VolatileRead => {
                let v = self.vol(ev.target);
                self.push(Kind::VolRead, t, v);
            }
            Op::ReentrantAcquire | Op::ReentrantRelease => {}
        }
    }

    fn access(&mut self, id: EventId, ev: &Event) -> Option<Access> {
        let t = ev.thread;
        let v = ev.target as usize;
        if v >= self.vars.len() {
            self.vars.resize(v + 1, VarInfo::default());
        }
        let now = Acc {
            id,
            loc: ev.loc,
            thread: t,
            pos: self.lazy.tail(),
            alock: self.held[t as usize].first().copied().unwrap_or(NONE),
            ls: NONE,
        };
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
            let race = match var.write {
                Some(w) if w.thread != t && in_window(window, id, w.id) && !lazy.ordered(&w, t) => {
                    Some(as_access(&w, Op::Write))
                }
                _ => None,
            };
            match var.reads.iter_mut().find(|r| r.thread == t) {
                Some(r) => {
                    lazy.release(r);
                    *r = now;
                }
                None => {
                    var.reads.push(now);
                    self.live += 1;
                }
            }
            return race;
        }
        // A write: candidates latest first; the first unordered one is the witness.
        let order = &mut self.order;
        order.clear();
        if let Some(w) = var.write
            && w.thread != t
            && in_window(window, id, w.id)
        {
            order.push((w.id, NONE));
        }
        for (i, r) in var.reads.iter().enumerate() {
            if r.thread != t && in_window(window, id, r.id) {
                order.push((r.id, i as u32));
            }
        }
        order.sort_unstable_by_key(|&(id, _)| std::cmp::Reverse(id));
        let mut race = None;
        for &(_, i) in order.iter() {
            let (a, op) = if i == NONE {
                (var.write.expect("candidate write exists"), Op::Write)
            } else {
                (var.reads[i as usize], Op::Read)
            };
            if !lazy.ordered(&a, t) {
                race = Some(as_access(&a, op));
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

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let n = self.lazy.n;
        let s = &mut self.report.stats;
        s.insert("checks".into(), json!(n.checks));
        s.insert("alock_short_circuits".into(), json!(n.alock_hits));
        s.insert("lockset_walks".into(), json!(n.walks));
        s.insert("cells_walked".into(), json!(n.cells_walked));
        s.insert("update_list_cells".into(), json!(self.lazy.tail()));
        s.insert("compactions".into(), json!(n.compactions));
        s.insert("materialized_locksets".into(), json!(n.materialized));
        self.report.notes.push(
            "Goldilocks is exact up to the first race on each variable; later racy events on a variable may be missed"
                .into(),
        );
        self.report.normalize();
        self.report
    }
}
