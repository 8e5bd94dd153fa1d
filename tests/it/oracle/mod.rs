//! The ground truth for every soundness test: an exhaustive explorer of the
//! correct reorderings of a small trace (a few threads, up to ~60 events).
//!
//! A *correct reordering prefix* ρ of a trace σ (CP paper, Definition 4; WCP
//! paper, Section 2) is a sequence of distinct events of σ such that
//! - per thread, ρ holds a prefix of that thread's events, in trace order;
//! - a forked thread's events come after its fork; a join comes after every
//!   event of the joined thread;
//! - no acquire of a lock another thread holds (held: acquired and not yet
//!   released in ρ); re-entrant acquires and releases are no-ops; a release out
//!   of nesting order releases its own lock; a section never released keeps its
//!   lock to the end;
//! - every read in ρ, atomic ones included (`r`, `vr`, `ar`), sees the same
//!   writes as in σ, byte by byte: for each byte it touches, the last write
//!   touching that byte before it in ρ is the last one before it in σ (or
//!   there is none in both). Every access of a text trace touches its whole
//!   variable, so there that is the last write to the variable.
//!
//! *Sync-preserving* reorderings (Mathur, Pavlogiannis, Viswanathan, POPL 2021)
//! also keep, for every lock, its acquires in ρ in trace order.
//!
//! Conflicting accesses ([`cprace::trace::Event::conflicts`]: same variable
//! and a common byte, different threads, at least one a write, not both
//! atomic) e1, e2 form a *predictable race*
//! when some correct reordering prefix has both as the next events of their
//! threads (a forked thread's first event is next only once its fork is in ρ).
//! A *predictable deadlock* is a correct reordering prefix after which two or
//! more threads each have as next event an acquire of a lock held by the next
//! thread of a cycle. [`deadlock_cycles`] also counts threads blocked in a
//! join (of a thread of the cycle) and blocked requests (`req`, which never
//! run: a thread whose next event is one waits for the lock's holder, itself
//! included).
//!
//! The explorer is a depth-first search over states (per-thread positions plus
//! the last write of every byte some read reads); everything else in a
//! state (lock holders, the last acquire of each lock) follows from the
//! positions. It shares nothing with the engines: it reads only `Trace::events`.

use std::collections::{BTreeSet, HashSet};

use cprace::trace::{Op, Trace};

/// Which reorderings count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every correct reordering.
    All,
    /// Only correct reorderings that keep each lock's acquires in trace order.
    SyncPreserving,
}

/// What the exploration found.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    /// Predictable race pairs `(e1, e2)` with `e1 < e2` (event ids).
    pub races: BTreeSet<(u32, u32)>,
    /// Whether some reachable state is a predictable deadlock.
    pub deadlock: bool,
    /// Distinct states visited.
    pub states: usize,
    /// False when the state budget ran out: `races` and `deadlock` are then
    /// only what was found so far (a lower bound).
    pub complete: bool,
}

impl Exploration {
    /// Events that are the later event of some predictable race.
    pub fn racy_events(&self) -> BTreeSet<u32> {
        self.races.iter().map(|&(_, b)| b).collect()
    }

    /// Whether `(a, b)` (either order) is a predictable race.
    pub fn is_race(&self, a: u32, b: u32) -> bool {
        self.races.contains(&(a.min(b), a.max(b)))
    }
}

/// Default state budget of [`explore`].
pub const MAX_STATES: usize = 2_000_000;

/// Explore every correct reordering of `t` (in `mode`), up to [`MAX_STATES`].
pub fn explore(t: &Trace, mode: Mode) -> Exploration {
    explore_with(t, mode, MAX_STATES)
}

/// [`explore`] with a state budget.
pub fn explore_with(t: &Trace, mode: Mode, max_states: usize) -> Exploration {
    let mut m = Machine::new(t, mode);
    let mut out = Exploration {
        complete: true,
        ..Exploration::default()
    };
    let mut seen = HashSet::new();
    let mut stack = vec![m.save()];
    seen.insert(m.key());
    // Iterative DFS over saved states: each state is restored, inspected and
    // expanded; successors not seen before are pushed.
    while let Some(state) = stack.pop() {
        m.restore(&state);
        out.states += 1;
        m.record_races(&mut out.races);
        if !out.deadlock && m.deadlocked() {
            out.deadlock = true;
        }
        for th in 0..m.threads.len() {
            if let Some(e) = m.enabled(th) {
                m.step(th, e);
                if seen.insert(m.key()) {
                    if seen.len() > max_states {
                        out.complete = false;
                        return out;
                    }
                    stack.push(m.save());
                }
                m.restore(&state);
            }
        }
    }
    out
}

