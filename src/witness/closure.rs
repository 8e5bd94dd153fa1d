//! Sync-preserving closures (Mathur, Pavlogiannis & Viswanathan, POPL 2021,
//! Section 3): the smallest set of events that contains given thread prefixes
//! and is closed under
//!
//! - thread order (a set is a prefix of every thread),
//! - reads-from: a read (`r`, `vr` or `ar`) brings, for each byte it
//!   touches, the last write touching that byte before it in the trace
//!   (`w`, `vw` or `aw`; every access of a text trace touches its whole
//!   variable, so that is the last write to the variable),
//! - fork / join: a thread's first event brings the fork of the thread; a join
//!   brings every event of the joined thread,
//! - locks: when two acquires of a lock are in the set, the release of the
//!   trace-earlier one is too (a section never released: the closure fails).
//!
//! Such a set, laid out in trace order, is a correct reordering prefix of the
//! trace in which every lock's critical sections keep their order (the paper's
//! Lemma on sync-preserving ideals): per thread a prefix, fork before the
//! child, reads see the same write (any write between a read and its write in
//! the trace would be between them in the layout too, so it is not in the
//! set), and a critical section is closed before the next acquire of its lock.
//! (e1, e2) is a sync-preserving race exactly when neither event is in the
//! closure of their thread predecessors (the paper's characterization), and
//! then that closure is the witness.
//!
//! A [`Closure`] keeps the set as one prefix length per thread plus, per lock,
//! the trace-latest acquire in the set; every other acquire in the set has its
//! release in it. Extensions are incremental (a set only grows), and can be
//! undone through a journal, so engines extend a long-lived closure
//! temporarily and roll back.

use rustc_hash::FxHashMap;

use crate::trace::{EventId, Op, Trace};

const NONE: u32 = u32::MAX;

/// Whether `op` reads its variable (plain, volatile or relaxed atomic).
#[inline]
pub(crate) fn is_read(op: Op) -> bool {
    matches!(op, Op::Read | Op::VolatileRead | Op::AtomicRead)
}

/// The last write of each byte of each variable, in trace order: one write
/// per variable while every write touched all of it (every text trace), per
/// byte for the variables a write touched only part of.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastWrites {
    whole: Vec<u32>,
    bytes: FxHashMap<u32, [u32; 8]>,
}

impl LastWrites {
    /// None yet, for `vars` variables.
    pub(crate) fn new(vars: usize) -> LastWrites {
        LastWrites {
            whole: vec![NONE; vars],
            bytes: FxHashMap::default(),
        }
    }

    /// Write `e` touches the bytes `mask` (0xff: all) of `x`.
    pub(crate) fn write(&mut self, x: u32, mask: u8, e: EventId) {
        if mask == 0xff {
            if !self.bytes.is_empty() {
                self.bytes.remove(&x);
            }
            self.whole[x as usize] = e;
            return;
        }
        let whole = self.whole[x as usize];
        let per = self.bytes.entry(x).or_insert([whole; 8]);
        for (b, w) in per.iter_mut().enumerate() {
            if mask >> b & 1 == 1 {
                *w = e;
            }
        }
    }

    /// The writes a read of the bytes `mask` of `x` reads from, per byte
    /// (NONE: the initial value); `f` gets each distinct one.
    pub(crate) fn each(&self, x: u32, mask: u8, mut f: impl FnMut(u32)) {
        let per = if self.bytes.is_empty() {
            None
        } else {
            self.bytes.get(&x)
        };
        match per {
            None => f(self.whole[x as usize]),
            Some(per) => {
                let mut seen = [NONE; 8];
                for (b, &w) in per.iter().enumerate() {
                    if mask >> b & 1 == 1 && !seen.contains(&w) {
                        seen[b] = w;
                        f(w);
                    }
                }
            }
        }
    }

    /// Per byte of `mask`, the write each reads from (NONE for bytes outside
    /// `mask` and for the initial value).
    pub(crate) fn of(&self, x: u32, mask: u8) -> [u32; 8] {
        let mut out = [NONE; 8];
        let per = match self.bytes.get(&x) {
            Some(per) => *per,
            None => [self.whole[x as usize]; 8],
        };
        for b in 0..8 {
            if mask >> b & 1 == 1 {
                out[b] = per[b];
            }
        }
        out
    }
}

