//! Eraser's lockset discipline check (Savage et al., 1997): `--relation
//! lockset --engine eraser`. UNSOUND as a race predictor: it reports
//! violations of the discipline "every shared, written variable is protected
//! by one lock", not proven races, and it ignores fork/join and volatile
//! synchronization.
//!
//! Per variable: a candidate lockset `C(x)` (the intersection of the locks
//! held at every access so far) and Eraser's states Virgin → Exclusive(t) →
//! Shared → Shared-Modified. An access is reported when, after it, `x` is
//! Shared-Modified, `C(x)` is empty, and some earlier conflicting access of
//! another thread lies within the window (that access is the witness: the
//! latest such one).
//!
//! # Choices that keep HB's racy events a subset
//! If two conflicting accesses of different threads are HB-unordered, they
//! hold no common lock (critical sections of one lock are ordered by
//! release → acquire), so the intersection over all accesses is empty by the
//! time of the second one. Eraser's state machine would still hide such races
//! in two ways, both changed here:
//!
//! - the original does not refine `C(x)` in the Exclusive state (it assumes the
//!   first thread is initializing the variable and hands it over safely); we
//!   refine from the very first access, so the first thread's locks count;
//! - the original enters Shared (never reported) when a second thread reads a
//!   variable only the first thread wrote; we enter Shared-Modified as soon as
//!   two threads accessed the variable and any of the accesses was a write.
//!
//! Fork/join and volatile edges are ignored (a hand-over through them is
//! reported), which only adds reports. Hence every HB-racy event (with or
//! without a window) is reported here, and so are HB's racy variables.
//!
//! # Atomics and bytes
//! Atomic accesses (`vr`, `vw`, `ar`, `aw`) are accesses of their variable
//! like plain ones: they refine its lockset and move its state (a variable
//! only ever accessed atomically still has no report, since two atomic
//! accesses never conflict, so there is no witness). Like Eraser, which
//! watched 32-bit words, the check works per variable (an 8-byte cell in
//! recorded traces) and ignores byte masks: the witness is the latest
//! access of another thread whose kind conflicts (plain with anything that
//! writes, atomic with plain), whatever bytes it touched. Both keep HB's
//! racy events a subset: HB's witness is such an access, so the latest one
//! is no farther back.

use rustc_hash::FxHashMap;
use serde_json::json;

use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op};

/// Id of the empty lockset.
const EMPTY: u32 = 0;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Virgin,
    Exclusive,
    Shared,
    SharedModified,
}

#[derive(Clone, Copy, Debug, Default)]
struct VarState {
    state: State,
    owner: u32,
    written: bool,
    cset: u32,
    /// The two latest plain writes and the two latest plain reads by
    /// distinct threads: the witness (the latest conflicting access of
    /// another thread) is the later of the first one not by the accessing
    /// thread.
    writes: Latest2,
    reads: Latest2,
    /// The same for atomic writes and reads, in `atomic[atomics - 1]` (0:
    /// none yet).
    atomics: u32,
}

/// The latest access and the latest one by a different thread.
#[derive(Clone, Copy, Debug, Default)]
struct Latest2([Option<Access>; 2]);

impl Latest2 {
    fn push(&mut self, a: Access) {
        match self.0[0] {
            Some(x) if x.thread != a.thread => self.0 = [Some(a), Some(x)],
            _ => self.0[0] = Some(a),
        }
    }

    /// The latest access not by thread `t`.
    fn other_than(&self, t: u32) -> Option<Access> {
        self.0.iter().flatten().find(|a| a.thread != t).copied()
    }
}

/// Interned, sorted locksets with cached operations (Eraser's lockset table).
#[derive(Debug)]
struct LockSets {
    sets: Vec<Box<[u32]>>,
    index: FxHashMap<Box<[u32]>, u32>,
    inter: FxHashMap<(u32, u32), u32>,
    scratch: Vec<u32>,
}

impl LockSets {
    fn new() -> Self {
        let empty: Box<[u32]> = Box::new([]);
        let mut index = FxHashMap::default();
        index.insert(empty.clone(), EMPTY);
        LockSets {
            sets: vec![empty],
            index,
            inter: FxHashMap::default(),
            scratch: Vec::new(),
        }
    }

    fn intern_scratch(&mut self) -> u32 {
        if let Some(&i) = self.index.get(self.scratch.as_slice()) {
            return i;
        }
        let b: Box<[u32]> = self.scratch.as_slice().into();
        let i = self.sets.len() as u32;
        self.sets.push(b.clone());
        self.index.insert(b, i);
        i
    }

