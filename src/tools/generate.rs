//! Seeded generator of random well-formed traces, streamed one event at a time.
//!
//! Used by property tests (small traces with every feature) and by `cprace gen`
//! (large traces shaped like the papers' benchmarks). The generator only ever
//! keeps per-thread and per-lock state, so trace length costs no memory.

use crate::trace::model::{Interner, intern};
use crate::trace::{Event, Names, Op, Trace};

/// SplitMix64: tiny, fast, good enough for test data, and stable across
/// platforms and crate versions (so seeds reproduce forever).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

/// Knobs of the generator. Probabilities are per generated event.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of events to generate.
    pub events: u64,
    /// Threads (at least 1).
    pub threads: u32,
    /// Locks.
    pub locks: u32,
    /// Data variables.
    pub vars: u32,
    /// Volatile variables (0 disables volatile accesses).
    pub volatiles: u32,
    /// Deepest lock nesting.
    pub max_nesting: u32,
    /// Chance that a free event of a thread starts a critical section.
    pub p_acquire: f64,
    /// Chance per event inside a critical section that it ends (mean length ~ 1/p).
    pub p_release: f64,
    /// Chance that an access outside a critical section happens at all
    /// (lower values put more of the accesses under locks).
    pub p_unlocked_access: f64,
    /// Share of accesses that are writes.
    pub p_write: f64,
    /// Chance of a volatile access instead of a data access.
    pub p_volatile: f64,
    /// Share of data accesses that are atomic, on the same variables as the
    /// plain ones (what mixes plain and atomic accesses of a variable): half
    /// relaxed (`ar`, `aw`), half synchronizing (`vr`, `vw`). 0 in every
    /// profile.
    pub p_atomic: f64,
    /// Give every access a random aligned shape in an 8-byte cell: 1, 2, 4
    /// or 8 bytes at an offset of a multiple of its size (the byte masks of
    /// recorded C/C++ traces). Only the in-memory [`trace`] carries masks:
    /// no text format can write them.
    pub masks: bool,
    /// Use fork/join: thread 0 forks the others and joins them when done.
    pub fork_join: bool,
    /// Chance of a re-entrant acquire of a held lock.
    pub p_reentrant: f64,
    /// Chance that a release is not of the innermost lock.
    pub p_out_of_order_release: f64,
    /// Distinct program locations per thread.
    pub locs_per_thread: u32,
    /// Share of accesses that go to a small set of hot variables (contention).
    pub p_hot: f64,
    /// Target share of data accesses made under a lock: when set, accesses
    /// outside critical sections are held back while the share is below it
    /// (see [`Config::set_locked_share`]).
    pub locked_share: Option<f64>,
    /// Share of data accesses that touch a variable never accessed before (a
    /// new array element, named like `a3[141]`), as in traces of array code;
    /// 0 disables. Of the other accesses, as many again go to recently new
    /// elements (neighbours are read again soon, as in a stencil).
    pub p_fresh: f64,
    /// Nested acquires follow one global lock order (a lock above every
    /// lock held), so the background has no lock-order cycle.
    pub ordered_locks: bool,
    /// Deadlock shapes woven in, on threads and locks of their own (see
    /// [`crate::deadlock::shapes`]).
    pub deadlocks: crate::deadlock::shapes::Plan,
    /// Seed.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            events: 1000,
            threads: 4,
            locks: 3,
            vars: 8,
            volatiles: 1,
            max_nesting: 2,
            p_acquire: 0.15,
            p_release: 0.25,
            p_unlocked_access: 0.7,
            p_write: 0.5,
            p_volatile: 0.03,
            p_atomic: 0.0,
            masks: false,
            fork_join: true,
            p_reentrant: 0.02,
            p_out_of_order_release: 0.05,
            locs_per_thread: 16,
            p_hot: 0.3,
            locked_share: None,
            p_fresh: 0.0,
            ordered_locks: false,
            deadlocks: crate::deadlock::shapes::Plan {
                philosophers: 5,
                ..Default::default()
            },
            seed: 0,
        }
    }
}

