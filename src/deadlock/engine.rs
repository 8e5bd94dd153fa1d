//! The streaming deadlock engine: one pass over the events feeds the lock
//! graph ([`super::graph`]), the window ([`super::window`]) and, as edges
//! appear, the deadlock patterns ([`super::patterns`]), each decided by
//! sync-preserving prediction ([`super::spd`]) while the trace streams.
//! At the end: the deadlocks that happened (blocked requests in a cycle),
//! the predicted ones, and the lock-order inversions left.

use rustc_hash::{FxHashMap, FxHashSet};

use super::graph::{ClassId, Graph, Held, LabelId};
use super::patterns::{self, Limits};
use super::spd::{LinkState, Pending, Stuck, Verdict};
use super::window::{Kind, NONE, Window};
use crate::report::{Deadlock, DeadlockKind, DeadlockLink, Holder, Site};
use crate::trace::{Event, EventId, Op};

/// What the engine is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Predicted deadlocks reorder at most the last this many events (None:
    /// the whole trace).
    pub window: Option<u64>,
    /// List every cycle of the lock graph, with why the filters drop it.
    pub all: bool,
    /// Bounds on the cycle enumeration.
    pub limits: Limits,
    /// Follow critical sections through joins (edges from the locks a thread
    /// holds while joining to the joined thread's requests). Without it,
    /// lock sets are per thread, as in SPDOffline.
    pub through_joins: bool,
}

/// Default window: a million events.
pub const DEFAULT_WINDOW: u64 = 1_000_000;

impl Default for Options {
    fn default() -> Self {
        Options {
            window: Some(DEFAULT_WINDOW),
            all: false,
            limits: Limits::default(),
            through_joins: true,
        }
    }
}

/// A predicted deadlock as found: its report and its closure's cut.
#[derive(Clone, Debug)]
pub struct Found {
    /// The report (witness not filled).
    pub deadlock: Deadlock,
    /// Per thread, the witness's events of that thread (its first ones).
    pub cut: Vec<u32>,
}

/// What the engine found, in the order it is reported.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Actual, then predicted, then inversions.
    pub deadlocks: Vec<Deadlock>,
    /// For each predicted deadlock (same order), its witness cut.
    pub cuts: Vec<Vec<u32>>,
    /// Counters for the report.
    pub stats: Vec<(&'static str, u64)>,
    /// Whether a limit cut the enumeration short.
    pub truncated: bool,
    /// Whether deciding patterns stopped at the closure budget.
    pub out_of_steps: bool,
}

/// The engine's state.
pub struct Engine {
    opts: Options,
    graph: Graph,
    window: Window,
    /// The blocked request of each abstract acquire that has one (its
    /// acquires are in the window's log).
    requests: FxHashMap<ClassId, Stuck>,
    /// Every pattern found, in order.
    patterns: Vec<Vec<LabelId>>,
    /// Patterns being decided, by slot.
    pending: Vec<Option<(usize, Pending)>>,
    /// Per abstract acquire, the slots waiting for its next request.
    waiting: Vec<Vec<usize>>,
    /// Lock cycles with a predicted deadlock.
    resolved: FxHashMap<Vec<u32>, Found>,
    /// Order in which `resolved` filled.
    resolved_order: Vec<Vec<u32>>,
    truncated: bool,
    /// Search steps spent finding patterns.
    searched: usize,
    /// Whether deciding stopped for the closure budget.
    out_of_steps: bool,
    decided: u64,
    /// Closure steps spent deciding patterns.
    steps: u64,
    events: u64,
}

impl Engine {
    /// An engine for `opts`.
    pub fn new(opts: Options) -> Engine {
        Engine {
            opts,
            graph: Graph::default(),
            window: Window::new(opts.window),
            requests: FxHashMap::default(),
            patterns: Vec::new(),
            pending: Vec::new(),
            waiting: Vec::new(),
            resolved: FxHashMap::default(),
            resolved_order: Vec::new(),
            truncated: false,
            searched: 0,
            out_of_steps: false,
            decided: 0,
            steps: 0,
            events: 0,
        }
    }

