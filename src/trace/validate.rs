//! Streaming validation of lock, fork and join semantics, and interning.
//!
//! Every loader hands raw `(thread, op, target, loc)` text to a [`Builder`], which
//! interns names, checks the trace is well formed as the papers assume, filters
//! re-entrant acquires and passes each event on. One place, so all formats agree.

use super::error::LoadError;
use super::intern::{Interner, Key};
use super::line_cache::{LineCache, LineIds};
use super::model::{Event, EventId, LoadStats, Names, Op, TargetKind};

/// A check every event must pass besides well-formedness (e.g. an output
/// format's limits); its error is reported like a malformed line.
pub(crate) type Check<'a> = &'a dyn Fn(&Event, &Names) -> Result<(), String>;

#[derive(Clone, Default)]
struct ThreadState {
    started: bool,
    forked: bool,
    joined: bool,
    /// The lock of the thread's blocked request (`req`), which must be its
    /// last event.
    blocked: Option<u32>,
    /// Locks held, innermost last.
    held: Vec<u32>,
}

#[derive(Clone, Default)]
struct LockState {
    holder: Option<u32>,
    depth: u32,
}

/// Interns names, validates and numbers events, handing each to a sink.
pub(crate) struct Builder<'a, S: FnMut(EventId, &Event)> {
    file: &'a str,
    /// The name tables built so far.
    pub names: Names,
    /// Counters for `stats`.
    pub stats: LoadStats,
    threads: Vec<ThreadState>,
    locks: Vec<LockState>,
    next_id: u64,
    namer: Namer,
    check: Option<Check<'a>>,
    sink: S,
}

/// A name (UTF-8 bytes) and its interning key ([`Key::new`] of its bytes, or
/// an equal key built another way; None when the name is too long for one).
/// Bytes, not `&str`, so that the hot path never re-checks char boundaries:
/// only a name seen for the first time is converted.
#[derive(Clone, Copy)]
pub(crate) struct Named<'s> {
    /// The name.
    name: &'s [u8],
    /// Its key.
    key: Option<Key>,
}

impl<'s> Named<'s> {
    /// Pair `name` with `key`.
    #[inline]
    pub(crate) fn new(name: &'s [u8], key: Option<Key>) -> Named<'s> {
        Named { name, key }
    }
}

/// Where the fields of one plain line lie in its block, as a loader's fast
/// path found them (byte ranges; the op already parsed).
pub(crate) struct PlainLine {
    /// Where the line starts.
    pub start: usize,
    /// Thread name.
    pub thread: (usize, usize),
    /// The operation.
    pub op: Op,
    /// Target name.
    pub target: (usize, usize),
    /// Location (empty range: none).
    pub loc: (usize, usize),
    /// End of the line's text (before `\n`), and where the next line starts.
    pub end: usize,
    /// Start of the next line.
    pub next: usize,
}

/// `s` with its interning key.
#[inline]
pub(crate) fn named(s: &str) -> Named<'_> {
    Named::new(s.as_bytes(), Key::new(s.as_bytes()))
}

fn is_name_ok(s: &str) -> bool {
    !s.is_empty()
}

fn kind_name(op: Op) -> &'static str {
    match op.target_kind() {
        TargetKind::Variable => "variable",
        TargetKind::Lock => "lock",
        TargetKind::Thread => "thread",
    }
}

/// The op of a general-path line, once its thread and target are known to
/// be non-empty; else what is wrong (the caller adds file, line and text).
pub(crate) fn check_fields(thread: &str, op: &str, target: &str) -> Result<Op, String> {
    let Some(op) = Op::parse(op) else {
        return Err(if op.is_empty() {
            "empty op; expected one of r, w, acq, rel, fork, join, vr, vw, ar, aw, req".to_string()
        } else {
            format!(
                "unknown op `{op}`; expected one of r, w, acq, rel, fork, join, vr, vw, ar, aw, req"
            )
        });
    };
    if !is_name_ok(thread) {
        return Err("empty thread name; expected a thread id".into());
    }
    if !is_name_ok(target) {
        return Err(format!(
            "empty target for `{}`; expected a {} name",
            op.as_str(),
            kind_name(op)
        ));
    }
    Ok(op)
}

/// Turns an event's names into dense ids, in order of first appearance: the
/// thread, then the location, then the target (the order every loader and
/// the parallel reader's merge rely on).
#[derive(Clone)]
pub(crate) struct Namer {
    /// The key and id of the last thread seen (short names only; at first
    /// [`Key::NONE`]). Two plain fields rather than an `Option` of a pair:
    /// rebuilding that on every thread switch stalled on store forwarding.
    last_thread_key: Key,
    last_thread: u32,
    /// Lines met before and the ids they gave (STD and CSV text).
    pub(crate) lines: LineCache,
}

