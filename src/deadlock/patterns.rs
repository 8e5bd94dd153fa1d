//! Deadlock patterns: cycles of labelled edges of the lock graph whose
//! threads are distinct and whose held lock sets are disjoint (SPDOffline's
//! abstract deadlock patterns, with edges through joins), found as edges
//! appear; and, for `--all`, every cycle of locks with the reason the default
//! filters drop it.

use super::graph::{FjClock, Graph, LabelId, fj_precedes};
use crate::trace::ThreadId;

/// Bounds on the enumeration (the number of cycles can be exponential).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most edges in a cycle.
    pub max_len: usize,
    /// Most patterns kept.
    pub max_patterns: usize,
    /// Most search steps per new edge (and per cycle checked for `--all`).
    pub budget: usize,
    /// Most search steps in all.
    pub total_budget: usize,
    /// Most cycles of locks listed by `--all`.
    pub max_cycles: usize,
    /// Most closure steps deciding patterns, in all.
    pub closure_budget: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_len: 16,
            max_patterns: 10_000,
            budget: 100_000,
            total_budget: 20_000_000,
            max_cycles: 1_000,
            closure_budget: 1_000_000_000,
        }
    }
}

/// Which threads and locks a partial pattern uses.
struct Marks {
    threads: Vec<bool>,
    held: Vec<bool>,
    /// What was marked, to undo: (is a thread, index).
    log: Vec<(bool, u32)>,
    /// The last lock two threads would both hold.
    conflict: Option<u32>,
}

impl Marks {
    fn new(g: &Graph) -> Marks {
        let locks = g.holder.len().max(g.out.len());
        Marks {
            threads: vec![false; g.threads.len()],
            held: vec![false; locks],
            log: Vec::new(),
            conflict: None,
        }
    }

    fn mark_held(&mut self, l: u32) -> bool {
        let i = l as usize;
        if self.held.len() <= i {
            self.held.resize(i + 1, false);
        }
        if self.held[i] {
            self.conflict = Some(l);
            return false;
        }
        self.held[i] = true;
        self.log.push((false, l));
        true
    }

    /// Mark the parts of label `l` (with `sets` checked or not); false, with
    /// nothing marked, when a thread or held lock is taken.
    fn add(&mut self, g: &Graph, l: LabelId, sets: bool) -> bool {
        let start = self.log.len();
        for (t, set) in g.label_parts(l) {
            let ti = t as usize;
            if self.threads.len() <= ti {
                self.threads.resize(ti + 1, false);
            }
            if self.threads[ti] {
                self.undo(start);
                return false;
            }
            self.threads[ti] = true;
            self.log.push((true, t));
            if sets && !g.sets.get(set).iter().all(|&x| self.mark_held(x)) {
                self.undo(start);
                return false;
            }
        }
        true
    }

    fn undo(&mut self, to: usize) {
        while self.log.len() > to {
            let (is_thread, i) = self.log.pop().expect("log is longer than `to`");
            if is_thread {
                self.threads[i as usize] = false;
            } else {
                self.held[i as usize] = false;
            }
        }
    }

    fn holds(&self, l: u32) -> bool {
        self.held.get(l as usize).copied().unwrap_or(false)
    }
}

/// Every pattern whose first edge is the new edge `first` (so that each
/// pattern is found once, when its last edge appears), appended to `out`,
/// in at most `budget` search steps. Returns the steps taken and false when
/// a limit cut the search short.
pub fn through(
    g: &Graph,
    first: LabelId,
    limits: &Limits,
    budget: usize,
    out: &mut Vec<Vec<LabelId>>,
) -> (usize, bool) {
    let start = &g.labels[first as usize];
    let reach = g.reaching(start.from);
    // Only a path back to the edge's lock closes a cycle.
    if !reach.get(start.to as usize).copied().unwrap_or(false) {
        return (0, true);
    }
    let mut m = Marks::new(g);
    if !m.add(g, first, true) {
        return (0, true);
    }
    let mut search = Search {
        g,
        limits,
        target: start.from,
        reach,
        steps: 0,
        budget: budget.min(limits.budget),
        complete: true,
        out,
    };
    let mut path = vec![first];
    if start.to == start.from {
        search.emit(&path);
    } else {
        search.dfs(&mut m, &mut path, start.to);
    }
    (search.steps, search.complete)
}