    /// Feed event `id`.
    pub fn event(&mut self, id: EventId, ev: &Event) {
        let t = ev.thread;
        let site = Site {
            id,
            thread: t,
            loc: ev.loc,
        };
        let pos = self.window.log(t).len;
        match ev.op {
            Op::Acquire => {
                let l = ev.target;
                let (class, new) = self.graph.request(t, l, site);
                self.window.push(
                    id,
                    t,
                    Some(Kind::Acquire {
                        lock: l,
                        rel: NONE,
                        loc: ev.loc,
                        class,
                    }),
                    false,
                    true,
                );
                self.graph.acquired(t, l, site, class);
                self.new_labels(new);
                self.wake(class);
            }
            Op::Request => {
                let l = ev.target;
                let (class, new) = self.graph.request(t, l, site);
                self.window.push(id, t, None, true, true);
                self.graph.thread(t).blocked = Some((l, site));
                let s = Stuck {
                    id,
                    thread: t,
                    pos,
                    loc: ev.loc,
                };
                self.requests.insert(class, s);
                self.new_labels(new);
                self.wake(class);
            }
            Op::Release => {
                self.window
                    .push(id, t, Some(Kind::Release { lock: ev.target }), false, true);
                self.graph.released(t, ev.target);
            }
            Op::Fork => {
                self.window.log(ev.target).fork = Some((t, pos));
                self.window.push(id, t, None, false, false);
                self.graph.forked(t, ev.target);
            }
            Op::Join => {
                let child = ev.target;
                let len = self.window.log(child).len;
                self.window
                    .push(id, t, Some(Kind::Join { child, len }), false, false);
                let new = self.graph.joined(t, child, site, self.opts.through_joins);
                self.new_labels(new);
            }
            Op::Read | Op::VolatileRead | Op::AtomicRead => {
                let k = self.window.read_of(t, ev.target);
                self.window.push(id, t, k, false, false);
            }
            Op::Write | Op::VolatileWrite | Op::AtomicWrite => {
                self.window.push(id, t, None, false, false);
                self.window.wrote(t, ev.target);
            }
            Op::ReentrantAcquire | Op::ReentrantRelease => {
                self.window.push(id, t, None, false, false)
            }
        }
        self.graph.thread(t).len += 1;
        self.events += 1;
    }

    /// Patterns through the new edges: decide each whose cycle of locks has
    /// no predicted deadlock yet.
    fn new_labels(&mut self, new: Vec<LabelId>) {
        for l in new {
            let before = self.patterns.len();
            let left = self.opts.limits.total_budget.saturating_sub(self.searched);
            let (steps, complete) =
                patterns::through(&self.graph, l, &self.opts.limits, left, &mut self.patterns);
            self.searched += steps;
            self.truncated |= !complete;
            for p in before..self.patterns.len() {
                let key = patterns::lock_cycle_key(&self.graph, &self.patterns[p]);
                if self.resolved.contains_key(&key) {
                    continue;
                }
                let links = self.patterns[p]
                    .iter()
                    .map(|&lab| {
                        let label = &self.graph.labels[lab as usize];
                        LinkState {
                            class: label.class,
                            current: None,
                            tried: None,
                            joins: label
                                .chain
                                .iter()
                                .map(|&j| {
                                    let j = &self.graph.joins[j as usize];
                                    Stuck {
                                        id: j.site.id,
                                        thread: j.site.thread,
                                        pos: j.pos,
                                        loc: j.site.loc,
                                    }
                                })
                                .collect(),
                        }
                    })
                    .collect();
                let slot = self.pending.len();
                self.pending.push(Some((p, Pending::new(links))));
                self.decide(slot);
            }
        }
    }

    /// Decide the patterns waiting for a request of `class`.
    fn wake(&mut self, class: ClassId) {
        let Some(w) = self
            .waiting
            .get_mut(class as usize)
            .filter(|w| !w.is_empty())
        else {
            return;
        };
        for s in std::mem::take(w) {
            self.decide(s);
        }
    }

    fn decide(&mut self, slot: usize) {
        let Some((p, mut pend)) = self.pending[slot].take() else {
            return;
        };
        let key = patterns::lock_cycle_key(&self.graph, &self.patterns[p]);
        if self.resolved.contains_key(&key) {
            return;
        }
        if self.steps > self.opts.limits.closure_budget {
            // Out of budget: the pattern stays undecided (an inversion).
            self.out_of_steps = true;
            return;
        }
        self.decided += 1;
        let before = pend.closure.steps;
        let (g, w, requests) = (&self.graph, &self.window, &self.requests);
        // The class's next acquire in the window, then its blocked request.
        let next = |class: u32, after: Option<EventId>| -> Option<Stuck> {
            let t = g.classes[class as usize].thread;
            match w.threads.get(t as usize)?.next_of(class, after) {
                Some(e) => Some(Stuck {
                    id: e.id,
                    thread: t,
                    pos: e.pos,
                    loc: match e.kind {
                        Kind::Acquire { loc, .. } => loc,
                        _ => 0,
                    },
                }),
                None => requests
                    .get(&class)
                    .filter(|s| after.is_none_or(|a| s.id > a))
                    .copied(),
            }
        };
        let verdict = pend.decide(&self.window, next);
        self.steps += pend.closure.steps - before;
        match verdict {
            Verdict::Waiting(i) => {
                let class = pend.links[i].class as usize;
                self.pending[slot] = Some((p, pend));
                if self.waiting.len() <= class {
                    self.waiting.resize_with(class + 1, Vec::new);
                }
                self.waiting[class].push(slot);
            }
            Verdict::Never => {}
            Verdict::Deadlock(reqs, cut) => {
                let deadlock = self.predicted(&self.patterns[p], &reqs);
                self.resolved_order.push(key.clone());
                self.resolved.insert(key, Found { deadlock, cut });
            }
        }
    }