impl Default for Namer {
    fn default() -> Self {
        Namer {
            last_thread_key: Key::NONE,
            last_thread: 0,
            lines: LineCache::default(),
        }
    }
}

impl Namer {
    /// Forget every name (the tables start afresh), keeping the line
    /// cache's allocation.
    pub(crate) fn clear(&mut self) {
        self.last_thread_key = Key::NONE;
        self.last_thread = 0;
        self.lines.clear();
    }

    /// The ids of an event's thread, target and location in `n`; an error
    /// when a name seen for the first time holds a control character.
    #[inline(always)]
    pub(crate) fn ids(
        &mut self,
        n: &mut Names,
        thread: Named<'_>,
        op: Op,
        target: Named<'_>,
        loc: Named<'_>,
    ) -> Result<(u32, u32, u32), String> {
        // Consecutive events of one thread are common: skip even the cache.
        let t = match thread.key {
            Some(k) if k == self.last_thread_key => self.last_thread,
            key => {
                let id = intern_checked(&mut n.threads, key, thread.name, "thread name")?;
                if let Some(k) = key {
                    self.last_thread_key = k;
                    self.last_thread = id;
                }
                id
            }
        };
        let loc = if loc.name.is_empty() {
            0
        } else {
            intern_checked(&mut n.locs, loc.key, loc.name, "location")?
        };
        let target = match op.target_kind() {
            TargetKind::Variable => {
                intern_checked(&mut n.vars, target.key, target.name, "variable name")?
            }
            TargetKind::Lock => intern_checked(&mut n.locks, target.key, target.name, "lock name")?,
            TargetKind::Thread => {
                intern_checked(&mut n.threads, target.key, target.name, "thread name")?
            }
        };
        Ok((t, target, loc))
    }
}

/// `name`'s id in `table`. A name is checked once, when first seen (ids are
/// dense, so a new one is the table's former length): a control character
/// (a stray carriage return, a tab, an escape) would be written back into
/// reports and converted traces, where it breaks lines or terminals.
#[inline(always)]
fn intern_checked(
    table: &mut Interner,
    key: Option<Key>,
    name: &[u8],
    what: &str,
) -> Result<u32, String> {
    let len = table.len();
    let id = table.intern_keyed(key, name);
    // Printable ASCII, the usual name, needs no look at its characters.
    if id as usize >= len && !name.iter().all(|b| (b' '..=b'~').contains(b)) {
        control_problem(name, what)?;
    }
    Ok(id)
}

/// The error for a name holding a control character, naming the character.
#[cold]
fn control_problem(name: &[u8], what: &str) -> Result<(), String> {
    let text = String::from_utf8_lossy(name);
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(format!(
            "{what} `{}` contains the control character {}; expected printable text",
            text.escape_debug(),
            match c {
                '\r' => "\\r (carriage return)".to_string(),
                '\t' => "\\t (tab)".to_string(),
                c => format!("U+{:04X}", c as u32),
            }
        )),
    }
}

/// An event as the fields of a general-path line.
#[derive(Clone, Copy)]
pub(crate) struct TextEvent<'s> {
    pub thread: &'s str,
    pub op: &'s str,
    pub target: &'s str,
    pub loc: &'s str,
}

/// What a text format's line scanner hands its events to: the validating
/// [`Builder`], or a worker of the parallel reader that only names them.
pub(crate) trait Push {
    /// An event given as text, from the line starting at byte `start` of the
    /// block; Err says what is wrong with it.
    fn push_at(&mut self, start: usize, e: TextEvent<'_>) -> Result<(), String>;
    /// The plain line `f` of `block`, numbered `line`; what it gave, for
    /// the line cache.
    fn push_line(&mut self, block: &[u8], line: u64, f: &PlainLine) -> Result<LineIds, LoadError>;
    /// The line at `at` (its start and length) of `block`, numbered `line`, which
    /// gave `ids` before (from [`Push::lines`]).
    fn push_known(
        &mut self,
        block: &[u8],
        line: u64,
        at: (usize, usize),
        ids: LineIds,
    ) -> Result<(), LoadError>;
    /// The cache of lines whose ids are in this target's tables.
    fn lines(&mut self) -> &mut LineCache;
}

impl<S: FnMut(EventId, &Event)> Push for Builder<'_, S> {
    #[inline]
    fn push_at(&mut self, _start: usize, e: TextEvent<'_>) -> Result<(), String> {
        self.push(e.thread, e.op, e.target, e.loc)
    }

    #[inline(always)]
    fn push_line(&mut self, block: &[u8], line: u64, f: &PlainLine) -> Result<LineIds, LoadError> {
        self.push_plain(block, f.start, line, f)
    }