struct Search<'a> {
    g: &'a Graph,
    limits: &'a Limits,
    target: u32,
    /// Locks that reach `target`.
    reach: Vec<bool>,
    steps: usize,
    budget: usize,
    complete: bool,
    out: &'a mut Vec<Vec<LabelId>>,
}

impl Search<'_> {
    fn emit(&mut self, path: &[LabelId]) {
        if self.out.len() >= self.limits.max_patterns {
            self.complete = false;
            return;
        }
        self.out.push(path.to_vec());
    }

    fn dfs(&mut self, m: &mut Marks, path: &mut Vec<LabelId>, cur: u32) {
        let Some(edges) = self.g.out.get(cur as usize) else {
            return;
        };
        for &e in edges {
            self.steps += 1;
            if self.steps > self.budget || self.out.len() >= self.limits.max_patterns {
                self.complete = false;
                return;
            }
            let next = self.g.labels[e as usize].to;
            let closes = next == self.target;
            // A lock already held in the pattern closes a different cycle.
            if !closes
                && (m.holds(next)
                    || path.len() + 1 >= self.limits.max_len
                    || !self.reach.get(next as usize).copied().unwrap_or(false))
            {
                continue;
            }
            let mark = m.log.len();
            if !m.add(self.g, e, true) {
                continue;
            }
            path.push(e);
            if closes {
                self.emit(path);
            } else {
                self.dfs(m, path, next);
            }
            path.pop();
            m.undo(mark);
        }
    }
}

/// The stuck events of a pattern, as fork/join order sees them: per
/// requesting class its last instance and the clock before its first, per
/// join the join itself.
fn stuck_points(g: &Graph, p: &[LabelId]) -> Vec<(ThreadId, u32, FjClock)> {
    let mut v = Vec::new();
    for &l in p {
        let label = &g.labels[l as usize];
        let c = &g.classes[label.class as usize];
        let last = g.last_pos[label.class as usize];
        v.push((c.thread, last, c.first_clock.clone()));
        for &j in &label.chain {
            let j = &g.joins[j as usize];
            v.push((j.site.thread, j.pos, j.clock.clone()));
        }
    }
    v
}

/// Whether fork and join order two of the pattern's stuck events, so that
/// one must run before the other can be reached: then no reordering reaches
/// the deadlock.
pub fn fork_join_ordered(g: &Graph, p: &[LabelId]) -> bool {
    let pts = stuck_points(g, p);
    pts.iter().enumerate().any(|(i, (t, pos, _))| {
        pts.iter()
            .enumerate()
            .any(|(j, (_, _, clock))| i != j && fj_precedes(*t, *pos, clock))
    })
}

/// The cycle of locks of a pattern, rotated to start at its smallest lock:
/// the same cycle found from any of its edges has the same key.
pub fn lock_cycle_key(g: &Graph, p: &[LabelId]) -> Vec<u32> {
    let locks: Vec<u32> = p.iter().map(|&l| g.labels[l as usize].from).collect();
    rotate_min(locks)
}

/// `v` rotated to start at its smallest element.
pub fn rotate_min(mut v: Vec<u32>) -> Vec<u32> {
    if let Some(i) = (0..v.len()).min_by_key(|&i| v[i]) {
        v.rotate_left(i);
    }
    v
}