    /// The acquire of `lock` that thread `t` holds at position `pos`: the
    /// latest before it in the window, or the base's.
    fn held_acquire(&self, t: u32, lock: u32, pos: u32) -> Option<Site> {
        let log = self.window.threads.get(t as usize)?;
        let upto = log.from(pos);
        let found = log.entries.range(..upto).rev().find_map(|e| match e.kind {
            Kind::Acquire { lock: l, loc, .. } if l == lock => Some(Site {
                id: e.id,
                thread: t,
                loc,
            }),
            _ => None,
        });
        found.or_else(|| {
            self.window
                .open_at_base(lock)
                .filter(|o| o.thread == t)
                .map(|o| Site {
                    id: o.id,
                    thread: t,
                    loc: o.loc,
                })
        })
    }

    /// The report of a predicted deadlock: pattern `p` with requests `reqs`.
    fn predicted(&self, p: &[LabelId], reqs: &[Stuck]) -> Deadlock {
        let links = p
            .iter()
            .zip(reqs)
            .map(|(&lab, r)| {
                let request = Site {
                    id: r.id,
                    thread: r.thread,
                    loc: r.loc,
                };
                let own = self.graph.labels[lab as usize].chain.is_empty();
                let acquire = if own {
                    self.held_acquire(r.thread, self.graph.labels[lab as usize].from, r.pos)
                } else {
                    None
                };
                self.link(lab, request, acquire)
            })
            .collect();
        Deadlock {
            kind: DeadlockKind::Predicted,
            links,
            witness: None,
            filtered: None,
            stacks: Default::default(),
        }
    }

    /// The link of edge `lab` for `request`; `acquire` is where a requesting
    /// thread that holds the edge's lock itself took it (None: the class's
    /// first instance's).
    fn link(&self, lab: LabelId, request: Site, acquire: Option<Site>) -> DeadlockLink {
        let g = &self.graph;
        let label = &g.labels[lab as usize];
        let class = &g.classes[label.class as usize];
        let held_site = |held: &[Held]| {
            held.iter()
                .rev()
                .find(|h| h.lock == label.from)
                .map(|h| h.site)
                .unwrap_or(request)
        };
        let holder = match label.chain.first() {
            None => Holder {
                thread: class.thread,
                lock: label.from,
                acquire: acquire.unwrap_or_else(|| held_site(&class.first_held)),
                joins: Vec::new(),
            },
            Some(&j0) => {
                let j = &g.joins[j0 as usize];
                Holder {
                    thread: j.site.thread,
                    lock: label.from,
                    acquire: held_site(&j.held),
                    joins: label
                        .chain
                        .iter()
                        .map(|&j| g.joins[j as usize].site)
                        .collect(),
                }
            }
        };
        DeadlockLink {
            thread: class.thread,
            lock: label.to,
            request,
            holder,
        }
    }

    /// The inversion report of pattern `p` (first instances' sites).
    fn inversion(&self, p: &[LabelId], filtered: Option<String>) -> Deadlock {
        let links = p
            .iter()
            .map(|&lab| {
                let class = &self.graph.classes[self.graph.labels[lab as usize].class as usize];
                self.link(lab, class.first, None)
            })
            .collect();
        Deadlock {
            kind: DeadlockKind::Inversion,
            links,
            witness: None,
            filtered,
            stacks: Default::default(),
        }
    }

    /// The deadlocks that happened: blocked requests waiting in a cycle.
    fn actual(&self) -> Vec<Deadlock> {
        let g = &self.graph;
        let waits = |t: u32| -> Option<u32> {
            let (l, _) = g.threads.get(t as usize)?.blocked?;
            g.holder.get(l as usize).copied().flatten()
        };
        let mut seen = vec![0u8; g.threads.len()];
        let mut out = Vec::new();
        for start in 0..g.threads.len() as u32 {
            // Walk from `start`; 1 = on this walk, 2 = done.
            let mut path = Vec::new();
            let mut cur = Some(start);
            while let Some(t) = cur {
                match seen[t as usize] {
                    0 => {
                        seen[t as usize] = 1;
                        path.push(t);
                        cur = waits(t);
                    }
                    1 => {
                        let i = path.iter().position(|&x| x == t).expect("on the path");
                        out.push(self.actual_cycle(&path[i..]));
                        cur = None;
                    }
                    _ => cur = None,
                }
            }
            for t in path {
                seen[t as usize] = 2;
            }
        }
        out
    }

