//! The part of the trace sync-preserving closures reason about: a window of
//! the last W events, kept as per-thread logs of the events a closure must
//! look at (acquires with their releases, releases, joins, reads of another
//! thread's write), and a *base*: every event before the window.
//!
//! Closures always contain the base, as if the trace's first events had run
//! in their order: a deadlock is predicted by reordering only the events of
//! the window (with no window, the whole trace after the first lock
//! operation). Events before the first lock operation are base too: no
//! deadlock needs them reordered, since they hold no acquire. Memory is the
//! window's: about 28 bytes per event in it, plus 8 per variable.

use std::collections::VecDeque;

use crate::trace::{EventId, ThreadId};

/// No position (no release yet, no writer).
pub const NONE: u32 = u32::MAX;

/// What a closure must know about an event beyond thread order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Acquire of `lock` at `loc`, released at position `rel` of the same
    /// thread (NONE while held).
    Acquire {
        /// The lock.
        lock: u32,
        /// Position of its release in the thread, or NONE.
        rel: u32,
        /// Location id.
        loc: u32,
    },
    /// Release of `lock`.
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
    /// Positions of its acquires not released yet, with their lock.
    open: Vec<(u32, u32)>,
}

impl Log {
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

/// Marks a blocked request in the ring (it never joins the base).
const REQUEST: u32 = 1 << 31;

/// The window and its base.
#[derive(Debug, Default)]
pub struct Window {
    /// Most events in the window (None: the whole trace).
    limit: Option<u64>,
    /// Whether logging started (at the first lock operation).
    pub active: bool,
    /// Events seen.
    pub head: u64,
    /// Id of the first event after the base.
    pub base: u64,
    /// Thread of every event after the base (only with a limit).
    ring: VecDeque<u32>,
    /// Per thread.
    pub threads: Vec<Log>,
    /// Per lock, its acquire when the base ends holding it.
    pub base_open: Vec<Option<Open>>,
    /// Per variable, the last write: thread + 1 (0: none seen) and position.
    last_write: Vec<(u32, u32)>,
}

impl Window {
    /// A window of `limit` events (None: unbounded).
    pub fn new(limit: Option<u64>) -> Window {
        Window {
            limit,
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
        self.base_open.get(l as usize).and_then(|o| o.as_ref())
    }

    /// Start logging: every event so far is base.
    fn activate(&mut self) {
        self.active = true;
        self.base = self.head;
        for l in &mut self.threads {
            l.base = l.len;
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
        if !active {
            return;
        }
        if let Some(kind) = kind {
            match kind {
                Kind::Acquire { lock, .. } => log.open.push((lock, pos)),
                Kind::Release { lock } => {
                    if let Some(i) = log.open.iter().rposition(|&(l, _)| l == lock) {
                        let (_, apos) = log.open.remove(i);
                        let i = log.from(apos);
                        match log.entries.get_mut(i) {
                            Some(Entry {
                                pos,
                                kind: Kind::Acquire { rel, .. },
                                ..
                            }) if *pos == apos => *rel = log.len - 1,
                            // The acquire is in the base, which ends holding the lock.
                            _ => {
                                if let Some(Some(o)) = self.base_open.get_mut(lock as usize)
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
            let log = &mut self.threads[t as usize];
            log.entries.push_back(Entry { pos, id, kind });
        }
        if let Some(limit) = self.limit {
            self.ring.push_back(t | if request { REQUEST } else { 0 });
            while self.ring.len() as u64 > limit {
                self.advance();
            }
        }
    }

    /// Move the oldest event of the window into the base.
    fn advance(&mut self) {
        let Some(x) = self.ring.pop_front() else {
            return;
        };
        self.base += 1;
        if x & REQUEST != 0 {
            // A blocked request never runs: its thread stays before it.
            return;
        }
        let log = &mut self.threads[x as usize];
        let pos = log.base;
        log.base += 1;
        if log.entries.front().is_some_and(|e| e.pos == pos) {
            let e = log.entries.pop_front().expect("front exists");
            match e.kind {
                Kind::Acquire { lock, rel, loc } => {
                    let i = lock as usize;
                    if self.base_open.len() <= i {
                        self.base_open.resize(i + 1, None);
                    }
                    self.base_open[i] = Some(Open {
                        thread: x,
                        id: e.id,
                        pos,
                        loc,
                        rel,
                    });
                }
                Kind::Release { lock } => {
                    if let Some(o) = self.base_open.get_mut(lock as usize) {
                        *o = None;
                    }
                }
                _ => {}
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