    #[inline(always)]
    fn push_known(
        &mut self,
        block: &[u8],
        line: u64,
        (start, len): (usize, usize),
        ids: LineIds,
    ) -> Result<(), LoadError> {
        self.push_ids(ids.thread, ids.op, ids.target, ids.loc)
            .map_err(|p| self.error(line, &block[start..start + len], p))
    }

    #[inline(always)]
    fn lines(&mut self) -> &mut LineCache {
        &mut self.namer.lines
    }
}

impl<'a, S: FnMut(EventId, &Event)> Builder<'a, S> {
    /// A builder reporting errors against `file`.
    pub(crate) fn new(file: &'a str, sink: S) -> Self {
        Builder {
            file,
            names: Names::default(),
            stats: LoadStats::default(),
            threads: Vec::new(),
            locks: Vec::new(),
            next_id: 0,
            namer: Namer::default(),
            check: None,
            sink,
        }
    }

    /// Run `check` on every event before it is accepted.
    pub(crate) fn with_check(mut self, check: Option<Check<'a>>) -> Self {
        self.check = check;
        self
    }

    /// The error for `line` of this file.
    pub(crate) fn error(&self, line: u64, text: &[u8], problem: impl Into<String>) -> LoadError {
        LoadError::new(self.file, line, text, problem)
    }

