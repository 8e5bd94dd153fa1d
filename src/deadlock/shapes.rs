//! Deadlock shapes `cprace gen` weaves into its traces (`--deadlocks`): short
//! scripts on threads and locks of their own, run one event at a time between
//! the background's events, in an order that never deadlocks, so that only a
//! reordering does (or, for some shapes, no reordering can).
//!
//! - `inversion`: two threads take two locks in opposite orders (predicted);
//! - `philosophers`: N threads each take fork i then fork i+1 (predicted,
//!   a cycle of N locks);
//! - `gated`: the inversion inside sections on a gate lock (no deadlock; an
//!   inversion `--all` lists);
//! - `forkjoin`: the inversion with the second half in a thread forked after
//!   the first (no deadlock; `--all` lists it);
//! - `hidden`: the inversion with its halves ordered by happens-before
//!   through a third lock: only a reordering across those critical sections
//!   reaches it (predicted);
//! - `join`: a thread holding a lock while it joins a thread that requests
//!   it (predicted through the join; no lock-order cycle at all).
//!
//! Each instance of `forkjoin` and `join` forks new threads; the others reuse
//! theirs.

use crate::trace::{Event, Op};

/// A deadlock shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Two threads, two locks, opposite orders.
    Inversion,
    /// N dining philosophers.
    Philosophers,
    /// The inversion under a gate lock.
    Gated,
    /// The inversion ordered by fork and join.
    ForkJoin,
    /// The inversion ordered by happens-before through another lock.
    Hidden,
    /// A lock held across the join of a thread that requests it.
    Join,
}

impl Shape {
    /// Every shape, in the order `all` lists them.
    pub const ALL: [Shape; 6] = [
        Shape::Inversion,
        Shape::Philosophers,
        Shape::Gated,
        Shape::ForkJoin,
        Shape::Hidden,
        Shape::Join,
    ];

    /// The name `--deadlocks` takes.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Inversion => "inversion",
            Shape::Philosophers => "philosophers",
            Shape::Gated => "gated",
            Shape::ForkJoin => "forkjoin",
            Shape::Hidden => "hidden",
            Shape::Join => "join",
        }
    }

    /// Threads of its own (kept) and new threads per instance.
    fn threads(self, philosophers: u32) -> (u32, u32) {
        match self {
            Shape::Philosophers => (philosophers, 0),
            Shape::ForkJoin => (1, 1),
            Shape::Join => (1, 2),
            _ => (2, 0),
        }
    }

    /// Locks of its own.
    fn locks(self, philosophers: u32) -> u32 {
        match self {
            Shape::Philosophers => philosophers,
            Shape::Gated | Shape::Hidden => 3,
            _ => 2,
        }
    }
}

/// The shapes `--deadlocks` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shapes(pub Vec<Shape>);