impl Config {
    /// A named profile shaped like the traces the papers report, or None.
    ///
    /// - `small`: property-test size, every feature on.
    /// - `ftpserver`: 11 threads, ~300 locks, many short critical sections.
    /// - `long-cs`: few threads, long critical sections (the CP paper's quadratic case).
    /// - `many-threads`: 64 threads, moderate locking.
    /// - `bench`: 8 threads, 20 locks (the issues' benchmark shape).
    /// - `threads-256`: `many-threads` with 256 threads (vector vs tree clocks).
    /// - `arrays`: Java array code (Java Grande `sor`): about a third of the
    ///   events touch a new array element, so the trace names variables by the
    ///   hundreds of thousands per million events.
    /// - `deadlocks`: `bench` with nesting up to 3 in one global lock order
    ///   and no fork/join, and every deadlock shape woven in every 100,000
    ///   events.
    pub fn profile(name: &str) -> Option<Config> {
        let base = Config::default();
        Some(match name {
            "small" => base,
            "ftpserver" => Config {
                threads: 11,
                locks: 300,
                vars: 2000,
                volatiles: 20,
                max_nesting: 3,
                p_acquire: 0.2,
                p_release: 0.35,
                p_unlocked_access: 0.5,
                p_write: 0.4,
                p_volatile: 0.01,
                p_reentrant: 0.01,
                p_out_of_order_release: 0.0,
                locs_per_thread: 500,
                p_hot: 0.2,
                ..base
            },
            "long-cs" => Config {
                threads: 4,
                locks: 4,
                vars: 500,
                volatiles: 2,
                max_nesting: 2,
                p_acquire: 0.05,
                p_release: 0.01,
                p_unlocked_access: 0.5,
                p_write: 0.3,
                p_volatile: 0.005,
                p_reentrant: 0.0,
                p_out_of_order_release: 0.0,
                locs_per_thread: 200,
                p_hot: 0.1,
                ..base
            },
            "many-threads" => Config {
                threads: 64,
                locks: 50,
                vars: 5000,
                volatiles: 10,
                max_nesting: 2,
                p_acquire: 0.1,
                p_release: 0.3,
                p_unlocked_access: 0.6,
                p_write: 0.4,
                p_volatile: 0.01,
                p_reentrant: 0.0,
                p_out_of_order_release: 0.0,
                locs_per_thread: 100,
                p_hot: 0.1,
                ..base
            },
            "threads-256" => Config {
                threads: 256,
                ..Config::profile("many-threads")?
            },
            "bench" => Config {
                threads: 8,
                locks: 20,
                vars: 1000,
                volatiles: 4,
                max_nesting: 2,
                p_acquire: 0.1,
                p_release: 0.25,
                p_unlocked_access: 0.6,
                p_write: 0.4,
                p_volatile: 0.01,
                p_reentrant: 0.0,
                p_out_of_order_release: 0.0,
                locs_per_thread: 200,
                p_hot: 0.2,
                ..base
            },
            "arrays" => Config {
                threads: 8,
                locks: 8,
                vars: 1000,
                volatiles: 4,
                max_nesting: 1,
                p_acquire: 0.02,
                p_release: 0.3,
                p_unlocked_access: 0.95,
                p_write: 0.3,
                p_volatile: 0.005,
                p_reentrant: 0.0,
                p_out_of_order_release: 0.0,
                locs_per_thread: 100,
                p_hot: 0.1,
                p_fresh: 0.36,
                ..base
            },
            "deadlocks" => Config {
                max_nesting: 3,
                ordered_locks: true,
                // Joining while holding locks would add cycles of its own.
                fork_join: false,
                deadlocks: crate::deadlock::shapes::Plan {
                    shapes: crate::deadlock::shapes::Shape::ALL.to_vec(),
                    every: 100_000,
                    philosophers: 5,
                },
                ..Config::profile("bench")?
            },
            _ => return None,
        })
    }

    /// Set the mean critical-section length: events from an acquire to its
    /// release, both included (a thread inside a critical section always
    /// emits an event, and leaves with chance `p_release` per event).
    pub fn set_cs_length(&mut self, len: f64) {
        self.p_release = 1.0 / (len - 1.0).max(1.0);
    }

    /// Aim for a share `s` (0..=1) of data accesses made while holding a lock.
    /// A first-order model sets `p_unlocked_access` (and `p_acquire` when even
    /// unthrottled unlocked accesses would be too few): a thread is inside a
    /// critical section for a share `pa / (pa + pr)` of its steps, where every
    /// step but the release is an access, and outside an access happens with
    /// chance `pu`. Contention and nesting make the model inexact, so it errs
    /// towards unlocked accesses and the generator then holds them back
    /// whenever the share reached so far falls below `s`.
    pub fn set_locked_share(&mut self, s: f64) {
        let s = s.clamp(0.0, 1.0);
        self.locked_share = Some(s);
        let pr = self.p_release.clamp(1e-6, 1.0);
        if s <= 0.0 {
            self.p_acquire = 0.0;
            self.p_unlocked_access = 1.0;
            return;
        }
        if self.p_acquire <= 0.0 {
            self.p_acquire = 0.1;
        }
        let inside = (1.0 - pr) * self.p_acquire / pr;
        let pu = 2.0 * inside * (1.0 - s) / s;
        if pu <= 1.0 {
            self.p_unlocked_access = pu;
        } else {
            // Enter critical sections more often instead.
            self.p_unlocked_access = 1.0;
            self.p_acquire = (pr * s / ((1.0 - pr).max(1e-6) * (1.0 - s))).min(1.0);
        }
    }

