//! Sync-preserving races (Mathur, Pavlogiannis & Viswanathan, "Optimal
//! prediction of synchronization-preserving races", POPL 2021).
//!
//! A pair (e1, e2) of conflicting accesses is a sync-preserving race when some
//! correct reordering that keeps every lock's critical sections in their trace
//! order has both events enabled. The paper's characterization: exactly when
//! neither event is in SPClosure(pred(e1) ∪ pred(e2)), the sync-preserving
//! closure of their thread predecessors ([`crate::witness::closure`]). The
//! analysis is sound and complete for this class, which strictly contains the
//! HB races.
//!
//! The engine streams: it decides, for each access e2 as it is read, whether
//! some earlier conflicting access e1 of another thread forms such a race,
//! from what the closures need of the trace so far ([`closure`]). It uses the
//! two monotonicity facts the paper's algorithm rests on:
//!
//! - C(e2) = SPClosure(pred(e2)) only grows along e2's thread, so one closure
//!   per thread is extended incrementally over the whole trace (each event
//!   enters it at most once);
//! - for a thread t1, SPClosure(C(e2) ∪ pred(e1)) only grows as e1 moves
//!   forward in t1, so the candidates of t1 (its conflicting accesses not in
//!   C(e2); earlier ones are in every closure) are tried in order by extending
//!   one closure, journaled and rolled back afterwards; the first candidate
//!   left outside its closure is a race partner, and once the closure is not
//!   formable (a never-released section) no later candidate is either.
//!
//! Before that, a lockset test (Eraser's, with a lock per thread and one
//! held by every read, as RAPID's engine does) skips accesses no earlier
//! access can race with: when some lock was held by every access to the
//! variable so far and by e2, every conflicting e1 of another thread shares
//! a lock with e2, and a closure holding both of those sections' acquires
//! holds the earlier one's release, hence e1 or e2. The answers are those of
//! the candidate loop; only the work differs.
//!
//! Each racy event gets one partner: per thread the earliest sync-preserving
//! one, and of those the latest in the trace.

mod closure;
#[cfg(test)]
mod reference;

use serde_json::json;
use smallvec::SmallVec;

use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op, Trace};
use closure::{Closure, Item, Kind, NONE, Thread, Walker};

/// One earlier access: position in its thread, event id, location, op and
/// the bytes of the variable it touched ([`Event::bytes`]).
#[derive(Clone, Copy, Debug)]
struct Past {
    pos: u32,
    id: EventId,
    loc: u32,
    op: Op,
    bytes: u8,
}

/// The accesses of one thread to one variable, by position (most
/// variables of array code have one writer and a few reads: inline).
#[derive(Clone, Debug)]
struct History {
    thread: u32,
    writes: SmallVec<[Past; 1]>,
    reads: SmallVec<[Past; 2]>,
}

/// What the engine keeps per variable.
#[derive(Clone, Debug)]
struct Var {
    /// The last write (data or atomic) of every byte: thread and position.
    last_write: (u32, u32),
    /// Per byte, once a write touched part of the variable (else every byte's
    /// last write is `last_write`).
    byte_writes: Option<Box<[(u32, u32); 8]>>,
    /// The thread of every access so far (NONE: none yet; MANY: several).
    owner: u32,
    /// Every access so far was a read.
    reads_only: bool,
    /// Locks held by every access so far.
    locks: SmallVec<[u32; 2]>,
    /// Per thread that accessed it (by thread id), its accesses.
    past: SmallVec<[History; 1]>,
}

const MANY: u32 = u32::MAX - 1;

impl Default for Var {
    fn default() -> Self {
        Var {
            last_write: (NONE, 0),
            byte_writes: None,
            owner: NONE,
            reads_only: true,
            locks: SmallVec::new(),
            past: SmallVec::new(),
        }
    }
}

impl Var {
    /// Record a write of `bytes` by `at` (thread, position).
    fn wrote(&mut self, bytes: u8, at: (u32, u32)) {
        if bytes == 0xff {
            self.last_write = at;
            self.byte_writes = None;
            return;
        }
        let last = self.last_write;
        let per = self.byte_writes.get_or_insert_with(|| Box::new([last; 8]));
        for (b, w) in per.iter_mut().enumerate() {
            if bytes >> b & 1 == 1 {
                *w = at;
            }
        }
    }