    /// The report of threads `cycle`, each waiting for the next.
    fn actual_cycle(&self, cycle: &[u32]) -> Deadlock {
        let g = &self.graph;
        let n = cycle.len();
        let links = (0..n)
            .map(|i| {
                let t = cycle[i];
                let prev = cycle[(i + n - 1) % n];
                let (lock, request) = g.threads[t as usize].blocked.expect("blocked");
                let (held, _) = g.threads[prev as usize].blocked.expect("blocked");
                let acquire = g.threads[t as usize]
                    .held
                    .iter()
                    .rev()
                    .find(|h| h.lock == held)
                    .map_or(request, |h| h.site);
                DeadlockLink {
                    thread: t,
                    lock,
                    request,
                    holder: Holder {
                        thread: t,
                        lock: held,
                        acquire,
                        joins: Vec::new(),
                    },
                }
            })
            .collect();
        Deadlock {
            kind: DeadlockKind::Actual,
            links,
            witness: None,
            filtered: None,
            stacks: Default::default(),
        }
    }

    /// Finish: every report, in order (actual, predicted, inversions), each
    /// cycle of locks once.
    pub fn finish(self, names: &crate::trace::Names) -> Findings {
        let mut f = Findings {
            truncated: self.truncated,
            out_of_steps: self.out_of_steps,
            ..Findings::default()
        };
        let mut listed: FxHashSet<Vec<u32>> = FxHashSet::default();
        for d in self.actual() {
            listed.insert(patterns::rotate_min(d.lock_cycle()));
            f.deadlocks.push(d);
        }
        for key in &self.resolved_order {
            if listed.insert(key.clone()) {
                let found = &self.resolved[key];
                f.deadlocks.push(found.deadlock.clone());
                f.cuts.push(found.cut.clone());
            }
        }
        let g = &self.graph;
        let lock_name = |l: u32| format!("`{}`", crate::report::printable(names.lock(l)));
        if self.opts.all {
            let (cycles, complete) = patterns::lock_cycles(g, &self.opts.limits);
            f.truncated |= !complete;
            for c in cycles {
                if !listed.insert(patterns::rotate_min(c.clone())) {
                    continue;
                }
                match patterns::realize(g, &c, &self.opts.limits) {
                    Ok(p) => f.deadlocks.push(self.inversion(&p, None)),
                    Err(why) => {
                        // Any edges will do to show the cycle.
                        let p: Vec<LabelId> = (0..c.len())
                            .filter_map(|i| {
                                let (a, b) = (c[i], c[(i + 1) % c.len()]);
                                g.out
                                    .get(a as usize)?
                                    .iter()
                                    .copied()
                                    .find(|&e| g.labels[e as usize].to == b)
                            })
                            .collect();
                        f.deadlocks
                            .push(self.inversion(&p, Some(why.describe(lock_name))));
                    }
                }
            }
        } else {
            let mut ordered: FxHashSet<Vec<u32>> = FxHashSet::default();
            for p in &self.patterns {
                let key = patterns::lock_cycle_key(g, p);
                if listed.contains(&key) {
                    continue;
                }
                if patterns::fork_join_ordered(g, p) {
                    ordered.insert(key);
                    continue;
                }
                listed.insert(key);
                f.deadlocks.push(self.inversion(p, None));
            }
            let n = ordered.iter().filter(|k| !listed.contains(*k)).count();
            f.stats.push(("inversions_ordered_by_fork_join", n as u64));
        }
        let filtered = std::mem::take(&mut f.stats);
        for d in &mut f.deadlocks {
            d.start_at_earliest();
        }
        let labels = g.labels.len() as u64;
        let join_labels = g.labels.iter().filter(|l| !l.chain.is_empty()).count() as u64;
        f.stats.extend([
            ("threads", g.threads.len() as u64),
            ("abstract_acquires", g.classes.len() as u64),
            ("lock_graph_edges", labels - join_labels),
            ("edges_through_joins", join_labels),
            ("patterns", self.patterns.len() as u64),
            ("patterns_decided", self.decided),
            ("closure_steps", self.steps),
        ]);
        f.stats.extend(filtered);
        f
    }
}