    /// The file name errors report.
    pub(crate) fn file(&self) -> &'a str {
        self.file
    }

    /// Number of events accepted so far.
    pub(crate) fn count(&self) -> u64 {
        self.next_id
    }

    /// Add one event given as text, or say what is wrong with it (the caller
    /// adds the file, line and text: see [`Builder::error`]).
    pub(crate) fn push(
        &mut self,
        thread: &str,
        op: &str,
        target: &str,
        loc: &str,
    ) -> Result<(), String> {
        let op = check_fields(thread, op, target)?;
        self.push_keyed(named(thread), op, named(target), named(loc))
            .map(|_| ())
    }

    /// Add the plain line found at `start` of `block` (valid UTF-8, fields at
    /// ASCII boundaries), numbered `line`: names are keyed straight from the
    /// block. Errors name the file, line and line text.
    #[inline(always)]
    pub(crate) fn push_plain(
        &mut self,
        block: &[u8],
        start: usize,
        line: u64,
        f: &PlainLine,
    ) -> Result<LineIds, LoadError> {
        let name = |(s, e): (usize, usize)| Named::new(&block[s..e], Key::in_buf(block, s, e - s));
        self.push_keyed(name(f.thread), f.op, name(f.target), name(f.loc))
            .map_err(|p| self.error(line, &block[start..f.end], p))
    }

    /// [`Builder::push`] once the op is parsed, the thread and target names
    /// are checked non-empty and their interning keys built; the ids the
    /// event got.
    #[inline(always)]
    fn push_keyed(
        &mut self,
        thread: Named<'_>,
        op: Op,
        target: Named<'_>,
        loc: Named<'_>,
    ) -> Result<LineIds, String> {
        if self.next_id >= u32::MAX as u64 {
            return Err(format!(
                "trace has more than {} events; expected fewer",
                u32::MAX
            ));
        }
        let (t, target, loc) = self.namer.ids(&mut self.names, thread, op, target, loc)?;
        self.accept(t, op, target, loc)?;
        Ok(LineIds {
            thread: t,
            op,
            target,
            loc,
        })
    }

    /// Add an event whose thread, target and location are already interned
    /// in [`Builder::names`] (loaders of formats that number their names).
    #[inline]
    pub(crate) fn push_ids(&mut self, t: u32, op: Op, target: u32, loc: u32) -> Result<(), String> {
        if self.next_id >= u32::MAX as u64 {
            return Err(format!(
                "trace has more than {} events; expected fewer",
                u32::MAX
            ));
        }
        self.accept(t, op, target, loc)
    }

    /// [`Builder::push_ids`] of an access touching the bytes of `mask` of
    /// its variable (0: all of them).
    #[inline]
    pub fn push_ids_masked(
        &mut self,
        t: u32,
        op: Op,
        target: u32,
        loc: u32,
        mask: u8,
    ) -> Result<(), String> {
        if self.next_id >= u32::MAX as u64 {
            return Err(format!(
                "trace has more than {} events; expected fewer",
                u32::MAX
            ));
        }
        self.accept_masked(t, op, target, loc, mask)
    }

    /// Validate an interned event and hand it to the sink.
    #[inline(always)]
    fn accept(&mut self, t: u32, op: Op, target: u32, loc: u32) -> Result<(), String> {
        self.accept_masked(t, op, target, loc, 0)
    }

    #[inline(always)]
    fn accept_masked(
        &mut self,
        t: u32,
        op: Op,
        target: u32,
        loc: u32,
        mask: u8,
    ) -> Result<(), String> {
        let nthreads = self.names.threads.len();
        if self.threads.len() < nthreads {
            self.threads.resize(nthreads, ThreadState::default());
        }
        let ts = &mut self.threads[t as usize];
        if ts.joined {
            return Err(format!(
                "event of thread `{}` after it was joined; expected no events of a joined thread",
                self.names.thread(t)
            ));
        }
        if let Some(l) = ts.blocked {
            return Err(format!(
                "event of thread `{}` after its blocked request of lock `{}`; expected a `req` only as a thread's last event",
                self.names.thread(t),
                self.names.lock(l)
            ));
        }
        ts.started = true;
        let mut op = op;
        match op {
            Op::Acquire => {
                if self.locks.len() <= target as usize {
                    self.locks.resize(target as usize + 1, LockState::default());
                }
                let ls = &mut self.locks[target as usize];
                match ls.holder {
                    Some(h) if h != t => {
                        return Err(format!(
                            "acquire of lock `{}` held by thread `{}`; expected it to be released first",
                            self.names.lock(target),
                            self.names.thread(h)
                        ));
                    }
                    Some(_) => {
                        ls.depth += 1;
                        op = Op::ReentrantAcquire;
                        self.stats.reentrant_acquires += 1;
                    }
                    None => {
                        ls.holder = Some(t);
                        ls.depth = 1;
                        let held = &mut self.threads[t as usize].held;
                        held.push(target);
                        self.stats.max_nesting = self.stats.max_nesting.max(held.len() as u32);
                    }
                }
            }
            Op::Release => {
                let Some(ls) = self
                    .locks
                    .get_mut(target as usize)
                    .filter(|ls| ls.holder == Some(t))
                else {
                    return Err(format!(
                        "release of lock `{}` that thread `{}` does not hold; expected a matching acquire first",
                        self.names.lock(target),
                        self.names.thread(t)
                    ));
                };
                if ls.depth > 1 {
                    ls.depth -= 1;
                    op = Op::ReentrantRelease;
                } else {
                    ls.holder = None;
                    ls.depth = 0;
                    let held = &mut self.threads[t as usize].held;
                    if let Some(pos) = held.iter().rposition(|&l| l == target) {
                        if pos + 1 != held.len() {
                            self.stats.out_of_nesting_releases += 1;
                        }
                        held.remove(pos);
                    }
                }
            }
            Op::Fork => {
                let u = target as usize;
                if u == t as usize {
                    return Err(format!(
                        "thread `{}` forks itself; expected a new thread",
                        self.names.thread(t)
                    ));
                }
                let us = &self.threads[u];
                let why = if us.started {
                    Some("already has events")
                } else if us.forked {
                    Some("was already forked")
                } else if us.joined {
                    Some("was already joined")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(format!(
                        "fork of thread `{}` that {why}; expected a new thread",
                        self.names.thread(target)
                    ));
                }
                self.threads[u].forked = true;
            }
            Op::Join => {
                let u = target as usize;
                if u == t as usize {
                    return Err(format!(
                        "thread `{}` joins itself; expected another thread",
                        self.names.thread(t)
                    ));
                }
                if self.threads[u].joined {
                    return Err(format!(
                        "thread `{}` joined twice; expected one join per thread",
                        self.names.thread(target)
                    ));
                }
                if let Some(l) = self.threads[u].blocked {
                    return Err(format!(
                        "join of thread `{}`, which ends blocked requesting lock `{}`; a blocked thread never finishes",
                        self.names.thread(target),
                        self.names.lock(l)
                    ));
                }
                self.threads[u].joined = true;
            }
            // A blocked request takes nothing: the thread waits, and its
            // next event would be an error.
            Op::Request => self.threads[t as usize].blocked = Some(target),
            _ => {}
        }
        let ev = || Event {
            thread: t,
            target,
            loc,
            op,
            mask,
        };
        if let Some(check) = self.check {
            check(&ev(), &self.names)?;
        }
        let id = self.next_id as EventId;
        self.next_id += 1;
        // A second value, not the one the check saw: that one lives in
        // memory (its address was taken), and a sink copying it whole read
        // it back before its field stores had landed (a stalled load: 80 %
        // of this function's samples on a recording's analysis).
        (self.sink)(id, &ev());
        Ok(())
    }

    /// Close the trace: count critical sections left open.
    pub(crate) fn finish(mut self) -> (Names, LoadStats) {
        self.stats.unreleased_at_end = self.threads.iter().map(|t| t.held.len() as u64).sum();
        (self.names, self.stats)
    }
}
