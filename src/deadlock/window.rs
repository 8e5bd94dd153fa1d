//! The part of the trace sync-preserving closures reason about: a window of
//! the last W events, kept as per-thread logs of the events a closure must
//! look at (acquires with their releases, releases, joins, reads of another
//! thread's write), and a *base*: every event before the window.
//!
//! Closures always contain the base, as if the trace's first events had run
//! in their order: a deadlock is predicted by reordering only the events of
//! the window (with no window, the whole trace after the first lock
//! operation). Events before the first lock operation are base too: no
//! deadlock needs them reordered, since they hold no acquire. The base moves
//! in steps (at checkpoints every W/16 events, at most 65,536), so the window
//! holds between W and W plus a step. Memory is the window's: 28 bytes per
//! logged event in it, plus 8 per variable.

use std::collections::VecDeque;

use crate::trace::{EventId, ThreadId};

/// No position (no release yet, no writer).
pub const NONE: u32 = u32::MAX;

/// What a closure must know about an event beyond thread order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Acquire of `lock` at `loc` (an instance of abstract acquire `class`),
    /// released at position `rel` of the same thread (NONE while held).
    Acquire {
        /// The lock.
        lock: u32,
        /// Position of its release in the thread, or NONE.
        rel: u32,
        /// Location id.
        loc: u32,
        /// Its abstract acquire.
        class: u32,
    },
    /// Release of `lock` (not logged: it only patches its acquire).
    Release {
        /// The lock.
        lock: u32,
    },
    /// A read of the write at `pos` of `thread` (another thread).
    Read {
        /// The writer.
        thread: ThreadId,
        /// Its position.
        pos: u32,
    },
    /// A join of `child`, which has `len` events.
    Join {
        /// The joined thread.
        child: ThreadId,
        /// Its length.
        len: u32,
    },
}

/// One logged event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Position in its thread.
    pub pos: u32,
    /// Event id.
    pub id: EventId,
    /// What it brings into a closure.
    pub kind: Kind,
}

/// A lock held when the base ends: its acquire, and its release once known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    /// The holding thread.
    pub thread: ThreadId,
    /// The acquire's event id.
    pub id: EventId,
    /// The acquire's position in the thread.
    pub pos: u32,
    /// The acquire's location id.
    pub loc: u32,
    /// Position of the release, or NONE.
    pub rel: u32,
}

/// One thread's log.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Events of the thread in the base.
    pub base: u32,
    /// Events of the thread so far.
    pub len: u32,
    /// Logged events not in the base, by position.
    pub entries: VecDeque<Entry>,
    /// The fork of the thread: forking thread and position.
    pub fork: Option<(ThreadId, u32)>,
    /// Entries moved into the base so far (an entry's index plus this is
    /// its number, which stays).
    moved: u64,
    /// Its acquires not released yet: lock, position, entry number.
    open: Vec<(u32, u32, u64)>,
    /// Whether its last event is a blocked request (which never runs).
    blocked: bool,
}

impl Log {
    /// The first acquire of abstract acquire `class` after event `after`
    /// (None: from the start) that is not in the base.
    pub fn next_of(&self, class: u32, after: Option<EventId>) -> Option<&Entry> {
        let mut start = self.from(self.base);
        if let Some(a) = after {
            start = start.max(self.entries.partition_point(|e| e.id <= a));
        }
        self.entries
            .range(start..)
            .find(|e| matches!(e.kind, Kind::Acquire { class: c, .. } if c == class))
    }

    /// Index of the first entry at position `pos` or later.
    pub fn from(&self, pos: u32) -> usize {
        self.entries.partition_point(|e| e.pos < pos)
    }

    /// The entry at position `pos`, if logged and not in the base.
    pub fn at(&self, pos: u32) -> Option<&Entry> {
        let i = self.from(pos);
        self.entries.get(i).filter(|e| e.pos == pos)
    }
}

/// The lock state the base ends with, per lock.
#[derive(Clone, Copy, Debug)]
pub struct BaseLock {
    /// The trace-latest acquire in the base (its event id).
    last: EventId,
    /// That acquire, when the base ends holding it.
    pub open: Option<Open>,
}

/// The window and its base.
#[derive(Debug, Default)]
pub struct Window {
    /// Most events in the window (None: the whole trace).
    limit: Option<u64>,
    /// Events between checkpoints.
    step: u64,
    /// Whether logging started (at the first lock operation).
    pub active: bool,
    /// Events seen.
    pub head: u64,
    /// Id of the first event after the base.
    pub base: u64,
    /// Checkpoints after the base: event id and each thread's length then.
    checkpoints: VecDeque<(u64, Vec<u32>)>,
    /// Per thread.
    pub threads: Vec<Log>,
    /// Per lock, what the base ends with.
    base_locks: Vec<Option<BaseLock>>,
    /// Per variable, the last write: thread + 1 (0: none seen) and position.
    last_write: Vec<(u32, u32)>,
}

impl Window {
    /// A window of `limit` events (None: unbounded).
    pub fn new(limit: Option<u64>) -> Window {
        Window {
            limit,
            step: limit.map_or(0, |w| (w / 16).clamp(1, 1 << 16)),
            ..Window::default()
        }
    }

