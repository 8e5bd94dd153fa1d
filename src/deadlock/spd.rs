//! Sync-preserving deadlock prediction (Tunç, Mathur, Pavlogiannis,
//! Viswanathan, "Sound Dynamic Deadlock Prediction in Linear Time", PLDI
//! 2023): for a deadlock pattern, whether some instance (one request per
//! link, plus the fixed joins of links held through joins) is a
//! sync-preserving deadlock, decided in time linear in the window per
//! pattern.
//!
//! The paper's characterization: an instance D is a sync-preserving deadlock
//! exactly when none of its events is in SPClosure(pred(D)), the smallest set
//! holding every event before D's events in their threads that is closed
//! under thread order, reads-from, fork/join and the lock rule (of two
//! acquires of a lock in the set, the trace-earlier one's release is in it);
//! that set, in trace order, is then a correct reordering prefix after which
//! every thread of the cycle is blocked (its witness). Here every closure
//! also holds the window's base ([`super::window`]).
//!
//! SPDOffline's search: instances of one link follow one another in thread
//! order and closures only grow with their events, so when an instance's
//! closure holds one of its requests, no instance keeping that request and
//! the others' current ones or later is a deadlock: that request is dropped
//! for its link's next one. One closure per pattern is extended until it
//! holds none of the current requests (a deadlock) or a link runs out (wait
//! for its next request, as the trace streams).

use rustc_hash::FxHashMap;

use super::window::{Kind, NONE, Window};
use crate::trace::{EventId, ThreadId};

/// A candidate stuck event: id, thread, position in the thread, location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// Event id.
    pub id: EventId,
    /// Thread.
    pub thread: ThreadId,
    /// Position in the thread.
    pub pos: u32,
    /// Location id.
    pub loc: u32,
}

/// The trace-latest acquire of a lock in a closure.
#[derive(Clone, Copy, Debug)]
struct Latest {
    id: EventId,
    thread: ThreadId,
    pos: u32,
}

/// A sync-preserving closed set of events that contains the window's base:
/// one prefix length per thread.
#[derive(Clone, Debug, Default)]
pub struct Closure {
    /// Per thread, how many of its first events are in the set.
    pub cut: Vec<u32>,
    latest: FxHashMap<u32, Latest>,
    stack: Vec<(ThreadId, u32)>,
    /// Logged events looked at (the work done).
    pub steps: u64,
}

/// Two acquires of a lock in the set, the earlier never released: cannot
/// happen on a well-formed trace (the later acquire follows the release).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unclosable;

impl Closure {
    fn cut(&self, t: ThreadId) -> u32 {
        self.cut.get(t as usize).copied().unwrap_or(0)
    }

    /// Whether the event at position `pos` of `t` is in the set.
    pub fn contains(&self, t: ThreadId, pos: u32) -> bool {
        pos < self.cut(t)
    }

    /// Add the base: every thread's events before the window.
    pub fn raise(&mut self, w: &Window) {
        if self.cut.len() < w.threads.len() {
            self.cut.resize(w.threads.len(), 0);
        }
        for (c, l) in self.cut.iter_mut().zip(&w.threads) {
            *c = (*c).max(l.base);
        }
    }

    /// Add what must precede the event at position `pos` of `t`: its thread
    /// predecessors (and the fork of its thread when it is the first).
    pub fn extend_pred(&mut self, w: &Window, t: ThreadId, pos: u32) -> Result<(), Unclosable> {
        if pos == 0
            && let Some((f, fpos)) = w.threads.get(t as usize).and_then(|l| l.fork)
        {
            self.stack.push((f, fpos + 1));
        }
        self.stack.push((t, pos));
        self.close(w)
    }

    /// The release position of the acquire at `pos` of `t` (NONE when held).
    fn release_of(w: &Window, l: u32, a: Latest) -> u32 {
        match w
            .threads
            .get(a.thread as usize)
            .and_then(|log| log.at(a.pos))
        {
            Some(&super::window::Entry {
                kind: Kind::Acquire { rel, .. },
                ..
            }) => rel,
            _ => w
                .open_at_base(l)
                .filter(|o| o.id == a.id)
                .map_or(NONE, |o| o.rel),
        }
    }

