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
            fork_join: true,
            p_reentrant: 0.02,
            p_out_of_order_release: 0.05,
            locs_per_thread: 16,
            p_hot: 0.3,
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
            _ => return None,
        })
    }

    /// Names of the profiles [`Config::profile`] knows.
    pub const PROFILES: &'static [&'static str] =
        &["small", "ftpserver", "long-cs", "many-threads", "bench"];
}

#[derive(Clone, Debug, Default)]
struct ThreadState {
    started: bool,
    done: bool,
    joined: bool,
    held: Vec<u32>,
    /// Re-entrant depth per held lock (parallel to `held`).
    extra: Vec<u32>,
    budget: u64,
}

/// Streaming generator: an iterator of well-formed events. Thread `i` is named
/// `T{i}`, lock `l{i}`, variable `x{i}`, volatile `v{i}`, location `f{t}.java:{n}`.
pub struct Generator {
    cfg: Config,
    rng: Rng,
    threads: Vec<ThreadState>,
    lock_holder: Vec<Option<u32>>,
    emitted: u64,
    next_fork: u32,
    pending: std::collections::VecDeque<Event>,
}

impl Generator {
    /// A generator for `cfg`.
    pub fn new(cfg: Config) -> Generator {
        let n = cfg.threads.max(1) as usize;
        let mut threads = vec![ThreadState::default(); n];
        let per_thread = cfg.events / n as u64 + 1;
        for (i, t) in threads.iter_mut().enumerate() {
            t.started = !cfg.fork_join || i == 0;
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
            next_fork: 1,
            pending: Default::default(),
            cfg,
        }
    }

    /// The name tables matching the ids this generator emits.
    pub fn names(cfg: &Config) -> Names {
        let mut n = Names::default();
        fill(&mut n.threads, cfg.threads.max(1), |i| format!("T{i}"));
        fill(&mut n.locks, cfg.locks, |i| format!("l{i}"));
        fill(&mut n.vars, cfg.vars, |i| format!("x{i}"));
        fill(&mut n.vars, cfg.volatiles, |i| format!("v{i}"));
        for t in 0..cfg.threads.max(1) {
            for l in 0..cfg.locs_per_thread.max(1) {
                intern(&mut n.locs, &format!("f{t}.java:{l}"));
            }
        }
        n
    }

    fn loc(&mut self, t: u32) -> u32 {
        let per = self.cfg.locs_per_thread.max(1);
        1 + t * per + self.rng.below(per as u64) as u32
    }

    fn ev(&mut self, t: u32, op: Op, target: u32) -> Event {
        let loc = self.loc(t);
        Event {
            thread: t,
            target,
            loc,
            op,
        }
    }

    fn runnable(&self, t: usize) -> bool {
        let s = &self.threads[t];
        s.started && !s.done
    }