/// Parse `--deadlocks`: `all`, `none`, or shape names separated by commas.
pub fn parse(s: &str) -> Result<Shapes, String> {
    match s.trim() {
        "all" => return Ok(Shapes(Shape::ALL.to_vec())),
        "none" | "" => return Ok(Shapes(Vec::new())),
        _ => {}
    }
    s.split(',')
        .map(|name| {
            Shape::ALL
                .into_iter()
                .find(|k| k.name() == name.trim())
                .ok_or_else(|| {
                    format!(
                        "unknown deadlock shape `{name}`; expected all, none or some of: {}",
                        Shape::ALL.map(Shape::name).join(", ")
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Shapes)
}

/// What to weave in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The shapes, started in turn.
    pub shapes: Vec<Shape>,
    /// Start an instance every this many events (0: each shape once, spread
    /// over the trace).
    pub every: u64,
    /// Philosophers at the table.
    pub philosophers: u32,
}

/// One scripted event: thread and target relative to the shape's own
/// (`Own`) or the instance's new threads.
#[derive(Clone, Copy, Debug)]
enum Who {
    Own(u32),
    New(u32),
}

/// An instance being woven in.
#[derive(Debug)]
struct Running {
    events: Vec<Event>,
    next: usize,
}

/// The weaving state.
#[derive(Debug)]
pub struct Weaver {
    plan: Plan,
    /// Per shape: first own thread and first own lock.
    bases: Vec<(u32, u32)>,
    /// The next new thread.
    fresh: u32,
    started: u64,
    running: Option<Running>,
    /// Events in the trace (for spreading single instances).
    total: u64,
}

impl Weaver {
    /// Weave `plan` into a trace of `total` events whose background uses
    /// `threads` threads and `locks` locks.
    pub fn new(plan: Plan, total: u64, threads: u32, locks: u32) -> Weaver {
        let mut bases = Vec::new();
        let (mut t, mut l) = (threads, locks);
        for s in &plan.shapes {
            bases.push((t, l));
            t += s.threads(plan.philosophers).0;
            l += s.locks(plan.philosophers);
        }
        Weaver {
            plan,
            bases,
            fresh: t,
            started: 0,
            running: None,
            total,
        }
    }

    /// Threads and locks a trace of `total` events may use beyond the
    /// background's (an upper bound on the new threads).
    pub fn extra(plan: &Plan, total: u64) -> (u32, u32) {
        let instances = Self::instances(plan, total);
        let mut threads = 0u64;
        let mut locks = 0u32;
        for (i, s) in plan.shapes.iter().enumerate() {
            let (own, new) = s.threads(plan.philosophers);
            let n = plan.shapes.len() as u64;
            let mine = instances / n + u64::from((i as u64) < instances % n);
            threads += u64::from(own) + u64::from(new) * mine;
            locks += s.locks(plan.philosophers);
        }
        (threads.min(u64::from(u32::MAX / 2)) as u32, locks)
    }

    fn instances(plan: &Plan, total: u64) -> u64 {
        if plan.shapes.is_empty() {
            0
        } else {
            // Every 0: each shape once.
            total
                .checked_div(plan.every)
                .unwrap_or(plan.shapes.len() as u64)
        }
    }

    /// Events the running instance still has to emit.
    pub fn left(&self) -> u64 {
        self.running
            .as_ref()
            .map_or(0, |r| (r.events.len() - r.next) as u64)
    }

    /// Whether thread `t` belongs to the shapes (the background leaves it).
    pub fn owns(&self, t: u32) -> bool {
        self.bases.first().is_some_and(|&(b, _)| t >= b)
    }

    /// The next shape event, if one is due: `emitted` events so far, `room`
    /// events the trace may still spend on shapes, `coin` a fair coin for
    /// interleaving with the background. Its `loc` is a line number of the
    /// shape's script (from 1), to be made a location of its thread.
    pub fn next(&mut self, emitted: u64, room: u64, coin: bool) -> Option<Event> {
        if self.running.is_none() {
            let instances = Self::instances(&self.plan, self.total);
            let spacing = match self.plan.every {
                0 => self.total / (instances + 1),
                every => every,
            };
            if self.started >= instances || emitted < (self.started + 1) * spacing {
                return None;
            }
            let k = (self.started % self.plan.shapes.len() as u64) as usize;
            let events = self.script(k);
            if events.len() as u64 > room {
                return None;
            }
            self.started += 1;
            self.running = Some(Running { events, next: 0 });
        }
        let r = self.running.as_mut()?;
        if !coin && r.next > 0 {
            return None;
        }
        let e = r.events[r.next];
        r.next += 1;
        if r.next == r.events.len() {
            self.running = None;
        }
        Some(e)
    }

    /// The events of an instance of shape `k`.
    fn script(&mut self, k: usize) -> Vec<Event> {
        let shape = self.plan.shapes[k];
        let (t0, l0) = self.bases[k];
        let new = self.fresh;
        self.fresh += shape.threads(self.plan.philosophers).1;
        let thread = |w: Who| match w {
            Who::Own(i) => t0 + i,
            Who::New(i) => new + i,
        };
        let mut out = Vec::new();
        let mut ev = |w: Who, op: Op, target: u32, line: u32| {
            let t = thread(w);
            out.push(Event {
                thread: t,
                target,
                loc: line,
                op,
                mask: 0,
            });
        };
        let (x, y) = (Who::Own(0), Who::Own(1));
        let (a, b, c) = (l0, l0 + 1, l0 + 2);
        // Nested sections: `locks` taken in order, released in reverse.
        let nest = |ev: &mut dyn FnMut(Who, Op, u32, u32), w: Who, locks: &[u32]| {
            for (i, &l) in locks.iter().enumerate() {
                ev(w, Op::Acquire, l, 1 + i as u32);
            }
            for (i, &l) in locks.iter().enumerate().rev() {
                ev(w, Op::Release, l, 1 + locks.len() as u32 + i as u32);
            }
        };
        match shape {
            Shape::Inversion => {
                nest(&mut ev, x, &[a, b]);
                nest(&mut ev, y, &[b, a]);
            }
            Shape::Philosophers => {
                let n = self.plan.philosophers;
                for i in 0..n {
                    nest(&mut ev, Who::Own(i), &[l0 + i, l0 + (i + 1) % n]);
                }
            }
            Shape::Gated => {
                nest(&mut ev, x, &[c, a, b]);
                nest(&mut ev, y, &[c, b, a]);
            }
            Shape::ForkJoin => {
                nest(&mut ev, x, &[a, b]);
                let child = Who::New(0);
                ev(x, Op::Fork, thread(child), 5);
                nest(&mut ev, child, &[b, a]);
                ev(x, Op::Join, thread(child), 6);
            }
            Shape::Hidden => {
                nest(&mut ev, x, &[a, b]);
                nest(&mut ev, x, &[c]);
                nest(&mut ev, y, &[c]);
                nest(&mut ev, y, &[b, a]);
            }
            Shape::Join => {
                let (c2, c3) = (Who::New(0), Who::New(1));
                ev(x, Op::Fork, thread(c2), 7);
                nest(&mut ev, c2, &[a, b]);
                ev(x, Op::Acquire, b, 8);
                ev(x, Op::Fork, thread(c3), 9);
                nest(&mut ev, c3, &[a]);
                ev(x, Op::Join, thread(c2), 10);
                ev(x, Op::Release, b, 11);
                ev(x, Op::Join, thread(c3), 12);
            }
        }
        out
    }
}