    fn close(&mut self, w: &Window) -> Result<(), Unclosable> {
        while let Some((t, n)) = self.stack.pop() {
            let ti = t as usize;
            if self.cut.len() <= ti {
                self.cut.resize(ti + 1, 0);
            }
            let start = self.cut[ti];
            if start >= n {
                continue;
            }
            self.cut[ti] = n;
            let Some(log) = w.threads.get(ti) else {
                continue;
            };
            if start == 0
                && let Some((f, fpos)) = log.fork
            {
                self.stack.push((f, fpos + 1));
            }
            let from = log.from(start);
            for e in log.entries.range(from..) {
                if e.pos >= n {
                    break;
                }
                self.steps += 1;
                match e.kind {
                    Kind::Read { thread, pos } => self.need(thread, pos + 1),
                    Kind::Join { child, len } => self.need(child, len),
                    Kind::Acquire { lock, rel, .. } => {
                        let me = Latest {
                            id: e.id,
                            thread: t,
                            pos: e.pos,
                        };
                        // The acquires of `lock` in the set that matter: this
                        // one, the latest before it (unless it is in the base
                        // and released there), the one the base ends holding.
                        let base = w.base;
                        let open = w.open_at_base(lock).map(|o| Latest {
                            id: o.id,
                            thread: o.thread,
                            pos: o.pos,
                        });
                        let prev = self.latest.get(&lock).copied().filter(|p| {
                            u64::from(p.id) >= base || open.is_some_and(|o| o.id == p.id)
                        });
                        let mut all = [Some((me, rel)), None, None];
                        if let Some(p) = prev {
                            all[1] = Some((p, Self::release_of(w, lock, p)));
                        }
                        if let Some(o) = open
                            && prev.is_none_or(|p| p.id != o.id)
                        {
                            all[2] = Some((o, Self::release_of(w, lock, o)));
                        }
                        let newest = all
                            .iter()
                            .flatten()
                            .map(|(a, _)| a.id)
                            .max()
                            .expect("this acquire is there");
                        for &(a, r) in all.iter().flatten() {
                            if a.id == newest {
                                self.latest.insert(lock, a);
                            } else if r == NONE {
                                self.stack.clear();
                                return Err(Unclosable);
                            } else {
                                self.need(a.thread, r + 1);
                            }
                        }
                    }
                    Kind::Release { .. } => {}
                }
            }
        }
        // A big closure step leaves a big stack: give it back.
        if self.stack.capacity() > 4096 {
            self.stack = Vec::new();
        }
        Ok(())
    }

    /// The first `n` events of `t` must be in the set.
    #[inline]
    fn need(&mut self, t: ThreadId, n: u32) {
        if self.cut(t) < n {
            self.stack.push((t, n));
        }
    }
}

/// One link of a pattern being decided: its candidate requests come from
/// one abstract acquire; its joins are fixed.
#[derive(Clone, Debug)]
pub struct LinkState {
    /// The abstract acquire giving the requests.
    pub class: u32,
    /// The current request, if one is chosen.
    pub current: Option<Stuck>,
    /// The last request tried (requests up to it are done with).
    pub tried: Option<EventId>,
    /// The joins its holder and the threads below wait in.
    pub joins: Vec<Stuck>,
}

/// What deciding a pattern came to, for now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A deadlock: the requests (one per link) and the closure's cut (its
    /// witness: every event before the cut of its thread, in trace order).
    Deadlock(Vec<Stuck>, Vec<u32>),
    /// No instance can be one (a fixed join is in every closure).
    Never,
    /// Waiting for the next request of this link's abstract acquire.
    Waiting(usize),
}

/// A pattern being decided.
#[derive(Clone, Debug)]
pub struct Pending {
    /// Its links.
    pub links: Vec<LinkState>,
    /// Its closure, which only grows.
    pub closure: Closure,
}

impl Pending {
    /// A pattern with these links.
    pub fn new(links: Vec<LinkState>) -> Pending {
        Pending {
            links,
            closure: Closure::default(),
        }
    }

    /// Decide as far as the trace so far allows. `next(class, after)` gives
    /// the class's first request after event `after` (None: from the start)
    /// that is not in the base, if there is one yet.
    pub fn decide(
        &mut self,
        w: &Window,
        next: impl Fn(u32, Option<EventId>) -> Option<Stuck>,
    ) -> Verdict {
        loop {
            for (i, l) in self.links.iter_mut().enumerate() {
                if l.current.is_none() {
                    match next(l.class, l.tried) {
                        Some(s) => l.current = Some(s),
                        None => return Verdict::Waiting(i),
                    }
                }
            }
            self.closure.raise(w);
            for l in &self.links {
                let s = l.current.expect("chosen above");
                let mut ok = self.closure.extend_pred(w, s.thread, s.pos).is_ok();
                for j in &l.joins {
                    ok &= self.closure.extend_pred(w, j.thread, j.pos).is_ok();
                }
                if !ok {
                    return Verdict::Never;
                }
            }
            let c = &self.closure;
            if self
                .links
                .iter()
                .flat_map(|l| &l.joins)
                .any(|j| c.contains(j.thread, j.pos))
            {
                return Verdict::Never;
            }
            let mut dropped = false;
            for l in &mut self.links {
                let s = l.current.expect("chosen above");
                if c.contains(s.thread, s.pos) {
                    l.tried = Some(s.id);
                    l.current = None;
                    dropped = true;
                }
            }
            if !dropped {
                let reqs = self
                    .links
                    .iter()
                    .map(|l| l.current.expect("chosen"))
                    .collect();
                return Verdict::Deadlock(reqs, self.closure.cut.clone());
            }
        }
    }
}
