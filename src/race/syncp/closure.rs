//! Sync-preserving closures over a trace read so far: the streaming form of
//! [`crate::witness::closure`] (same rules, same walk), in memory linear in
//! what the walk needs rather than in the trace and in threads².
//!
//! Per thread it keeps only the events a walk acts on besides thread order:
//! reads of another thread's write (which bring that write), acquires (which
//! bring the release of the trace-earlier of two acquires of a lock) and
//! joins (which bring the joined thread). Reads of the thread's own write
//! bring nothing thread order does not. A closure of a sync-preserving pair
//! holds only events up to the later of the two (every rule adds an event
//! trace-before one already in the set; the earlier of two acquires of a
//! lock is released before the later one), so events not read yet are never
//! needed, and an acquire's release is known by the time a walk needs it.
//!
//! A closure holds a prefix length per thread and the trace-latest acquire
//! per lock, in maps that hold only the threads and locks it touches (a
//! trace of 100,000 threads passing one lock along has 100,000 closures of
//! one or two entries each).

use rustc_hash::FxHashMap;

pub(crate) const NONE: u32 = u32::MAX;

/// What an item brings into a closure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A read of another thread's write, or a join: the first `b` events of
    /// thread `a`.
    Brings,
    /// An acquire of lock `a`, event id `b`, released at position `c` of its
    /// thread (NONE: not yet).
    Acquire,
}

/// One event of a thread that a walk acts on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item {
    pub pos: u32,
    pub kind: Kind,
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

/// What a walk needs of one thread.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    /// Events so far.
    pub len: u32,
    /// Its items, by position.
    pub items: Vec<Item>,
    /// The forking thread and how many of its events precede the fork and
    /// it (NONE, 0: not forked).
    pub fork: (u32, u32),
    /// Open acquires: lock and item index, innermost last.
    pub open: Vec<(u32, u32)>,
}

impl Default for Thread {
    fn default() -> Self {
        Thread {
            len: 0,
            items: Vec::new(),
            fork: (NONE, 0),
            open: Vec::new(),
        }
    }
}

/// A map from small integer keys to values, dense for keys below
/// [`DENSE`] and hashed above (default values are not stored).
#[derive(Clone, Debug, Default)]
pub(crate) struct Sparse<V: Copy + PartialEq> {
    dense: Vec<V>,
    rest: FxHashMap<u32, V>,
}

/// Keys kept in the dense part.
const DENSE: u32 = 64;

impl<V: Copy + PartialEq> Sparse<V> {
    #[inline]
    fn get(&self, k: u32, default: V) -> V {
        if k < DENSE {
            self.dense.get(k as usize).copied().unwrap_or(default)
        } else {
            self.rest.get(&k).copied().unwrap_or(default)
        }
    }

    /// Set `k` to `v`, returning its old value.
    #[inline]
    fn set(&mut self, k: u32, v: V, default: V) -> V {
        if k < DENSE {
            if self.dense.len() <= k as usize {
                self.dense.resize(k as usize + 1, default);
            }
            std::mem::replace(&mut self.dense[k as usize], v)
        } else if v == default {
            self.rest.remove(&k).unwrap_or(default)
        } else {
            self.rest.insert(k, v).unwrap_or(default)
        }
    }
}

/// The latest acquire of a lock in a closure: its event id, thread and
/// item index (NONE: none). Not its release, which may come later.
type Latest = (u32, u32, u32);
const NO_ACQUIRE: Latest = (NONE, NONE, NONE);

/// A sync-preserving closed set of events, grown incrementally.
#[derive(Clone, Debug, Default)]
pub(crate) struct Closure {
    len: Sparse<u32>,
    latest: Sparse<Latest>,
}

impl Closure {
    /// How many of thread `t`'s first events are in the set.
    #[inline]
    pub fn len(&self, t: u32) -> u32 {
        self.len.get(t, 0)
    }
}

/// A change to undo.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Len(u32, u32),
    Latest(u32, Latest),
}

/// The closure could not be formed (a section never released with a later
/// acquire of its lock: not in a valid trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unclosable;

/// The work space of walks: the stack of prefixes to add and the journal
/// of a temporary extension.
#[derive(Default)]
pub(crate) struct Walker {
    stack: Vec<(u32, u32)>,
    journal: Vec<Undo>,
    journaling: bool,
}

impl Walker {
    /// Start recording changes so [`Walker::rollback`] can undo them.
    pub fn begin(&mut self) {
        debug_assert!(self.journal.is_empty());
        self.journaling = true;
    }

    /// Undo every change to `c` since [`Walker::begin`].
    pub fn rollback(&mut self, c: &mut Closure) {
        while let Some(u) = self.journal.pop() {
            match u {
                Undo::Len(t, old) => {
                    c.len.set(t, old, 0);
                }
                Undo::Latest(l, old) => {
                    c.latest.set(l, old, NO_ACQUIRE);
                }
            }
        }
        self.journaling = false;
        self.stack.clear();
    }

    /// Add the first `n` events of thread `t` to `c` and close it.
    pub fn extend(
        &mut self,
        threads: &[Thread],
        c: &mut Closure,
        t: u32,
        n: u32,
    ) -> Result<(), Unclosable> {
        self.stack.push((t, n));
        while let Some((t, n)) = self.stack.pop() {
            let start = c.len.get(t, 0);
            if start >= n {
                continue;
            }
            if self.journaling {
                self.journal.push(Undo::Len(t, start));
            }
            c.len.set(t, n, 0);
            let th = &threads[t as usize];
            if start == 0 && th.fork.0 != NONE {
                self.stack.push(th.fork);
            }
            let from = th.items.partition_point(|it| it.pos < start);
            for (i, it) in th.items[from..].iter().enumerate() {
                if it.pos >= n {
                    break;
                }
                match it.kind {
                    Kind::Brings => self.stack.push((it.a, it.b)),
                    Kind::Acquire => {
                        let l = it.a;
                        let cur = c.latest.get(l, NO_ACQUIRE);
                        let mine = (it.b, t, (from + i) as u32);
                        // Of two acquires in the set, the earlier one's
                        // release must be in it too.
                        let earlier = if cur.0 == NONE {
                            self.set_latest(c, l, mine);
                            continue;
                        } else if cur.0 < it.b {
                            self.set_latest(c, l, mine);
                            cur
                        } else {
                            mine
                        };
                        let rel = threads[earlier.1 as usize].items[earlier.2 as usize].c;
                        if rel == NONE {
                            self.stack.clear();
                            return Err(Unclosable);
                        }
                        self.stack.push((earlier.1, rel + 1));
                    }
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn set_latest(&mut self, c: &mut Closure, l: u32, v: Latest) {
        let old = c.latest.set(l, v, NO_ACQUIRE);
        if self.journaling {
            self.journal.push(Undo::Latest(l, old));
        }
    }

    /// Add the events that must precede the event at position `p` of thread
    /// `t` (its thread predecessors, and its thread's fork when it is the
    /// first event) and close the set.
    pub fn extend_pred(
        &mut self,
        threads: &[Thread],
        c: &mut Closure,
        t: u32,
        p: u32,
    ) -> Result<(), Unclosable> {
        if p == 0 {
            let (f, n) = threads[t as usize].fork;
            if f != NONE {
                self.extend(threads, c, f, n)?;
            }
        }
        self.extend(threads, c, t, p)
    }
}