    /// Names of the profiles [`Config::profile`] knows.
    pub const PROFILES: &'static [&'static str] = &[
        "small",
        "ftpserver",
        "long-cs",
        "many-threads",
        "threads-256",
        "bench",
        "arrays",
        "deadlocks",
    ];

    /// Threads and locks of the trace: the background's and the deadlock
    /// shapes'.
    pub(crate) fn all_threads_and_locks(&self) -> (u32, u32) {
        let (t, l) = crate::deadlock::shapes::Weaver::extra(&self.deadlocks, self.events);
        (
            self.threads.max(1).saturating_add(t),
            self.locks.saturating_add(l),
        )
    }
}

#[derive(Clone, Debug, Default)]
struct ThreadState {
    started: bool,
    done: bool,
    held: Vec<u32>,
    /// Re-entrant depth per held lock (parallel to `held`).
    extra: Vec<u32>,
    /// Events this thread may still emit before it winds down.
    budget: u64,
}

/// Streaming generator: an iterator of exactly `Config::events` well-formed
/// events (fewer only when there is nothing to generate, e.g. no variables).
/// Thread `i` is named `T{i}`, lock `l{i}`, variable `x{i}`, volatile `v{i}`
/// (target id `vars + i`), location id `1 + t * locs_per_thread + n` is
/// `f{t}.java:{n}`; [`Generator::names`] builds the matching tables and
/// [`write`] formats them on the fly.
pub struct Generator {
    cfg: Config,
    rng: Rng,
    threads: Vec<ThreadState>,
    lock_holder: Vec<Option<u32>>,
    emitted: u64,
    /// Releases still owed (held locks plus re-entrant depth): the generator
    /// keeps `outstanding <= events - emitted` so the trace ends with every
    /// lock released at exactly the requested length.
    outstanding: u64,
    next_fork: u32,
    /// Finished threads not joined yet (fork/join mode).
    done_unjoined: Vec<u32>,
    /// Data accesses emitted inside and outside critical sections.
    locked_accesses: u64,
    unlocked_accesses: u64,
    /// Array elements created so far (see [`Config::p_fresh`]).
    fresh: u32,
    /// The deadlock shapes being woven in, if any.
    weaver: Option<crate::deadlock::shapes::Weaver>,
}

impl Generator {
    /// A generator for `cfg`.
    pub fn new(cfg: Config) -> Generator {
        let n = cfg.threads.max(1) as usize;
        let mut threads = vec![ThreadState::default(); n];
        let per_thread = cfg.events / n as u64 + 1;
        for (i, t) in threads.iter_mut().enumerate() {
            t.started = !cfg.fork_join || i == 0;
            // In fork/join mode thread 0 outlives its children so it can join them.
            t.budget = if cfg.fork_join && i == 0 {
                u64::MAX
            } else {
                per_thread
            };
        }
        Generator {
            rng: Rng::new(cfg.seed),
            lock_holder: vec![None; cfg.locks as usize],
            threads,
            emitted: 0,
            outstanding: 0,
            next_fork: 1,
            done_unjoined: Vec::new(),
            locked_accesses: 0,
            unlocked_accesses: 0,
            fresh: 0,
            weaver: (!cfg.deadlocks.shapes.is_empty()).then(|| {
                crate::deadlock::shapes::Weaver::new(
                    cfg.deadlocks.clone(),
                    cfg.events,
                    n as u32,
                    cfg.locks,
                )
            }),
            cfg,
        }
    }

    /// The name tables matching the ids this generator emits.
    pub fn names(cfg: &Config) -> Names {
        let mut n = Names::default();
        let (threads, locks) = cfg.all_threads_and_locks();
        fill(&mut n.threads, threads, |i| format!("T{i}"));
        fill(&mut n.locks, locks, |i| format!("l{i}"));
        fill(&mut n.vars, cfg.vars, |i| format!("x{i}"));
        fill(&mut n.vars, cfg.volatiles, |i| format!("v{i}"));
        let per = cfg.locs_per_thread.max(1);
        for l in 0..threads.saturating_mul(per) {
            intern(&mut n.locs, &loc_name(per, l));
        }
        n
    }

    fn loc(&mut self, t: u32) -> u32 {
        let per = self.cfg.locs_per_thread.max(1);
        1 + t * per + self.rng.below(per as u64) as u32
    }

    fn ev(&mut self, t: u32, op: Op, target: u32) -> Event {
        let loc = self.loc(t);
        let mask = if self.cfg.masks && op.is_memory() {
            self.mask()
        } else {
            0
        };
        Event {
            thread: t,
            target,
            loc,
            op,
            mask,
        }
    }

    fn runnable(&self, t: usize) -> bool {
        let s = &self.threads[t];
        s.started && !s.done
    }