    /// Produce the next event of thread `t`, or None if it had nothing to do.
    fn step(&mut self, t: u32) -> Option<Event> {
        let c = self.cfg.clone();
        let ti = t as usize;
        let in_cs = !self.threads[ti].held.is_empty();
        // A thread past its budget winds down: release everything, then stop.
        if self.threads[ti].budget == 0 {
            if in_cs {
                return Some(self.release(t));
            }
            self.threads[ti].done = true;
            return None;
        }
        self.threads[ti].budget -= 1;
        if in_cs && self.rng.chance(c.p_release) {
            return Some(self.release(t));
        }
        if c.fork_join && t == 0 {
            if self.next_fork < c.threads && self.rng.chance(0.2) {
                let u = self.next_fork;
                self.next_fork += 1;
                self.threads[u as usize].started = true;
                return Some(self.ev(0, Op::Fork, u));
            }
            if !in_cs || self.rng.chance(0.5) {
                let done: Vec<u32> = (1..c.threads)
                    .filter(|&u| self.threads[u as usize].done && !self.threads[u as usize].joined)
                    .collect();
                if !done.is_empty() && self.rng.chance(0.3) {
                    let u = done[self.rng.below(done.len() as u64) as usize];
                    self.threads[u as usize].joined = true;
                    return Some(self.ev(0, Op::Join, u));
                }
            }
        }
        let depth = self.threads[ti].held.len() as u32;
        if c.locks > 0 && depth < c.max_nesting && self.rng.chance(c.p_acquire) {
            let l = self.rng.below(c.locks as u64) as u32;
            match self.lock_holder[l as usize] {
                None => {
                    self.lock_holder[l as usize] = Some(t);
                    self.threads[ti].held.push(l);
                    self.threads[ti].extra.push(0);
                    return Some(self.ev(t, Op::Acquire, l));
                }
                Some(h) if h == t && self.rng.chance(c.p_reentrant / c.p_acquire.max(1e-9)) => {
                    let p = self.threads[ti]
                        .held
                        .iter()
                        .position(|&x| x == l)
                        .unwrap_or(0);
                    self.threads[ti].extra[p] += 1;
                    return Some(self.ev(t, Op::Acquire, l));
                }
                _ => {}
            }
        }
        if c.volatiles > 0 && self.rng.chance(c.p_volatile) {
            let v = c.vars + self.rng.below(c.volatiles as u64) as u32;
            let op = if self.rng.chance(c.p_write) {
                Op::VolatileWrite
            } else {
                Op::VolatileRead
            };
            return Some(self.ev(t, op, v));
        }
        if c.vars == 0 || (!in_cs && !self.rng.chance(c.p_unlocked_access)) {
            return None;
        }
        let hot = (c.vars / 16).max(1);
        let x = if self.rng.chance(c.p_hot) {
            self.rng.below(hot as u64) as u32
        } else {
            self.rng.below(c.vars as u64) as u32
        };
        let op = if self.rng.chance(c.p_write) {
            Op::Write
        } else {
            Op::Read
        };
        Some(self.ev(t, op, x))
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
        self.ev(t, Op::Release, l)
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
        if let Some(e) = self.pending.pop_front() {
            self.emitted += 1;
            return Some(e);
        }
        if self.emitted >= self.cfg.events {
            // Wind down: release every held lock so the trace ends cleanly.
            for t in 0..self.threads.len() {
                while !self.threads[t].held.is_empty() {
                    let e = self.release(t as u32);
                    self.pending.push_back(e);
                }
            }
            let e = self.pending.pop_front()?;
            return Some(e);
        }
        let n = self.threads.len() as u64;
        for _ in 0..64 {
            let t = self.rng.below(n) as usize;
            if !self.runnable(t) {
                continue;
            }
            if let Some(e) = self.step(t as u32) {
                self.emitted += 1;
                return Some(e);
            }
        }
        // Every thread we tried was idle: let thread 0 (or any live one) act.
        let live = (0..self.threads.len()).find(|&t| self.runnable(t))?;
        let e = self.ev(live as u32, Op::Read, 0);
        if self.cfg.vars == 0 {
            return None;
        }
        self.emitted += 1;
        Some(e)
    }
}

/// Generate a whole trace in memory (tests and small experiments).
pub fn trace(cfg: &Config) -> Trace {
    let names = Generator::names(cfg);
    let mut events = Vec::with_capacity(cfg.events as usize + 8);
    let mut b = crate::trace::validate::Builder::new("<generated>", |_, e: &Event| events.push(*e));
    // Validate through the same builder as every loader: generated traces obey
    // exactly the rules real ones do, and re-entrant acquires get marked.
    for ev in Generator::new(cfg.clone()) {
        let target = match ev.op.target_kind() {
            crate::trace::model::TargetKind::Variable => names.var(ev.target),
            crate::trace::model::TargetKind::Lock => names.lock(ev.target),
            crate::trace::model::TargetKind::Thread => names.thread(ev.target),
        };
        b.push(
            0,
            b"",
            names.thread(ev.thread),
            ev.op.as_str(),
            target,
            names.loc(ev.loc),
        )
        .expect("generator emits well-formed traces");
    }
    let (names, stats) = b.finish();
    Trace {
        events,
        names,
        stats,
    }
}