    /// The last writes of the bytes in `bytes` (repeats possible).
    fn read_from(&self, bytes: u8) -> impl Iterator<Item = (u32, u32)> + '_ {
        let whole = self.byte_writes.is_none().then_some(self.last_write);
        let per = self.byte_writes.iter().flat_map(move |per| {
            (0..8)
                .filter(move |b| bytes >> b & 1 == 1)
                .map(move |b| per[b])
        });
        whole.into_iter().chain(per)
    }

    /// Add an access by `t` holding `held` to the lockset; true when some
    /// lock (a real one, `t`'s own, or the one every read holds) is still
    /// held by every access.
    #[inline]
    fn lockset(&mut self, t: u32, read: bool, held: &[u32]) -> bool {
        if self.owner == NONE {
            self.owner = t;
            self.locks.extend_from_slice(held);
        } else {
            if self.owner != t {
                self.owner = MANY;
            }
            if !self.locks.is_empty() {
                self.locks.retain(|l| held.contains(l));
            }
        }
        self.reads_only &= read;
        self.owner != MANY || self.reads_only || !self.locks.is_empty()
    }
}

/// Streaming sync-preserving race detector (`--relation syncp`).
pub struct SyncpDetector {
    window: Option<u64>,
    threads: Vec<Thread>,
    /// Per thread, C(e2) for its latest access.
    own: Vec<Closure>,
    /// Per thread, the locks it holds.
    held: Vec<Vec<u32>>,
    vars: Vec<Var>,
    walker: Walker,
    checked: u64,
    extended: u64,
    unclosable: u64,
    skipped: u64,
    report: Report,
}