/// A correct reordering prefix (in `mode`) after which `a` and `b` are both
/// next in their threads, or None when there is none (or the budget ran out).
pub fn reordering_for(t: &Trace, mode: Mode, a: u32, b: u32) -> Option<Vec<u32>> {
    search(t, mode, |m| m.is_next(a) && m.is_next(b))
}

/// Every deadlock some correct reordering (in `mode`) reaches: its cycle of
/// waiting threads as the locks requested along it, rotated to start at the
/// smallest (threads blocked in joins and blocked requests count). The flag
/// is false when the state budget ran out.
pub fn deadlock_cycles(t: &Trace, mode: Mode, max_states: usize) -> (BTreeSet<Vec<u32>>, bool) {
    let mut m = Machine::new(t, mode);
    let mut out = BTreeSet::new();
    let mut seen = HashSet::new();
    let mut stack = vec![m.save()];
    seen.insert(m.key());
    while let Some(state) = stack.pop() {
        m.restore(&state);
        out.extend(m.wait_cycles());
        for th in 0..m.threads.len() {
            if let Some(e) = m.enabled(th) {
                m.step(th, e);
                if seen.insert(m.key()) {
                    if seen.len() > max_states {
                        return (out, false);
                    }
                    stack.push(m.save());
                }
                m.restore(&state);
            }
        }
    }
    (out, true)
}

/// After the correct reordering prefix `prefix` (checked as [`check`] does),
/// the cycles of waiting threads that the threads of `requests` are on, each
/// request being next in its thread.
pub fn deadlock_after(
    t: &Trace,
    prefix: &[u32],
    requests: &[u32],
) -> Result<Vec<Vec<u32>>, String> {
    check(t, Mode::All, prefix, None)?;
    let mut m = Machine::new(t, Mode::All);
    for &e in prefix {
        m.step(t.events[e as usize].thread as usize, e);
    }
    for &e in requests {
        if !m.is_next(e) {
            return Err(format!(
                "request {e} is not next in its thread after the prefix"
            ));
        }
    }
    Ok(m.wait_cycles())
}

/// A correct reordering prefix after which some threads deadlock, or None.
pub fn deadlock_prefix(t: &Trace) -> Option<Vec<u32>> {
    search(t, Mode::All, |m| m.deadlocked())
}

/// Check that `prefix` is a correct reordering prefix of `t` in `mode` and,
/// with `race = Some((a, b))`, that `a` and `b` are then next in their threads
/// and not in the prefix. Err names the first violation.
pub fn check(
    t: &Trace,
    mode: Mode,
    prefix: &[u32],
    race: Option<(u32, u32)>,
) -> Result<(), String> {
    let mut m = Machine::new(t, mode);
    for (i, &e) in prefix.iter().enumerate() {
        let Some(ev) = t.events.get(e as usize) else {
            return Err(format!("position {i}: event {e} is not in the trace"));
        };
        let th = ev.thread as usize;
        if m.enabled(th) != Some(e) {
            return Err(format!(
                "position {i}: event {e} ({} of thread {}) cannot run next",
                ev.op.as_str(),
                ev.thread
            ));
        }
        m.step(th, e);
    }
    if let Some((a, b)) = race {
        for e in [a, b] {
            if !m.is_next(e) {
                return Err(format!(
                    "event {e} is not next in its thread after the prefix"
                ));
            }
        }
    }
    Ok(())
}

/// Depth-first search for a state satisfying `goal`; returns the path to it.
fn search(t: &Trace, mode: Mode, goal: impl Fn(&Machine) -> bool) -> Option<Vec<u32>> {
    let mut m = Machine::new(t, mode);
    let mut seen = HashSet::new();
    seen.insert(m.key());
    let mut stack: Vec<(State, Vec<u32>)> = vec![(m.save(), Vec::new())];
    while let Some((state, path)) = stack.pop() {
        m.restore(&state);
        if goal(&m) {
            return Some(path);
        }
        for th in 0..m.threads.len() {
            if let Some(e) = m.enabled(th) {
                m.step(th, e);
                if seen.insert(m.key()) {
                    if seen.len() > MAX_STATES {
                        return None;
                    }
                    let mut p = path.clone();
                    p.push(e);
                    stack.push((m.save(), p));
                }
                m.restore(&state);
            }
        }
    }
    None
}