    /// Produce the next event of thread `t`, or None if it had nothing to do.
    /// `may_acquire` is false when the remaining length only leaves room for
    /// the releases already owed (plus one other event).
    fn step(&mut self, t: u32, may_acquire: bool) -> Option<Event> {
        let c = &self.cfg;
        let (p_release, fork_join, threads, locks, max_nesting, p_acquire, p_reentrant) = (
            c.p_release,
            c.fork_join,
            c.threads,
            c.locks,
            c.max_nesting,
            c.p_acquire,
            c.p_reentrant,
        );
        let ti = t as usize;
        let in_cs = !self.threads[ti].held.is_empty();
        // A thread past its budget winds down: release everything, then stop.
        if self.threads[ti].budget == 0 {
            if in_cs {
                return Some(self.release(t));
            }
            self.threads[ti].done = true;
            if fork_join && t != 0 {
                self.done_unjoined.push(t);
            }
            return None;
        }
        if in_cs && self.rng.chance(p_release) {
            return Some(self.release(t));
        }
        if fork_join && t == 0 {
            if self.next_fork < threads && self.rng.chance(0.2) {
                let u = self.next_fork;
                self.next_fork += 1;
                self.threads[u as usize].started = true;
                return Some(self.ev(0, Op::Fork, u));
            }
            if (!in_cs || self.rng.chance(0.5))
                && !self.done_unjoined.is_empty()
                && self.rng.chance(0.3)
            {
                let i = self.rng.below(self.done_unjoined.len() as u64) as usize;
                let u = self.done_unjoined.swap_remove(i);
                return Some(self.ev(0, Op::Join, u));
            }
        }
        let depth = self.threads[ti].held.len() as u32;
        if may_acquire && locks > 0 && depth < max_nesting && self.rng.chance(p_acquire) {
            let l = if self.cfg.ordered_locks {
                // Above every lock held (none left: the lock count, taken
                // by nobody and skipped below).
                let lo = self.threads[ti].held.iter().max().map_or(0, |&m| m + 1);
                match locks.checked_sub(lo).filter(|&n| n > 0) {
                    Some(n) => lo + self.rng.below(u64::from(n)) as u32,
                    None => locks,
                }
            } else {
                self.rng.below(locks as u64) as u32
            };
            match (l < locks).then(|| self.lock_holder[l as usize]) {
                None => {}
                Some(holder) => match holder {
                    None => {
                        self.lock_holder[l as usize] = Some(t);
                        self.threads[ti].held.push(l);
                        self.threads[ti].extra.push(0);
                        self.outstanding += 1;
                        return Some(self.ev(t, Op::Acquire, l));
                    }
                    Some(h) if h == t && self.rng.chance(p_reentrant / p_acquire.max(1e-9)) => {
                        let p = self.threads[ti]
                            .held
                            .iter()
                            .position(|&x| x == l)
                            .unwrap_or(0);
                        self.threads[ti].extra[p] += 1;
                        self.outstanding += 1;
                        return Some(self.ev(t, Op::Acquire, l));
                    }
                    _ => {}
                },
            }
        }
        let c = &self.cfg;
        let (vars, volatiles, p_volatile, p_write, p_unlocked, p_hot) = (
            c.vars,
            c.volatiles,
            c.p_volatile,
            c.p_write,
            c.p_unlocked_access,
            c.p_hot,
        );
        if volatiles > 0 && self.rng.chance(p_volatile) {
            let v = vars + self.rng.below(volatiles as u64) as u32;
            let op = if self.rng.chance(p_write) {
                Op::VolatileWrite
            } else {
                Op::VolatileRead
            };
            return Some(self.ev(t, op, v));
        }
        if vars == 0 || (!in_cs && !self.rng.chance(p_unlocked)) {
            return None;
        }
        if !in_cs
            && let Some(s) = self.cfg.locked_share
            && (self.locked_accesses as f64)
                < s * (self.locked_accesses + self.unlocked_accesses + 1) as f64
        {
            return None;
        }
        if in_cs {
            self.locked_accesses += 1;
        } else {
            self.unlocked_accesses += 1;
        }
        let p_fresh = self.cfg.p_fresh;
        let first_element = vars.saturating_add(volatiles);
        let hot = (vars / 16).max(1);
        let x =
            if p_fresh > 0.0 && self.rng.chance(p_fresh) && first_element < u32::MAX - self.fresh {
                self.fresh += 1;
                first_element + self.fresh - 1
            } else if p_fresh > 0.0
                && self.fresh > 0
                && self.rng.chance(p_fresh / (1.0 - p_fresh).max(1e-9))
            {
                // A recent element (among the last 1024 created).
                let back = self.rng.below(self.fresh.min(1024) as u64) as u32;
                first_element + self.fresh - 1 - back
            } else if self.rng.chance(p_hot) {
                self.rng.below(hot as u64) as u32
            } else {
                self.rng.below(vars as u64) as u32
            };
        let write = self.rng.chance(p_write);
        let op = if self.cfg.p_atomic > 0.0 && self.rng.chance(self.cfg.p_atomic) {
            match (self.rng.chance(0.5), write) {
                (true, true) => Op::AtomicWrite,
                (true, false) => Op::AtomicRead,
                (false, true) => Op::VolatileWrite,
                (false, false) => Op::VolatileRead,
            }
        } else if write {
            Op::Write
        } else {
            Op::Read
        };
        Some(self.ev(t, op, x))
    }