/// Per-event facts the closure needs, computed once per trace.
#[derive(Clone, Debug)]
pub(crate) struct TraceIndex {
    /// Each thread's events in trace order.
    pub per_thread: Vec<Vec<EventId>>,
    /// Position of each event in its thread.
    pub pos: Vec<u32>,
    /// Thread of each event.
    pub thread: Vec<u32>,
    /// What each event brings in besides thread order: for a read, the write it
    /// reads from (the latest, when its bytes read from several); for an
    /// acquire, its release; NONE otherwise.
    link: Vec<u32>,
    /// For reads whose bytes read from several writes: the others.
    more_links: FxHashMap<u32, Vec<u32>>,
    /// Op of each event.
    op: Vec<Op>,
    /// Target of each event (lock or joined thread).
    target: Vec<u32>,
    /// The fork of each thread (NONE when not forked).
    fork_of: Vec<u32>,
}

impl TraceIndex {
    /// Index `trace`.
    pub(crate) fn new(trace: &Trace) -> TraceIndex {
        let n = trace.len();
        let nthreads = trace.num_threads();
        let mut per_thread: Vec<Vec<EventId>> = vec![Vec::new(); nthreads];
        let mut pos = Vec::with_capacity(n);
        let mut thread = Vec::with_capacity(n);
        let mut link = vec![NONE; n];
        let mut op = Vec::with_capacity(n);
        let mut target = Vec::with_capacity(n);
        let mut fork_of = vec![NONE; nthreads];
        let mut last_write = LastWrites::new(trace.num_vars());
        let mut more_links: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        // Per thread, the open acquires by lock (innermost last).
        let mut open: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nthreads];
        for (i, ev) in trace.events.iter().enumerate() {
            let i = i as u32;
            let t = ev.thread as usize;
            pos.push(per_thread[t].len() as u32);
            per_thread[t].push(i);
            thread.push(ev.thread);
            op.push(ev.op);
            target.push(ev.target);
            match ev.op {
                op if is_read(op) => {
                    let mut writes: Vec<u32> = Vec::new();
                    last_write.each(ev.target, ev.bytes(), |w| {
                        if w != NONE {
                            writes.push(w);
                        }
                    });
                    writes.sort_unstable();
                    if let Some(w) = writes.pop() {
                        link[i as usize] = w;
                    }
                    if !writes.is_empty() {
                        more_links.insert(i, writes);
                    }
                }
                op if op.is_write() => last_write.write(ev.target, ev.bytes(), i),
                Op::Acquire => open[t].push((ev.target, i)),
                Op::Release => {
                    // Releases out of nesting order release their own lock.
                    if let Some(k) = open[t].iter().rposition(|&(l, _)| l == ev.target) {
                        let (_, a) = open[t].remove(k);
                        link[a as usize] = i;
                    }
                }
                Op::Fork if fork_of[ev.target as usize] == NONE => fork_of[ev.target as usize] = i,
                _ => {}
            }
        }
        TraceIndex {
            per_thread,
            pos,
            thread,
            link,
            more_links,
            op,
            target,
            fork_of,
        }
    }

    /// Number of threads.
    pub(crate) fn num_threads(&self) -> usize {
        self.per_thread.len()
    }

    /// The writes read `e` reads from in the trace, its bytes' last writes
    /// (none for a non-read or a read of initial values).
    pub(crate) fn reads_from(&self, e: EventId) -> impl Iterator<Item = EventId> + '_ {
        let w = self.link[e as usize];
        let read = is_read(self.op[e as usize]);
        let more = if read && !self.more_links.is_empty() {
            self.more_links.get(&e).map(Vec::as_slice)
        } else {
            None
        };
        (read && w != NONE)
            .then_some(w)
            .into_iter()
            .chain(more.unwrap_or(&[]).iter().copied())
    }
}

/// The closure could not be formed: it would hold a lock's critical section
/// that is never released together with a later acquire of that lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unclosable;

/// A sync-preserving closed set of events, grown incrementally.
#[derive(Clone, Debug)]
pub(crate) struct Closure {
    /// Per thread, how many of its first events are in the set.
    len: Vec<u32>,
    /// Per lock, the trace-latest acquire in the set (NONE: none).
    latest: Vec<u32>,
    /// Undo log of `(is_lock, index, old value)`, when journaling.
    journal: Vec<(bool, u32, u32)>,
    journaling: bool,
    stack: Vec<(u32, u32)>,
}

impl Closure {
    /// The empty set for a trace with `threads` threads and `locks` locks.
    pub(crate) fn new(threads: usize, locks: usize) -> Closure {
        Closure {
            len: vec![0; threads],
            latest: vec![NONE; locks],
            journal: Vec::new(),
            journaling: false,
            stack: Vec::new(),
        }
    }

    #[cfg(test)] // only the syncp reference engine undoes
    /// How many of thread `t`'s first events are in the set.
    #[inline]
    pub(crate) fn len(&self, t: u32) -> u32 {
        self.len[t as usize]
    }