/// Positions, last writes of read variables, lock holders and last acquires.
#[derive(Clone)]
struct State {
    pos: Vec<u32>,
    last_write: Vec<u32>,
    holder: Vec<u32>,
    last_acq: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// The trace's static tables and the current state.
struct Machine<'t> {
    t: &'t Trace,
    mode: Mode,
    /// Events of each thread, in trace order.
    threads: Vec<Vec<u32>>,
    /// Index of each event within its thread.
    index: Vec<u32>,
    /// The fork event of each thread, if forked.
    fork_of: Vec<Option<u32>>,
    /// For reads, per byte touched: the last write touching it before the
    /// read in the trace (NONE for bytes not touched or never written).
    rf: Vec<[u32; 8]>,
    /// Slot of each byte (variable * width + byte) in `last_write` (NONE:
    /// no read reads it).
    slot: Vec<u32>,
    /// Bytes tracked per variable: 8 when some access touches part of a
    /// variable, else 1.
    width: usize,
    state: State,
}

impl<'t> Machine<'t> {
    fn new(t: &'t Trace, mode: Mode) -> Self {
        let n = t.events.len();
        let nthreads = t
            .events
            .iter()
            .flat_map(|e| {
                let child = matches!(e.op, Op::Fork | Op::Join).then_some(e.target);
                [Some(e.thread), child]
            })
            .flatten()
            .max()
            .map_or(0, |m| m as usize + 1)
            .max(t.num_threads());
        let nvars = t.num_vars();
        let nlocks = t.num_locks();
        let mut threads = vec![Vec::new(); nthreads];
        let mut index = vec![0; n];
        let mut fork_of = vec![None; nthreads];
        let mut rf = vec![[NONE; 8]; n];
        let width = if t.events.iter().any(|e| e.bytes() != 0xff) {
            8
        } else {
            1
        };
        let mut last = vec![NONE; nvars * width];
        let mut slot = vec![NONE; nvars * width];
        let mut slots = 0;
        for (i, e) in t.events.iter().enumerate() {
            let i = i as u32;
            index[i as usize] = threads[e.thread as usize].len() as u32;
            threads[e.thread as usize].push(i);
            let bytes = byte_slots(e, width);
            match e.op {
                Op::Fork => fork_of[e.target as usize] = Some(i),
                Op::Read | Op::VolatileRead | Op::AtomicRead => {
                    for (b, k) in bytes {
                        rf[i as usize][b] = last[k];
                        if slot[k] == NONE {
                            slot[k] = slots;
                            slots += 1;
                        }
                    }
                }
                Op::Write | Op::VolatileWrite | Op::AtomicWrite => {
                    bytes.for_each(|(_, k)| last[k] = i)
                }
                _ => {}
            }
        }
        let state = State {
            pos: vec![0; nthreads],
            last_write: vec![NONE; slots as usize],
            holder: vec![NONE; nlocks],
            last_acq: vec![NONE; nlocks],
        };
        Machine {
            t,
            mode,
            threads,
            index,
            fork_of,
            rf,
            slot,
            width,
            state,
        }
    }

    fn save(&self) -> State {
        self.state.clone()
    }

    fn restore(&mut self, s: &State) {
        self.state.clone_from(s);
    }

    /// Everything not derivable from the positions, plus the positions.
    fn key(&self) -> Vec<u32> {
        let mut k = self.state.pos.clone();
        k.extend_from_slice(&self.state.last_write);
        k
    }

    fn executed(&self, e: u32) -> bool {
        let th = self.t.events[e as usize].thread as usize;
        self.state.pos[th] > self.index[e as usize]
    }

    fn started(&self, th: usize) -> bool {
        self.fork_of[th].is_none_or(|f| self.executed(f))
    }

    /// The next event of thread `th`, if it has one and has started.
    fn next(&self, th: usize) -> Option<u32> {
        if !self.started(th) {
            return None;
        }
        self.threads[th].get(self.state.pos[th] as usize).copied()
    }

    /// Whether `e` is the next event of its (started) thread.
    fn is_next(&self, e: u32) -> bool {
        self.next(self.t.events[e as usize].thread as usize) == Some(e)
    }

    /// The next event of `th` if it may run now.
    fn enabled(&self, th: usize) -> Option<u32> {
        let e = self.next(th)?;
        let ev = &self.t.events[e as usize];
        let ok = match ev.op {
            Op::Acquire => {
                let l = ev.target as usize;
                let free = self.state.holder[l] == NONE || self.state.holder[l] == th as u32;
                let ordered = self.mode == Mode::All
                    || self.state.last_acq[l] == NONE
                    || self.state.last_acq[l] < e;
                free && ordered
            }
            Op::Join => {
                let u = ev.target as usize;
                self.state.pos[u] as usize == self.threads[u].len()
            }
            Op::Read | Op::VolatileRead | Op::AtomicRead => {
                byte_slots(ev, self.width).all(|(b, k)| {
                    self.state.last_write[self.slot[k] as usize] == self.rf[e as usize][b]
                })
            }
            // A blocked request never runs.
            Op::Request => false,
            _ => true,
        };
        ok.then_some(e)
    }