    /// A random aligned shape in an 8-byte cell (see [`Config::masks`]).
    fn mask(&mut self) -> u8 {
        let size = 1u32 << self.rng.below(4);
        let offset = self.rng.below(u64::from(8 / size)) as u32 * size;
        (((1u32 << size) - 1) << offset) as u8
    }

    fn release(&mut self, t: u32) -> Event {
        let ti = t as usize;
        let n = self.threads[ti].held.len();
        let p = if n > 1 && self.rng.chance(self.cfg.p_out_of_order_release) {
            self.rng.below(n as u64) as usize
        } else {
            n - 1
        };
        let l = self.threads[ti].held[p];
        if self.threads[ti].extra[p] > 0 {
            self.threads[ti].extra[p] -= 1;
        } else {
            self.threads[ti].held.remove(p);
            self.threads[ti].extra.remove(p);
            self.lock_holder[l as usize] = None;
        }
        self.outstanding -= 1;
        self.ev(t, Op::Release, l)
    }

    /// A release by some thread holding a lock (used to end the trace on time).
    fn forced_release(&mut self) -> Option<Event> {
        let n = self.threads.len();
        let start = self.rng.below(n as u64) as usize;
        let t = (0..n)
            .map(|i| (start + i) % n)
            .find(|&t| !self.threads[t].held.is_empty())?;
        Some(self.release(t as u32))
    }

    fn emit(&mut self, e: Event) -> Event {
        self.emitted += 1;
        if let Some(t) = self.threads.get_mut(e.thread as usize) {
            t.budget = t.budget.saturating_sub(1);
        }
        e
    }

    /// The next event of the deadlock shapes, if one is due (`force`: the
    /// trace is ending, emit what is left). Its location becomes one of its
    /// thread's.
    fn shape_event(&mut self, remaining: u64, force: bool) -> Option<Event> {
        let w = self.weaver.as_mut()?;
        let coin = force || self.rng.chance(0.5);
        let room = remaining.saturating_sub(self.outstanding + 1);
        let mut e = w.next(self.emitted, room, coin)?;
        let per = self.cfg.locs_per_thread.max(1);
        e.loc = 1 + e.thread * per + (e.loc % per);
        Some(e)
    }
}

fn fill(table: &mut Interner, n: u32, name: impl Fn(u32) -> String) {
    for i in 0..n {
        intern(table, &name(i));
    }
}

impl Iterator for Generator {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let remaining = self.cfg.events.saturating_sub(self.emitted);
        if remaining == 0 {
            return None;
        }
        // A deadlock shape started is finished (it releases what it takes).
        let shape_left = self.weaver.as_ref().map_or(0, |w| w.left());
        if shape_left > 0 && remaining <= self.outstanding + shape_left {
            let e = self.shape_event(remaining, true)?;
            return Some(self.emit(e));
        }
        // Only room left for the releases owed: emit them (invariant:
        // outstanding <= remaining, so this ends with every lock released).
        if remaining <= self.outstanding {
            let e = self.forced_release()?;
            return Some(self.emit(e));
        }
        if let Some(e) = self.shape_event(remaining - shape_left, false) {
            return Some(self.emit(e));
        }
        let shape_left = self.weaver.as_ref().map_or(0, |w| w.left());
        let may_acquire = remaining > self.outstanding + shape_left + 1;
        let n = self.threads.len() as u64;
        for _ in 0..64 {
            let t = self.rng.below(n) as usize;
            if !self.runnable(t) {
                continue;
            }
            if let Some(e) = self.step(t as u32, may_acquire) {
                return Some(self.emit(e));
            }
        }
        // Every thread we tried was idle: let the first live thread read.
        let live = (0..self.threads.len()).find(|&t| self.runnable(t));
        match live {
            Some(t) if self.cfg.vars > 0 => {
                let e = self.ev(t as u32, Op::Read, 0);
                Some(self.emit(e))
            }
            // Nothing left to generate: still end with every lock released.
            _ => {
                let e = self.forced_release()?;
                Some(self.emit(e))
            }
        }
    }
}

/// Output format of [`write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// cprace CSV with the header `thread,op,target,loc`.
    Csv,
    /// RAPID STD: `thread|op(target)|loc`.
    Std,
}