    fn intern(&mut self, set: &[u32]) -> u32 {
        if let Some(&i) = self.index.get(set) {
            return i;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(set);
        self.intern_scratch()
    }

    #[inline]
    fn intersect(&mut self, a: u32, b: u32) -> u32 {
        if a == b || a == EMPTY {
            return a;
        }
        if b == EMPTY {
            return EMPTY;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&r) = self.inter.get(&key) {
            return r;
        }
        self.scratch.clear();
        let (x, y) = (&self.sets[a as usize], &self.sets[b as usize]);
        self.scratch
            .extend(x.iter().copied().filter(|l| y.binary_search(l).is_ok()));
        let r = self.intern_scratch();
        self.inter.insert(key, r);
        r
    }
}

#[derive(Clone, Debug, Default)]
struct Held {
    locks: Vec<u32>,
    /// Interned id of `locks`, or None after a change.
    id: Option<u32>,
}

/// Streaming Eraser detector.
pub struct EraserDetector {
    sets: LockSets,
    /// Locks held by each thread (sorted), interned only when an access needs
    /// them: nesting 40,000 locks interns one set, not 40,000 growing ones.
    held: Vec<Held>,
    vars: Vec<VarState>,
    /// Atomic writes and reads of the variables that have any.
    atomic: Vec<[Latest2; 2]>,
    window: Option<u64>,
    pub(crate) report: Report,
}

impl EraserDetector {
    /// A detector whose witnesses lie less than `window` events before the
    /// reported access (the candidate lockset always covers the whole trace).
    pub fn new(window: Option<u64>) -> Self {
        EraserDetector {
            sets: LockSets::new(),
            held: Vec::new(),
            vars: Vec::new(),
            atomic: Vec::new(),
            window,
            report: Report::new(Relation::Lockset, Engine::Eraser, window, 0),
        }
    }

    /// Feed the next event.
    #[inline]
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let t = ev.thread as usize;
        if t >= self.held.len() {
            self.held.resize_with(t + 1, Held::default);
        }
        let h = &mut self.held[t];
        match ev.op {
            Op::Acquire => {
                if let Err(p) = h.locks.binary_search(&ev.target) {
                    h.locks.insert(p, ev.target);
                }
                h.id = None;
            }
            Op::Release => {
                if let Ok(p) = h.locks.binary_search(&ev.target) {
                    h.locks.remove(p);
                }
                h.id = None;
            }
            op if op.is_memory() => self.access(id, ev),
            _ => {}
        }
    }

    fn access(&mut self, id: EventId, ev: &Event) {
        let v = ev.target as usize;
        if v >= self.vars.len() {
            self.vars.resize(v + 1, VarState::default());
        }
        let h = &mut self.held[ev.thread as usize];
        let held = match h.id {
            Some(i) => i,
            None => {
                let i = self.sets.intern(&h.locks);
                h.id = Some(i);
                i
            }
        };
        let x = &mut self.vars[v];
        let write = ev.op.is_write();
        match x.state {
            State::Virgin => {
                x.state = State::Exclusive;
                x.owner = ev.thread;
                x.cset = held;
            }
            State::Exclusive if x.owner == ev.thread => x.cset = self.sets.intersect(x.cset, held),
            State::Exclusive | State::Shared => {
                x.cset = self.sets.intersect(x.cset, held);
                x.state = if x.written || write {
                    State::SharedModified
                } else {
                    State::Shared
                };
            }
            State::SharedModified => x.cset = self.sets.intersect(x.cset, held),
        }
        x.written |= write;
        let violating = x.state == State::SharedModified && x.cset == EMPTY;
        let me = Access::of(id, ev);
        let t = ev.thread;
        let later = |a: Option<Access>, b: Option<Access>| match (a, b) {
            (Some(a), Some(b)) => Some(if a.id > b.id { a } else { b }),
            (a, b) => a.or(b),
        };
        // Plain writes conflict with every access, plain reads with writes.
        let mut witness = x.writes.other_than(t);
        if write {
            witness = later(witness, x.reads.other_than(t));
        }
        if ev.op.is_atomic() || x.atomics != 0 {
            if x.atomics == 0 {
                self.atomic.push(Default::default());
                x.atomics = self.atomic.len() as u32;
            }
            let [aw, ar] = &mut self.atomic[x.atomics as usize - 1];
            // Atomic accesses conflict with plain ones only.
            if !ev.op.is_atomic() {
                witness = later(witness, aw.other_than(t));
                if write {
                    witness = later(witness, ar.other_than(t));
                }
            }
            match (ev.op.is_atomic(), write) {
                (true, true) => aw.push(me),
                (true, false) => ar.push(me),
                (false, true) => x.writes.push(me),
                (false, false) => x.reads.push(me),
            }
        } else if write {
            x.writes.push(me);
        } else {
            x.reads.push(me);
        }
        if violating
            && let Some(w) = witness
            && crate::engine::history::in_window(self.window, id, w.id)
        {
            self.report.push(Race {
                first: w,
                second: me,
                variable: ev.target,
            });
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let mut counts = [0u64; 4];
        let mut empty = 0u64;
        for x in &self.vars {
            counts[x.state as usize] += 1;
            empty += (x.state == State::SharedModified && x.cset == EMPTY) as u64;
        }
        let s = &mut self.report.stats;
        s.insert(
            "exclusive_variables".into(),
            json!(counts[State::Exclusive as usize]),
        );
        s.insert(
            "shared_variables".into(),
            json!(counts[State::Shared as usize]),
        );
        s.insert(
            "shared_modified_variables".into(),
            json!(counts[State::SharedModified as usize]),
        );
        s.insert("empty_lockset_variables".into(), json!(empty));
        s.insert("distinct_locksets".into(), json!(self.sets.sets.len()));
        self.report.notes.push(
            "UNSOUND: Eraser reports lockset-discipline violations (no common lock protects a shared, written variable), \
             not proven races; fork/join and volatile synchronization are ignored"
                .into(),
        );
        self.report.normalize();
        self.report
    }
}

crate::impl_detector!(EraserDetector);