    /// What `th` waits for, counting joins and blocked requests.
    fn waits_for(&self, th: usize) -> Option<usize> {
        let e = self.next(th)?;
        let ev = &self.t.events[e as usize];
        match ev.op {
            Op::Acquire | Op::Request => {
                let h = self.state.holder[ev.target as usize];
                (h != NONE && (h != th as u32 || ev.op == Op::Request)).then_some(h as usize)
            }
            Op::Join => {
                let u = ev.target as usize;
                ((self.state.pos[u] as usize) < self.threads[u].len()).then_some(u)
            }
            _ => None,
        }
    }

    /// Every cycle of waiting threads, as the locks requested along it,
    /// rotated to start at the smallest.
    fn wait_cycles(&self) -> Vec<Vec<u32>> {
        let n = self.threads.len();
        let mut out = Vec::new();
        for start in 0..n {
            // `start` is on a cycle when walking from it comes back to it.
            let mut cur = start;
            let mut on = false;
            for _ in 0..n {
                match self.waits_for(cur) {
                    Some(u) => cur = u,
                    None => break,
                }
                if cur == start {
                    on = true;
                    break;
                }
            }
            if !on {
                continue;
            }
            let mut locks = Vec::new();
            let mut cur = start;
            loop {
                let e = self.next(cur).expect("a waiting thread has a next event");
                let ev = &self.t.events[e as usize];
                if matches!(ev.op, Op::Acquire | Op::Request) {
                    locks.push(ev.target);
                }
                cur = self.waits_for(cur).expect("on a cycle");
                if cur == start {
                    break;
                }
            }
            let i = (0..locks.len()).min_by_key(|&i| locks[i]).unwrap_or(0);
            locks.rotate_left(i);
            if !out.contains(&locks) {
                out.push(locks);
            }
        }
        out
    }

    /// Run `e`, the enabled next event of `th`.
    fn step(&mut self, th: usize, e: u32) {
        let ev = &self.t.events[e as usize];
        match ev.op {
            Op::Acquire => {
                self.state.holder[ev.target as usize] = th as u32;
                self.state.last_acq[ev.target as usize] = e;
            }
            Op::Release => self.state.holder[ev.target as usize] = NONE,
            Op::Write | Op::VolatileWrite | Op::AtomicWrite => {
                for (_, k) in byte_slots(ev, self.width) {
                    let s = self.slot[k];
                    if s != NONE {
                        self.state.last_write[s as usize] = e;
                    }
                }
            }
            _ => {}
        }
        self.state.pos[th] += 1;
    }

    /// Add every pair of conflicting accesses that are next together.
    fn record_races(&self, races: &mut BTreeSet<(u32, u32)>) {
        let next: Vec<u32> = (0..self.threads.len())
            .filter_map(|th| self.next(th))
            .filter(|&e| self.t.events[e as usize].op.is_memory())
            .collect();
        for (i, &a) in next.iter().enumerate() {
            for &b in &next[i + 1..] {
                let (x, y) = (&self.t.events[a as usize], &self.t.events[b as usize]);
                if x.conflicts(y) {
                    races.insert((a.min(b), a.max(b)));
                }
            }
        }
    }

    /// Whether threads wait for each other's locks in a cycle.
    fn deadlocked(&self) -> bool {
        let n = self.threads.len();
        // waits[t] = the thread holding the lock t's next acquire needs.
        let waits: Vec<u32> = (0..n)
            .map(|th| match self.next(th) {
                Some(e) if self.t.events[e as usize].op == Op::Acquire => {
                    let h = self.state.holder[self.t.events[e as usize].target as usize];
                    if h == th as u32 { NONE } else { h }
                }
                _ => NONE,
            })
            .collect();
        (0..n).any(|start| {
            let mut cur = start;
            for _ in 0..n {
                let w = waits[cur];
                if w == NONE {
                    return false;
                }
                cur = w as usize;
                if cur == start {
                    return true;
                }
            }
            false
        })
    }
}

/// The bytes an access touches, as `(byte, variable * width + byte)`; with
/// `width` 1 (no access touches part of a variable) the variable is one byte.
fn byte_slots(e: &cprace::trace::Event, width: usize) -> impl Iterator<Item = (usize, usize)> {
    let (x, m) = (e.target as usize * width, e.bytes());
    (0..width)
        .filter(move |&b| width == 1 || m >> b & 1 == 1)
        .map(move |b| (b, x + b))
}