/// Append the decimal digits of `n` to `out` (no allocation, unlike `format!`).
fn push_u32(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Array elements per array in element names (`a{k / ELEMENTS}[{k % ELEMENTS}]`).
const ELEMENTS: u32 = 1000;

/// The generator's name for variable `v`.
fn var_name(cfg: &Config, v: u32) -> String {
    let mut out = Vec::new();
    push_var(&mut out, cfg, v);
    String::from_utf8_lossy(&out).into_owned()
}

/// Append the generator's name for variable `v`.
fn push_var(out: &mut Vec<u8>, cfg: &Config, v: u32) {
    let first_element = cfg.vars.saturating_add(cfg.volatiles);
    if v >= first_element {
        let k = v - first_element;
        out.push(b'a');
        push_u32(out, k / ELEMENTS);
        out.push(b'[');
        push_u32(out, k % ELEMENTS);
        out.push(b']');
    } else if v >= cfg.vars {
        out.push(b'v');
        push_u32(out, v - cfg.vars);
    } else {
        out.push(b'x');
        push_u32(out, v);
    }
}

/// The generator's name for location id `l + 1` (`per` locations a thread).
fn loc_name(per: u32, l: u32) -> String {
    let mut out = Vec::new();
    push_loc(&mut out, per, l);
    String::from_utf8_lossy(&out).into_owned()
}

/// Append the generator's name for location id `l + 1`: `f{thread}.java:{n}`.
fn push_loc(out: &mut Vec<u8>, per: u32, l: u32) {
    out.push(b'f');
    push_u32(out, l / per);
    out.extend_from_slice(b".java:");
    push_u32(out, l % per);
}

/// Append the generator's name for `ev`'s target.
fn push_target(out: &mut Vec<u8>, cfg: &Config, ev: &Event) {
    use crate::trace::model::TargetKind;
    match ev.op.target_kind() {
        TargetKind::Thread => {
            out.push(b'T');
            push_u32(out, ev.target);
        }
        TargetKind::Lock => {
            out.push(b'l');
            push_u32(out, ev.target);
        }
        TargetKind::Variable => push_var(out, cfg, ev.target),
    }
}

/// A line's parts, formatted once: `T3|`, `r(`, `x12`, `)|f3.java:7\n`
/// (STD), each at most [`PIECE`] bytes, so that a line is four fixed-size
/// copies instead of a dozen short ones and the digit loops.
struct Pieces {
    /// `T{t}` and the first separator, by thread.
    threads: Vec<Piece>,
    /// The op and what opens the target, by `Op as usize` (None: an op the
    /// generator does not emit).
    ops: Vec<Option<Piece>>,
    /// `l{l}`, by lock.
    locks: Vec<Piece>,
    /// `x{v}` and `v{v}` (not array elements), by variable.
    vars: Vec<Piece>,
    /// What closes the target, the separator, the location and the newline,
    /// by location id.
    locs: Vec<Piece>,
}

/// The operations the generator emits (re-entrant acquires and releases
/// are plain `acq` and `rel` events of a lock the thread holds; relaxed
/// atomics only with [`Config::p_atomic`]).
pub const EMITTED_OPS: [Op; 10] = [
    Op::Read,
    Op::Write,
    Op::Acquire,
    Op::Release,
    Op::Fork,
    Op::Join,
    Op::VolatileRead,
    Op::VolatileWrite,
    Op::AtomicRead,
    Op::AtomicWrite,
];

/// Bytes of a [`Piece`].
const PIECE: usize = 32;

/// A short byte string in a fixed-size array.
#[derive(Clone, Copy)]
struct Piece {
    bytes: [u8; PIECE],
    len: u8,
}

impl Piece {
    /// `parts` joined, or None when longer than [`PIECE`] bytes.
    fn new(parts: &[&[u8]]) -> Option<Piece> {
        let mut bytes = [0u8; PIECE];
        let mut len = 0;
        for p in parts {
            bytes.get_mut(len..len + p.len())?.copy_from_slice(p);
            len += p.len();
        }
        Some(Piece {
            bytes,
            len: len as u8,
        })
    }
}

/// Most variables and locations [`Pieces`] formats ahead (32 bytes each).
const MAX_PIECES: u32 = 1 << 16;

impl Pieces {
    /// The pieces of `cfg`'s lines with these separators (`thread SEP1 op
    /// OPEN target CLOSE SEP2 location`).
    fn new(cfg: &Config, [sep1, open, close, sep2]: [&[u8]; 4]) -> Pieces {
        let num = |prefix: &[u8], i: u32| {
            let mut v = prefix.to_vec();
            push_u32(&mut v, i);
            v
        };
        // A table too long to format ahead stays empty: lines fall back.
        let table = |n: u32, f: &dyn Fn(u32) -> Option<Piece>| -> Vec<Piece> {
            if n > MAX_PIECES {
                return Vec::new();
            }
            (0..n)
                .map(f)
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default()
        };
        let threads = cfg.threads.max(1);
        let per = cfg.locs_per_thread.max(1);
        let mut op_pieces = vec![None; 16];
        for op in EMITTED_OPS {
            if let Some(slot) = op_pieces.get_mut(op as usize) {
                *slot = Piece::new(&[op.as_str().as_bytes(), open]);
            }
        }
        Pieces {
            threads: table(threads, &|t| Piece::new(&[&num(b"T", t), sep1])),
            ops: op_pieces,
            locks: table(cfg.locks, &|l| Piece::new(&[&num(b"l", l)])),
            vars: table(cfg.vars.saturating_add(cfg.volatiles), &|v| {
                let mut name = Vec::new();
                push_var(&mut name, cfg, v);
                Piece::new(&[&name])
            }),
            locs: table(threads.saturating_mul(per), &|l| {
                let mut loc = Vec::new();
                push_loc(&mut loc, per, l);
                Piece::new(&[close, sep2, &loc, b"\n"])
            }),
        }
    }

    /// Appends `ev`'s line to `out`; false when a part is not formatted
    /// ahead (array elements, forks and joins, huge tables).
    #[inline(always)]
    fn line(&self, ev: &Event, out: &mut Vec<u8>) -> bool {
        use crate::trace::model::TargetKind;
        let target = match ev.op.target_kind() {
            TargetKind::Variable => self.vars.get(ev.target as usize),
            TargetKind::Lock => self.locks.get(ev.target as usize),
            TargetKind::Thread => None,
        };
        let (Some(t), Some(op), Some(target), Some(loc)) = (
            self.threads.get(ev.thread as usize),
            self.ops.get(ev.op as usize).copied().flatten(),
            target,
            ev.loc
                .checked_sub(1)
                .and_then(|l| self.locs.get(l as usize)),
        ) else {
            return false;
        };
        let mut line = [0u8; 4 * PIECE];
        let mut at = 0;
        for p in [t, &op, target, loc] {
            line[at..at + PIECE].copy_from_slice(&p.bytes);
            at += p.len as usize;
        }
        out.extend_from_slice(&line[..at]);
        true
    }
}

/// Stream the trace `cfg` describes to `out` as text, formatting names on the fly
/// (the output is byte-identical to `cprace convert` of the same trace). Holds
/// only the generator's per-thread state, never the trace. Returns the number
/// of events written. `out` need not be buffered: this writes in 256 KiB chunks.
pub fn write(
    cfg: &Config,
    format: TextFormat,
    out: &mut impl std::io::Write,
) -> std::io::Result<u64> {
    let per = cfg.locs_per_thread.max(1);
    crate::progress::phase("generating");
    crate::progress::start_writing();
    let mut buf: Vec<u8> = Vec::with_capacity(OUT_CHUNK);
    if format == TextFormat::Csv {
        buf.extend_from_slice(b"thread,op,target,loc\n");
    }
    let seps: [&[u8]; 4] = match format {
        TextFormat::Csv => [b",", b",", b"", b","],
        TextFormat::Std => [b"|", b"(", b")", b"|"],
    };
    let [sep1, open, close, sep2] = seps;
    let pieces = Pieces::new(cfg, seps);
    let mut n = 0u64;
    for ev in Generator::new(cfg.clone()) {
        if !pieces.line(&ev, &mut buf) {
            buf.push(b'T');
            push_u32(&mut buf, ev.thread);
            buf.extend_from_slice(sep1);
            buf.extend_from_slice(ev.op.as_str().as_bytes());
            buf.extend_from_slice(open);
            push_target(&mut buf, cfg, &ev);
            buf.extend_from_slice(close);
            buf.extend_from_slice(sep2);
            push_loc(&mut buf, per, ev.loc - 1);
            buf.push(b'\n');
        }
        n += 1;
        flush_full(out, &mut buf, n)?;
    }
    flush_rest(out, &buf, n)?;
    Ok(n)
}

/// Bytes the writers gather before handing them to their output.
const OUT_CHUNK: usize = 1 << 18;

/// Writes `buf` out once it holds about [`OUT_CHUNK`] bytes (`n` events so far).
#[inline]
fn flush_full(out: &mut impl std::io::Write, buf: &mut Vec<u8>, n: u64) -> std::io::Result<()> {
    if buf.len() >= OUT_CHUNK - 256 {
        out.write_all(buf)?;
        buf.clear();
        crate::progress::events_read(n);
    }
    Ok(())
}

/// Writes the rest of `buf` and flushes (`n` events in all).
fn flush_rest(out: &mut impl std::io::Write, buf: &[u8], n: u64) -> std::io::Result<()> {
    out.write_all(buf)?;
    out.flush()?;
    crate::progress::done_reading(n);
    Ok(())
}

/// Why the trace `cfg` describes cannot be written as RapidBin, if it cannot
/// (the format has no volatile operations, 10 bits of thread and 15 of
/// location).
pub fn rapidbin_problem(cfg: &Config) -> Option<String> {
    use crate::trace::rapid_bin::{MAX_LOCATIONS, MAX_THREADS};
    let threads = cfg.all_threads_and_locks().0 as usize;
    let locs = threads.saturating_mul(cfg.locs_per_thread.max(1) as usize);
    if cfg.volatiles > 0 {
        Some("RapidBin has no volatile operations; add --volatiles 0".into())
    } else if cfg.p_atomic > 0.0 {
        Some("RapidBin has no atomic operations".into())
    } else if threads > MAX_THREADS {
        Some(format!("RapidBin holds at most {MAX_THREADS} threads"))
    } else if locs >= MAX_LOCATIONS {
        Some(format!(
            "RapidBin holds at most {} locations; this trace has {locs} ({threads} threads x {} per thread): lower --locations",
            MAX_LOCATIONS - 1,
            cfg.locs_per_thread.max(1)
        ))
    } else {
        None
    }
}

/// Stream the trace `cfg` describes to `out` as RapidBin (which `cfg` must
/// fit: [`rapidbin_problem`]), ids as the generator numbers them (the
/// names [`rapidbin_names`] gives). Returns the number of events and of
/// variables named. Fails when the generator ends before `cfg.events`
/// events, which the header already promised.
pub fn write_rapidbin(cfg: &Config, out: &mut impl std::io::Write) -> std::io::Result<(u64, u32)> {
    use crate::trace::rapid_bin::{header, op_code, word};
    crate::progress::phase("generating");
    crate::progress::start_writing();
    let vars = cfg.vars.saturating_add(cfg.volatiles) as usize;
    let (threads, locks) = cfg.all_threads_and_locks();
    out.write_all(&header(threads as usize, locks as usize, vars, cfg.events))?;
    let mut buf: Vec<u8> = Vec::with_capacity(OUT_CHUNK);
    let mut g = Generator::new(cfg.clone());
    let mut n = 0u64;
    for ev in g.by_ref() {
        let Some(code) = op_code(ev.op) else {
            return Err(std::io::Error::other(format!(
                "RapidBin has no operation for `{}`",
                ev.op.as_str()
            )));
        };
        buf.extend_from_slice(&word(ev.thread, code, ev.target, ev.loc).to_be_bytes());
        n += 1;
        flush_full(out, &mut buf, n)?;
    }
    flush_rest(out, &buf, n)?;
    if n != cfg.events {
        return Err(std::io::Error::other(format!(
            "the generator stopped after {n} events, short of the {} in the RapidBin header (nothing left to generate: give it variables or locks)",
            cfg.events
        )));
    }
    let named = cfg
        .vars
        .saturating_add(cfg.volatiles)
        .saturating_add(g.fresh);
    Ok((n, named))
}

/// The name tables (threads, locks, variables, locations) of a trace
/// [`write_rapidbin`] wrote, which named `variables` variables: what the
/// RapidBin side file holds, so that reading it gives the trace `gen
/// --format std` writes.
pub fn rapidbin_names(cfg: &Config, variables: u32) -> [Vec<String>; 4] {
    let n = Generator::names(cfg);
    let all = |t: &Interner| t.iter().map(String::from).collect::<Vec<_>>();
    // Generator::names has the plain variables; the array elements follow.
    let mut vars = all(&n.vars);
    vars.extend((vars.len() as u32..variables).map(|v| var_name(cfg, v)));
    [all(&n.threads), all(&n.locks), vars, all(&n.locs)]
}

/// Generate a whole trace in memory (tests and small experiments), with
/// byte masks when [`Config::masks`] asks for them.
pub fn trace(cfg: &Config) -> Trace {
    let names = Generator::names(cfg);
    let mut events = Vec::with_capacity(cfg.events as usize + 8);
    let mut masks = Vec::new();
    let mut b = crate::trace::validate::Builder::new("<generated>", |_, e: &Event| events.push(*e));
    // Validate through the same builder as every loader: generated traces obey
    // exactly the rules real ones do, and re-entrant acquires get marked.
    for ev in Generator::new(cfg.clone()) {
        if cfg.masks {
            masks.push(ev.mask);
        }
        let element;
        let target = match ev.op.target_kind() {
            crate::trace::model::TargetKind::Variable if ev.target >= names.vars.len() as u32 => {
                element = var_name(cfg, ev.target);
                &element
            }
            crate::trace::model::TargetKind::Variable => {
                element = names.var(ev.target).into_owned();
                &element
            }
            crate::trace::model::TargetKind::Lock => names.lock(ev.target),
            crate::trace::model::TargetKind::Thread => names.thread(ev.target),
        };
        b.push(
            names.thread(ev.thread),
            ev.op.as_str(),
            target,
            names.loc(ev.loc),
        )
        .expect("generator emits well-formed traces");
    }
    let (names, stats) = b.finish();
    // The builder makes one event per line, in order; no text carries masks.
    for (e, m) in events.iter_mut().zip(masks) {
        e.mask = m;
    }
    Trace {
        events,
        names,
        stats,
    }
}