    /// The log of thread `t` (created on first use).
    pub fn log(&mut self, t: ThreadId) -> &mut Log {
        let i = t as usize;
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, Log::default);
        }
        &mut self.threads[i]
    }

    /// Events of thread `t` in the base.
    pub fn base_of(&self, t: ThreadId) -> u32 {
        self.threads.get(t as usize).map_or(0, |l| l.base)
    }

    /// The lock `l` acquire the base ends holding, if any.
    pub fn open_at_base(&self, l: u32) -> Option<&Open> {
        self.base_locks
            .get(l as usize)
            .and_then(|b| b.as_ref())
            .and_then(|b| b.open.as_ref())
            // Released inside the base since it moved there: not held.
            .filter(|o| o.rel == NONE || o.rel >= self.base_of(o.thread))
    }

    /// Start logging: every event so far is base.
    fn activate(&mut self) {
        self.active = true;
        self.base = self.head;
        for l in &mut self.threads {
            l.base = l.len - u32::from(l.blocked);
        }
    }

    /// Account for event `id` of thread `t`; `entry` is what to log, if
    /// anything; `request` marks a blocked request (never base). Logging
    /// starts at the first lock operation (`lock_op`).
    pub fn push(
        &mut self,
        id: EventId,
        t: ThreadId,
        kind: Option<Kind>,
        request: bool,
        lock_op: bool,
    ) {
        if !self.active && lock_op {
            self.activate();
        }
        self.head = u64::from(id) + 1;
        let active = self.active;
        let log = self.log(t);
        let pos = log.len;
        log.len += 1;
        log.blocked = request;
        if !active {
            return;
        }
        match kind {
            Some(Kind::Acquire { lock, .. }) => {
                let number = log.moved + log.entries.len() as u64;
                log.open.push((lock, pos, number));
            }
            Some(Kind::Release { lock }) => {
                if let Some(i) = log.open.iter().rposition(|&(l, _, _)| l == lock) {
                    let (_, apos, number) = log.open.remove(i);
                    let entry = number
                        .checked_sub(log.moved)
                        .and_then(|i| log.entries.get_mut(i as usize));
                    match entry {
                        Some(Entry {
                            kind: Kind::Acquire { rel, .. },
                            ..
                        }) => *rel = pos,
                        // The acquire is in the base, which ends holding the lock.
                        _ => {
                            if let Some(Some(BaseLock { open: Some(o), .. })) =
                                self.base_locks.get_mut(lock as usize)
                                && o.thread == t
                                && o.pos == apos
                            {
                                o.rel = pos;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(kind) = kind.filter(|k| !matches!(k, Kind::Release { .. })) {
            self.threads[t as usize]
                .entries
                .push_back(Entry { pos, id, kind });
        }
        if let Some(limit) = self.limit
            && self.head.is_multiple_of(self.step)
        {
            let lens = self
                .threads
                .iter()
                .map(|l| l.len - u32::from(l.blocked))
                .collect();
            self.checkpoints.push_back((self.head, lens));
            let mut next = None;
            while self
                .checkpoints
                .front()
                .is_some_and(|&(at, _)| at + limit <= self.head)
            {
                next = self.checkpoints.pop_front();
            }
            if let Some((at, lens)) = next {
                self.advance(at, &lens);
            }
        }
    }

    /// Move the base to event id `at`, where the threads had `lens` events.
    fn advance(&mut self, at: u64, lens: &[u32]) {
        self.base = at;
        for (t, log) in self.threads.iter_mut().enumerate() {
            // A thread first seen after the checkpoint has nothing in the base.
            log.base = lens.get(t).copied().unwrap_or(0).max(log.base);
            while log.entries.front().is_some_and(|e| e.pos < log.base) {
                let e = log.entries.pop_front().expect("front exists");
                log.moved += 1;
                if let Kind::Acquire { lock, rel, loc, .. } = e.kind {
                    let i = lock as usize;
                    if self.base_locks.len() <= i {
                        self.base_locks.resize(i + 1, None);
                    }
                    // Threads are moved one after the other: keep the
                    // trace-latest acquire of each lock.
                    let b = &mut self.base_locks[i];
                    if b.is_none_or(|b| b.last < e.id) {
                        let held = rel == NONE || rel >= log.base;
                        *b = Some(BaseLock {
                            last: e.id,
                            open: held.then_some(Open {
                                thread: t as ThreadId,
                                id: e.id,
                                pos: e.pos,
                                loc,
                                rel,
                            }),
                        });
                    }
                }
            }
        }
    }

    /// A write to variable `v` by `t` (the event just pushed).
    pub fn wrote(&mut self, t: ThreadId, v: u32) {
        if !self.active {
            return;
        }
        let pos = self.threads[t as usize].len - 1;
        let i = v as usize;
        if self.last_write.len() <= i {
            self.last_write.resize(i + 1, (0, 0));
        }
        self.last_write[i] = (t + 1, pos);
    }

    /// What a read of `v` by `t` brings in: the last write, when another
    /// thread's and logged.
    pub fn read_of(&self, t: ThreadId, v: u32) -> Option<Kind> {
        if !self.active {
            return None;
        }
        match self.last_write.get(v as usize) {
            Some(&(w, pos)) if w != 0 && w - 1 != t => Some(Kind::Read { thread: w - 1, pos }),
            _ => None,
        }
    }
}