/// Every simple cycle of locks (up to the limits), each once, starting at
/// its smallest lock. Returns them and whether the search was complete.
pub fn lock_cycles(g: &Graph, limits: &Limits) -> (Vec<Vec<u32>>, bool) {
    // Distinct targets per lock.
    let adj: Vec<Vec<u32>> = g
        .out
        .iter()
        .map(|es| {
            let mut v: Vec<u32> = es.iter().map(|&e| g.labels[e as usize].to).collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let mut out = Vec::new();
    let mut complete = true;
    let mut steps = 0usize;
    let mut on_path = vec![false; adj.len().max(g.holder.len())];
    for s in 0..adj.len() as u32 {
        let mut path = vec![s];
        on_path[s as usize] = true;
        // Iterative DFS: (node, next edge index).
        let mut stack: Vec<(u32, usize)> = vec![(s, 0)];
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            let next = adj.get(v as usize).and_then(|a| a.get(*i)).copied();
            *i += 1;
            let Some(w) = next else {
                stack.pop();
                path.pop();
                on_path[v as usize] = false;
                continue;
            };
            steps += 1;
            if out.len() >= limits.max_cycles || steps > limits.budget.saturating_mul(10) {
                complete = false;
                stack.clear();
                break;
            }
            if w == s {
                out.push(path.clone());
            } else if w > s && !on_path[w as usize] && path.len() < limits.max_len {
                on_path[w as usize] = true;
                path.push(w);
                stack.push((w, 0));
            }
        }
        for &x in &path {
            on_path[x as usize] = false;
        }
        if !complete {
            break;
        }
    }
    (out, complete)
}

/// Why the default filters drop a cycle of locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Every edge comes from the same thread.
    OneThread,
    /// No choice of edges has distinct threads.
    NoDistinctThreads,
    /// Every choice has two threads holding a lock at once (this one, when
    /// known): a gate lock.
    Gate(Option<u32>),
    /// Fork and join order every choice.
    ForkJoin,
}

impl Dropped {
    /// The reason in words (`lock` names a lock).
    pub fn describe(self, lock: impl Fn(u32) -> String) -> String {
        match self {
            Dropped::OneThread => "all its edges come from one thread".into(),
            Dropped::NoDistinctThreads => "its edges cannot come from distinct threads".into(),
            Dropped::Gate(Some(l)) => format!("a gate lock, {}, is held around its edges", lock(l)),
            Dropped::Gate(None) => "its threads would hold a lock at the same time".into(),
            Dropped::ForkJoin => "fork and join order its edges".into(),
        }
    }
}

/// For a cycle of locks (`cycle[i] -> cycle[i + 1]`): a pattern realizing it
/// that the default filters keep, or why there is none.
pub fn realize(g: &Graph, cycle: &[u32], limits: &Limits) -> Result<Vec<LabelId>, Dropped> {
    let edges: Vec<Vec<LabelId>> = (0..cycle.len())
        .map(|i| {
            let (a, b) = (cycle[i], cycle[(i + 1) % cycle.len()]);
            g.out
                .get(a as usize)
                .map(|es| {
                    es.iter()
                        .copied()
                        .filter(|&e| g.labels[e as usize].to == b)
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let find = |sets: bool, fj: bool, conflict: &mut Option<u32>| -> Option<Vec<LabelId>> {
        let mut m = Marks::new(g);
        let mut path = Vec::new();
        let mut steps = 0;
        let found = choose(
            g,
            &edges,
            sets,
            fj,
            &mut m,
            &mut path,
            &mut steps,
            limits.budget,
        );
        *conflict = conflict.or(m.conflict);
        found.then_some(path)
    };
    let mut conflict = None;
    if let Some(p) = find(true, true, &mut conflict) {
        return Ok(p);
    }
    if find(false, false, &mut conflict).is_none() {
        let threads: Vec<ThreadId> = edges
            .iter()
            .flatten()
            .flat_map(|&e| g.label_parts(e).map(|(t, _)| t))
            .collect();
        return Err(if threads.iter().all(|&t| t == threads[0]) {
            Dropped::OneThread
        } else {
            Dropped::NoDistinctThreads
        });
    }
    let mut gate = None;
    if find(true, false, &mut gate).is_none() {
        return Err(Dropped::Gate(gate));
    }
    Err(Dropped::ForkJoin)
}

/// Choose one label per edge (`edges[path.len()..]`), threads distinct and,
/// with `sets`, held sets disjoint; with `fj`, not ordered by fork/join.
#[allow(clippy::too_many_arguments)]
fn choose(
    g: &Graph,
    edges: &[Vec<LabelId>],
    sets: bool,
    fj: bool,
    m: &mut Marks,
    path: &mut Vec<LabelId>,
    steps: &mut usize,
    budget: usize,
) -> bool {
    if path.len() == edges.len() {
        return !fj || !fork_join_ordered(g, path);
    }
    for &e in &edges[path.len()] {
        *steps += 1;
        if *steps > budget {
            return false;
        }
        let mark = m.log.len();
        if !m.add(g, e, sets) {
            continue;
        }
        path.push(e);
        if choose(g, edges, sets, fj, m, path, steps, budget) {
            return true;
        }
        path.pop();
        m.undo(mark);
    }
    false
}