impl SyncpDetector {
    /// A detector pairing only accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        SyncpDetector {
            window,
            threads: Vec::new(),
            own: Vec::new(),
            held: Vec::new(),
            vars: Vec::new(),
            walker: Walker::default(),
            checked: 0,
            extended: 0,
            unclosable: 0,
            skipped: 0,
            report: Report::new(Relation::Syncp, Engine::Closure, window, 0),
        }
    }

    #[inline]
    fn thread(&mut self, t: u32) {
        if self.threads.len() <= t as usize {
            let n = t as usize + 1;
            self.threads.resize_with(n, Thread::default);
            self.own.resize_with(n, Closure::default);
            self.held.resize_with(n, Vec::new);
        }
    }

    /// Feed the next event.
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let t = ev.thread;
        self.thread(t);
        if matches!(ev.op, Op::Fork | Op::Join) {
            self.thread(ev.target);
        }
        let pos = self.threads[t as usize].len;
        let x = ev.target as usize;
        match ev.op {
            op if op.is_memory() => {
                if self.vars.len() <= x {
                    self.vars.resize_with(x + 1, Var::default);
                }
                let var = &mut self.vars[x];
                let bytes = ev.bytes();
                if ev.op.is_write() {
                    var.wrote(bytes, (t, pos));
                } else {
                    // Reads-from is per byte: the read sees, for each byte it
                    // touches, the last write touching that byte.
                    let items = &mut self.threads[t as usize].items;
                    let mut seen: SmallVec<[(u32, u32); 2]> = SmallVec::new();
                    for (w, p) in var.read_from(bytes) {
                        if w != NONE && w != t && !seen.contains(&(w, p)) {
                            seen.push((w, p));
                            items.push(Item {
                                pos,
                                kind: Kind::Brings,
                                a: w,
                                b: p + 1,
                                c: 0,
                            });
                        }
                    }
                }
            }
            Op::Acquire => {
                let th = &mut self.threads[t as usize];
                th.open.push((ev.target, th.items.len() as u32));
                th.items.push(Item {
                    pos,
                    kind: Kind::Acquire,
                    a: ev.target,
                    b: id,
                    c: NONE,
                });
                self.held[t as usize].push(ev.target);
            }
            Op::Release => {
                let th = &mut self.threads[t as usize];
                // Releases out of nesting order release their own lock.
                if let Some(k) = th.open.iter().rposition(|&(l, _)| l == ev.target) {
                    let (_, i) = th.open.remove(k);
                    th.items[i as usize].c = pos;
                }
                let held = &mut self.held[t as usize];
                if let Some(k) = held.iter().rposition(|&l| l == ev.target) {
                    held.remove(k);
                }
            }
            Op::Fork => {
                let child = &mut self.threads[ev.target as usize];
                if child.fork.0 == NONE {
                    child.fork = (t, pos + 1);
                }
            }
            Op::Join => {
                let all = self.threads[ev.target as usize].len;
                self.threads[t as usize].items.push(Item {
                    pos,
                    kind: Kind::Brings,
                    a: ev.target,
                    b: all,
                    c: 0,
                });
            }
            _ => {}
        }
        if ev.op.is_memory() {
            self.access(id, ev, pos);
        }
        self.threads[t as usize].len += 1;
    }

    /// Check the access `id` (position `p2` of its thread), then record it.
    fn access(&mut self, id: EventId, ev: &Event, p2: u32) {
        let (t2, x) = (ev.thread, ev.target as usize);
        let write = ev.op.is_write();
        let (bytes, atomic) = (ev.bytes(), ev.op.is_atomic());
        // Of a thread's accesses of the variable, those that conflict with
        // this one: a common byte, not both atomic (reads and writes are
        // sorted out by the candidate lists).
        let conflicts = |a: &Past| a.bytes & bytes != 0 && !(atomic && a.op.is_atomic());
        let var = &mut self.vars[x];
        if var.lockset(t2, !write, &self.held[t2 as usize]) {
            self.skipped += 1;
        } else {
            let c = &mut self.own[t2 as usize];
            let w = &mut self.walker;
            if w.extend_pred(&self.threads, c, t2, p2).is_err() {
                // Not in a validated trace (every section acquired before a
                // later acquire of its lock is released before it); stay
                // silent rather than report without a witness.
                self.unclosable += 1;
            } else {
                let mut best: Option<(Past, u32, Op)> = None;
                let window = self.window;
                let near = |a: &Past| window.is_none_or(|w| ((id - a.id) as u64) < w);
                for h in var.past.iter().filter(|h| h.thread != t2) {
                    let t1 = h.thread;
                    let start = c.len(t1);
                    w.begin();
                    for (a, op) in Candidates::new(h, write, start) {
                        if !near(&a) || !conflicts(&a) || c.len(t1) > a.pos {
                            continue;
                        }
                        self.checked += 1;
                        if w.extend_pred(&self.threads, c, t1, a.pos).is_err() {
                            break;
                        }
                        self.extended += 1;
                        if c.len(t1) == a.pos && c.len(t2) <= p2 {
                            if best.is_none_or(|(b, _, _)| a.id > b.id) {
                                best = Some((a, t1, op));
                            }
                            break;
                        }
                    }
                    w.rollback(c);
                }
                if let Some((a, t1, op)) = best {
                    self.report.push(Race {
                        first: Access {
                            id: a.id,
                            thread: t1,
                            op,
                            loc: a.loc,
                        },
                        second: Access::of(id, ev),
                        variable: ev.target,
                    });
                }
            }
        }
        // By thread: found in log time however many threads share the
        // variable (the race check takes the latest partner over all of
        // them, so their order does not matter).
        let h = match var.past.binary_search_by_key(&t2, |h| h.thread) {
            Ok(k) => &mut var.past[k],
            Err(k) => {
                var.past.insert(
                    k,
                    History {
                        thread: t2,
                        writes: SmallVec::new(),
                        reads: SmallVec::new(),
                    },
                );
                &mut var.past[k]
            }
        };
        let p = Past {
            pos: p2,
            id,
            loc: ev.loc,
            op: ev.op,
            bytes,
        };
        if write {
            h.writes.push(p);
        } else {
            h.reads.push(p);
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let s = &mut self.report.stats;
        s.insert("threads".into(), json!(self.threads.len()));
        s.insert("candidates_checked".into(), json!(self.checked));
        s.insert("closures_extended".into(), json!(self.extended));
        s.insert("lockset_skipped".into(), json!(self.skipped));
        if self.unclosable > 0 {
            s.insert("unclosable".into(), json!(self.unclosable));
        }
        self.report.notes.push(
            "every sync-preserving race is a predictable race, and every race whose witness keeps lock order is found (POPL 2021)"
                .into(),
        );
        self.report.normalize();
        let report = std::mem::take(&mut self.report);
        crate::alloc::drop_later(self, report.events > crate::alloc::BIG);
        report
    }
}

