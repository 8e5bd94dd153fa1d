//! Streaming validation of lock, fork and join semantics, and interning.
//!
//! Every loader hands raw `(thread, op, target, loc)` text to a [`Builder`], which
//! interns names, checks the trace is well formed as the papers assume, filters
//! re-entrant acquires and passes each event on. One place, so all formats agree.

use super::error::LoadError;
use super::model::{Event, EventId, LoadStats, Names, Op, intern};

#[derive(Clone, Default)]
struct ThreadState {
    started: bool,
    forked: bool,
    joined: bool,
    /// Locks held, innermost last.
    held: Vec<u32>,
}

#[derive(Clone, Default)]
struct LockState {
    holder: Option<u32>,
    depth: u32,
}

/// Interns names, validates and numbers events, handing each to a sink.
pub struct Builder<'a, S: FnMut(EventId, &Event)> {
    file: &'a str,
    /// The name tables built so far.
    pub names: Names,
    /// Counters for `stats`.
    pub stats: LoadStats,
    threads: Vec<ThreadState>,
    locks: Vec<LockState>,
    next_id: u64,
    sink: S,
}

fn is_name_ok(s: &str) -> bool {
    !s.is_empty()
}

impl<'a, S: FnMut(EventId, &Event)> Builder<'a, S> {
    /// A builder reporting errors against `file`.
    pub fn new(file: &'a str, sink: S) -> Self {
        Builder {
            file,
            names: Names::default(),
            stats: LoadStats::default(),
            threads: Vec::new(),
            locks: Vec::new(),
            next_id: 0,
            sink,
        }
    }

    /// The error for `line` of this file.
    pub fn error(&self, line: u64, text: &[u8], problem: impl Into<String>) -> LoadError {
        LoadError::new(self.file, line, text, problem)
    }

    /// Number of events accepted so far.
    pub fn count(&self) -> u64 {
        self.next_id
    }

    /// Add one event given as text. `text` is the whole input line, for errors.
    pub fn push(
        &mut self,
        line: u64,
        text: &[u8],
        thread: &str,
        op: &str,
        target: &str,
        loc: &str,
    ) -> Result<(), LoadError> {
        let Some(op) = Op::parse(op) else {
            return Err(self.error(
                line,
                text,
                format!("unknown op `{op}`; expected one of r, w, acq, rel, fork, join, vr, vw"),
            ));
        };
        if !is_name_ok(thread) {
            return Err(self.error(line, text, "empty thread name; expected a thread id"));
        }
        if !is_name_ok(target) {
            return Err(self.error(
                line,
                text,
                format!(
                    "empty target for `{}`; expected a variable, lock or thread name",
                    op.as_str()
                ),
            ));
        }
        if self.next_id > u32::MAX as u64 - 1 {
            return Err(self.error(line, text, "trace has more than 4294967294 events"));
        }
        let t = intern(&mut self.names.threads, thread);
        let loc = intern(&mut self.names.locs, loc);
        let target = match op.target_kind() {
            super::model::TargetKind::Variable => intern(&mut self.names.vars, target),
            super::model::TargetKind::Lock => intern(&mut self.names.locks, target),
            super::model::TargetKind::Thread => intern(&mut self.names.threads, target),
        };
        let nthreads = self.names.threads.len();
        if self.threads.len() < nthreads {
            self.threads.resize(nthreads, ThreadState::default());
        }
        if self.threads[t as usize].joined {
            return Err(self.error(
                line,
                text,
                format!("event of thread `{thread}` after it was joined; expected no events of a joined thread"),
            ));
        }
        self.threads[t as usize].started = true;
        let mut op = op;
        match op {
            Op::Acquire => {
                if self.locks.len() <= target as usize {
                    self.locks.resize(target as usize + 1, LockState::default());
                }
                let ls = &mut self.locks[target as usize];
                match ls.holder {
                    Some(h) if h != t => {
                        let holder = self.names.thread(h).to_string();
                        return Err(self.error(
                            line,
                            text,
                            format!("acquire of lock `{}` held by thread `{holder}`; expected it to be released first", self.names.lock(target)),
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
                let held_by_t = self
                    .locks
                    .get(target as usize)
                    .is_some_and(|ls| ls.holder == Some(t));
                if !held_by_t {
                    return Err(self.error(
                        line,
                        text,
                        format!("release of lock `{}` that thread `{thread}` does not hold; expected a matching acquire first", self.names.lock(target)),
                    ));
                }
                let ls = &mut self.locks[target as usize];
                if ls.depth > 1 {
                    ls.depth -= 1;
                    op = Op::ReentrantRelease;
                } else {
                    ls.holder = None;
                    ls.depth = 0;
                    let held = &mut self.threads[t as usize].held;
                    let pos = held.iter().rposition(|&l| l == target).unwrap_or(0);
                    if pos + 1 != held.len() {
                        self.stats.out_of_nesting_releases += 1;
                    }
                    held.remove(pos);
                }
            }
            Op::Fork => {
                let u = target as usize;
                if u == t as usize {
                    return Err(self.error(
                        line,
                        text,
                        format!("thread `{thread}` forks itself; expected a new thread"),
                    ));
                }
                let us = &self.threads[u];
                if us.started || us.forked {
                    return Err(self.error(
                        line,
                        text,
                        format!("fork of thread `{}` that already has events or was forked; expected a new thread", self.names.thread(target)),
                    ));
                }
                self.threads[u].forked = true;
            }
            Op::Join => {
                let u = target as usize;
                if u == t as usize {
                    return Err(self.error(
                        line,
                        text,
                        format!("thread `{thread}` joins itself; expected another thread"),
                    ));
                }
                if self.threads[u].joined {
                    return Err(self.error(
                        line,
                        text,
                        format!(
                            "thread `{}` joined twice; expected one join per thread",
                            self.names.thread(target)
                        ),
                    ));
                }
                self.threads[u].joined = true;
            }
            _ => {}
        }
        let ev = Event {
            thread: t,
            target,
            loc,
            op,
        };
        let id = self.next_id as EventId;
        self.next_id += 1;
        (self.sink)(id, &ev);
        Ok(())
    }

    /// Close the trace: count critical sections left open.
    pub fn finish(mut self) -> (Names, LoadStats) {
        self.stats.unreleased_at_end = self.threads.iter().map(|t| t.held.len() as u64).sum();
        (self.names, self.stats)
    }
}