    /// Whether event `e` is in the set.
    #[inline]
    pub(crate) fn contains(&self, idx: &TraceIndex, e: EventId) -> bool {
        idx.pos[e as usize] < self.len[idx.thread[e as usize] as usize]
    }

    #[cfg(test)] // only the syncp reference engine undoes
    /// Start recording changes so [`Closure::rollback`] can undo them.
    pub(crate) fn begin(&mut self) {
        debug_assert!(self.journal.is_empty());
        self.journaling = true;
    }

    #[cfg(test)] // only the syncp reference engine undoes
    /// Undo every change since [`Closure::begin`] and stop recording.
    pub(crate) fn rollback(&mut self) {
        while let Some((is_lock, i, old)) = self.journal.pop() {
            if is_lock {
                self.latest[i as usize] = old;
            } else {
                self.len[i as usize] = old;
            }
        }
        self.journaling = false;
        self.stack.clear();
    }

    #[inline]
    fn set_latest(&mut self, l: u32, e: u32) {
        if self.journaling {
            self.journal.push((true, l, self.latest[l as usize]));
        }
        self.latest[l as usize] = e;
    }

    /// Add the first `n` events of thread `t` and close the set.
    pub(crate) fn extend(&mut self, idx: &TraceIndex, t: u32, n: u32) -> Result<(), Unclosable> {
        self.stack.push((t, n));
        while let Some((t, n)) = self.stack.pop() {
            let ti = t as usize;
            let start = self.len[ti];
            if start >= n {
                continue;
            }
            if self.journaling {
                self.journal.push((false, t, start));
            }
            self.len[ti] = n;
            if start == 0 {
                let f = idx.fork_of[ti];
                if f != NONE {
                    self.stack
                        .push((idx.thread[f as usize], idx.pos[f as usize] + 1));
                }
            }
            for &e in &idx.per_thread[ti][start as usize..n as usize] {
                let ei = e as usize;
                match idx.op[ei] {
                    op if is_read(op) => {
                        for w in idx.reads_from(e) {
                            self.stack
                                .push((idx.thread[w as usize], idx.pos[w as usize] + 1));
                        }
                    }
                    Op::Join => {
                        let c = idx.target[ei];
                        let all = idx.per_thread[c as usize].len() as u32;
                        self.stack.push((c, all));
                    }
                    Op::Acquire => {
                        let l = idx.target[ei];
                        let cur = self.latest[l as usize];
                        // Of two acquires in the set, the earlier one's
                        // release must be in it too.
                        let earlier = if cur == NONE {
                            self.set_latest(l, e);
                            continue;
                        } else if cur < e {
                            self.set_latest(l, e);
                            cur
                        } else {
                            e
                        };
                        let r = idx.link[earlier as usize];
                        if r == NONE {
                            self.stack.clear();
                            return Err(Unclosable);
                        }
                        self.stack
                            .push((idx.thread[r as usize], idx.pos[r as usize] + 1));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Add the events that must precede `e` for it to be enabled (its thread
    /// predecessors, and its thread's fork when `e` is the thread's first
    /// event) and close the set.
    pub(crate) fn extend_pred(&mut self, idx: &TraceIndex, e: EventId) -> Result<(), Unclosable> {
        let (t, p) = (idx.thread[e as usize], idx.pos[e as usize]);
        if p == 0 {
            let f = idx.fork_of[t as usize];
            if f != NONE {
                self.extend(idx, idx.thread[f as usize], idx.pos[f as usize] + 1)?;
            }
        }
        self.extend(idx, t, p)
    }

    /// The events of the set in trace order.
    pub(crate) fn events(&self, idx: &TraceIndex) -> Vec<EventId> {
        let mut v: Vec<EventId> = self
            .len
            .iter()
            .enumerate()
            .flat_map(|(t, &n)| idx.per_thread[t][..n as usize].iter().copied())
            .collect();
        v.sort_unstable();
        v
    }
}

/// The sync-preserving closure of the thread predecessors of `e1` and `e2`,
/// in trace order, when it holds neither event: a correct reordering prefix
/// after which both are enabled. None otherwise.
pub(crate) fn witness(
    idx: &TraceIndex,
    locks: usize,
    e1: EventId,
    e2: EventId,
) -> Option<Vec<EventId>> {
    let mut c = Closure::new(idx.num_threads(), locks);
    c.extend_pred(idx, e1).ok()?;
    c.extend_pred(idx, e2).ok()?;
    (!c.contains(idx, e1) && !c.contains(idx, e2)).then(|| c.events(idx))
}