crate::impl_detector!(SyncpDetector);

/// A thread's accesses that conflict with an access (its writes for a read,
/// all of them for a write), from position `start` on, in thread order.
struct Candidates<'h> {
    writes: &'h [Past],
    reads: &'h [Past],
}

impl<'h> Candidates<'h> {
    fn new(h: &'h History, write: bool, start: u32) -> Self {
        let from = |l: &'h [Past]| &l[l.partition_point(|a| a.pos < start)..];
        Candidates {
            writes: from(&h.writes),
            reads: if write { from(&h.reads) } else { &[] },
        }
    }
}

impl Iterator for Candidates<'_> {
    type Item = (Past, Op);

    #[inline]
    fn next(&mut self) -> Option<(Past, Op)> {
        match (self.writes.first(), self.reads.first()) {
            (Some(w), Some(r)) if r.pos < w.pos => {
                self.reads = &self.reads[1..];
                Some((*r, r.op))
            }
            (Some(w), _) => {
                self.writes = &self.writes[1..];
                Some((*w, w.op))
            }
            (None, Some(r)) => {
                self.reads = &self.reads[1..];
                Some((*r, r.op))
            }
            (None, None) => None,
        }
    }
}

/// Decide the sync-preserving racy events of a loaded trace, pairing only
/// accesses less than `window` events apart.
pub fn analyze(trace: &Trace, window: Option<u64>) -> Report {
    crate::engine::detector::run_trace(SyncpDetector::new(window), trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::{Config, trace};

    /// The streaming engine reports exactly the races of the first engine
    /// (same racy events, same partners) on generated traces of every
    /// profile and of many small shapes, windowed and not.
    #[test]
    fn same_races_as_the_reference_engine() {
        let mut configs = Vec::new();
        // Small traces of every shape first (the first failure is small).
        for seed in 0..300u64 {
            let mut cfg = Config::profile("small").expect("a profile");
            cfg.seed = seed;
            cfg.events = 20 + seed % 200;
            cfg.threads = 2 + (seed % 5) as u32;
            cfg.locks = 1 + (seed % 4) as u32;
            cfg.vars = 1 + (seed % 6) as u32;
            cfg.p_volatile = 0.1;
            cfg.p_unlocked_access = [0.1, 0.5, 0.9][(seed % 3) as usize];
            configs.push(cfg);
        }
        configs.sort_by_key(|c| c.events);
        for name in ["small", "ftpserver", "long-cs", "many-threads", "bench"] {
            for seed in 0..4 {
                let mut cfg = Config::profile(name).expect("a profile");
                cfg.events = 3000;
                cfg.seed = seed;
                configs.push(cfg);
            }
        }
        let mut compared = 0;
        for cfg in &configs {
            let t = trace(cfg);
            for window in [None, Some(40)] {
                let new = analyze(&t, window);
                let old = reference::analyze(&t, window);
                if let Some(i) = (0..new.races.len().max(old.races.len()))
                    .find(|&i| new.races.get(i) != old.races.get(i))
                {
                    panic!(
                        "{cfg:?} window {window:?}: race {i}: new {:?} old {:?}\n{}",
                        new.races.get(i),
                        old.races.get(i),
                        t.events[..200.min(t.len())]
                            .iter()
                            .enumerate()
                            .map(|(i, e)| format!("{i}:{:?}", e))
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                }
                assert_eq!(new.events, old.events);
                compared += new.races.len();
            }
        }
        assert!(compared > 1000, "only {compared} races compared");
    }
}
