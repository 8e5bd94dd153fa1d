//! What the HB tests share: a compact trace syntax, running one streaming
//! engine, the generator configurations of the property tests, and models of
//! FastTrack's and Goldilocks' reports built on the HB oracle.

use cprace::engine::detector::run_trace;
use cprace::relation::Engine;
use cprace::report::{Race, Report};
use cprace::tools::generate::{self, Config, Rng};
use cprace::trace::{EventId, Format, Op, Trace, load_str};

use super::oracle::{hb, hb_closure};

/// Parse a trace written one event per line as `thread op target`
/// (e.g. `T1 acq l`), blank lines ignored.
pub fn tr(text: &str) -> Trace {
    let mut std = String::new();
    for (i, line) in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(parts.len(), 3, "bad test line `{line}`");
        std.push_str(&format!("{}|{}({})|L{}\n", parts[0], parts[1], parts[2], i));
    }
    load_str(&std, Some(Format::Std)).expect("test trace is well formed")
}

/// Run streaming HB engine `engine` (or `eraser`, lockset's) over a trace,
/// reporting pairs less than `window` apart.
pub fn run(engine: &str, window: Option<u64>, t: &Trace) -> Report {
    use cprace::race::hb::{EpochDetector, GoldilocksDetector, TcDetector, VcDetector};
    match <Engine as clap::ValueEnum>::from_str(engine, false).expect("an engine name") {
        Engine::Vc => run_trace(VcDetector::new(window), t),
        Engine::TreeClock => run_trace(TcDetector::new(window), t),
        Engine::Epoch => run_trace(EpochDetector::new(window), t),
        Engine::Lockset => run_trace(GoldilocksDetector::new(window), t),
        Engine::Eraser => run_trace(cprace::race::lockset::EraserDetector::new(window), t),
        other => panic!("{other} is no streaming HB or lockset engine"),
    }
}

/// `(racy event, witness)` pairs of a report.
pub fn pairs(r: &Report) -> Vec<(EventId, EventId)> {
    r.races.iter().map(|x| (x.second.id, x.first.id)).collect()
}

/// Generator configuration for property-test seed `seed`: 2-6 threads, 1-4
/// locks, nesting up to 3, fork/join, volatiles and re-entrant acquires in
/// varying amounts. Every fourth seed is "racy" (many unprotected accesses);
/// the others mostly lock their accesses, so races are rarer and later and
/// many variables stay race-free through intricate synchronization.
pub fn config(seed: u64, events: u64) -> Config {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xABCD);
    let mut f = |lo: f64, hi: f64| lo + (hi - lo) * (r.below(1000) as f64 / 1000.0);
    let (locks, unlocked, volatile) = match seed % 4 {
        0 => (1 + (f(0.0, 4.0) as u32).min(3), f(0.2, 1.0), f(0.0, 0.1)),
        1 => (1 + (f(0.0, 2.0) as u32).min(1), f(0.0, 0.05), f(0.0, 0.1)),
        2 => (2 + (f(0.0, 3.0) as u32).min(2), 0.0, f(0.0, 0.05)),
        _ => (1 + (f(0.0, 3.0) as u32).min(2), f(0.0, 0.1), f(0.1, 0.3)),
    };
    let mut r = Rng::new(seed ^ 0x1234_5678);
    Config {
        events,
        threads: 2 + r.below(5) as u32,
        locks,
        vars: 1 + r.below(6) as u32,
        volatiles: if volatile > 0.0 {
            1 + r.below(2) as u32
        } else {
            0
        },
        max_nesting: 1 + r.below(3) as u32,
        p_acquire: 0.05 + 0.3 * (r.below(100) as f64 / 100.0),
        p_release: 0.1 + 0.4 * (r.below(100) as f64 / 100.0),
        p_unlocked_access: unlocked,
        p_write: 0.2 + 0.6 * (r.below(100) as f64 / 100.0),
        p_volatile: volatile,
        fork_join: r.below(3) != 0,
        p_reentrant: 0.05 * (r.below(100) as f64 / 100.0),
        p_out_of_order_release: 0.2 * (r.below(100) as f64 / 100.0),
        locs_per_thread: 4,
        p_hot: 0.3,
        seed,
        ..Config::default()
    }
}

/// A generated trace for `seed`.
pub fn generated(seed: u64, events: u64) -> Trace {
    generate::trace(&config(seed, events))
}

/// [`config`] with a share of the data accesses atomic (relaxed and
/// synchronizing, on the same variables as the plain ones) and, for odd
/// seeds, random byte masks.
pub fn atomic_config(seed: u64, events: u64) -> Config {
    Config {
        p_atomic: [0.1, 0.3, 0.6][(seed % 3) as usize],
        masks: seed % 2 == 1,
        ..config(seed, events)
    }
}

/// A generated trace of [`atomic_config`].
pub fn generated_atomic(seed: u64, events: u64) -> Trace {
    generate::trace(&atomic_config(seed, events))
}

/// One line per event, for failure messages (the suite's one dump).
pub use crate::common::traces::dump;

/// First race per variable as comparable tuples.
pub fn firsts(r: &Report) -> Vec<Race> {
    r.first_race_per_variable()
}

/// Segment number of every event: 1 + the release/fork/volatile-write events
/// of its thread before it (FastTrack's epoch clock of the event).
fn segments(t: &Trace) -> Vec<u32> {
    let mut seg = vec![1u32; t.num_threads()];
    t.events
        .iter()
        .map(|e| {
            let s = seg[e.thread as usize];
            if matches!(e.op, Op::Release | Op::Fork | Op::VolatileWrite) {
                seg[e.thread as usize] += 1;
            }
            s
        })
        .collect()
}

/// Keep the larger of two witness ids.
fn latest(best: &mut Option<usize>, cand: usize) {
    if best.is_none_or(|b| cand > b) {
        *best = Some(cand);
    }
}

/// A shape of an access: its variable, the bytes it touches and its kind
/// (0 plain, 1 volatile, 2 relaxed atomic), the unit the `epoch` and
/// `lockset` engines keep their state in.
fn shape(e: &cprace::trace::Event) -> (u32, u8, u8) {
    let kind = match e.op {
        Op::VolatileRead | Op::VolatileWrite => 1,
        Op::AtomicRead | Op::AtomicWrite => 2,
        _ => 0,
    };
    (e.target, e.bytes(), kind)
}

/// Whether an access of shape `a` may conflict with one of shape `b` (same
/// variable, bytes overlap, not both atomic).
fn may_conflict(a: (u32, u8, u8), b: (u32, u8, u8)) -> bool {
    a.0 == b.0 && a.1 & b.1 != 0 && (a.2 == 0 || b.2 == 0)
}

/// Brute-force model of Goldilocks' tracked accesses with orderings from the
/// HB closure, per shape: a plain shape keeps its last write and the latest
/// read per thread since it, an atomic one the latest write and read per
/// thread; an access is checked against every shape it may conflict with.
/// The exact report the `lockset` engine must produce, also after the first
/// race.
pub fn goldilocks_model(t: &Trace, window: Option<u64>) -> Vec<(EventId, EventId)> {
    use std::collections::BTreeMap;
    let pred = hb_closure(t);
    let near = |i: usize, j: usize| window.is_none_or(|k| ((j - i) as u64) < k);
    // Per shape (variable, bytes, kind): its tracked writes and reads.
    type Tracked = (Vec<usize>, Vec<usize>);
    let mut state: BTreeMap<(u32, u8, u8), Tracked> = BTreeMap::new();
    let mut out = Vec::new();
    for (j, e) in t.events.iter().enumerate() {
        if !e.op.is_memory() {
            continue;
        }
        let me = shape(e);
        let write = e.op.is_write();
        let unordered = |i: usize| t.events[i].thread != e.thread && near(i, j) && !hb(&pred, i, j);
        let mut best = None;
        for (&s, (writes, reads)) in &state {
            if !may_conflict(s, me) {
                continue;
            }
            let reads = if write { &reads[..] } else { &[][..] };
            for &i in writes.iter().chain(reads) {
                if unordered(i) {
                    latest(&mut best, i);
                }
            }
        }
        let (writes, reads) = state.entry(me).or_default();
        let same = |i: &usize| t.events[*i].thread == e.thread;
        if !write {
            reads.retain(|i| !same(i));
            reads.push(j);
        } else if me.2 == 0 {
            writes.clear();
            reads.clear();
            writes.push(j);
        } else {
            writes.retain(|i| !same(i));
            writes.push(j);
        }
        if let Some(i) = best {
            out.push((j as EventId, i as EventId));
        }
    }
    out
}

/// Brute-force model of FastTrack2's Figure 1 (epochs as per-thread segment
/// numbers, same-epoch rules only without a window) with orderings from the
/// HB closure, per shape (see [`goldilocks_model`]; the writes of an atomic
/// shape are kept like reads): the exact report the `epoch` engine must
/// produce.
pub fn fasttrack_model(t: &Trace, window: Option<u64>) -> Vec<(EventId, EventId)> {
    use std::collections::BTreeMap;
    #[derive(Clone, Default)]
    enum Slot {
        #[default]
        Empty,
        Epoch(usize),
        Shared(Vec<Option<usize>>),
    }
    let pred = hb_closure(t);
    let seg = segments(t);
    let fast = window.is_none();
    let near = |i: usize, j: usize| window.is_none_or(|k| ((j - i) as u64) < k);
    let nt = t.num_threads();
    // Per shape: (W, R).
    let mut state: BTreeMap<(u32, u8, u8), (Slot, Slot)> = BTreeMap::new();
    let mut out = Vec::new();
    for (j, e) in t.events.iter().enumerate() {
        if !e.op.is_memory() {
            continue;
        }
        let me = shape(e);
        let write = e.op.is_write();
        let th = e.thread as usize;
        // Ordered in the FastTrack sense: same thread, or HB.
        let ord = |i: usize| t.events[i].thread == e.thread || hb(&pred, i, j);
        let same_epoch = |i: usize| t.events[i].thread == e.thread && seg[i] == seg[j];
        let own = state.entry(me).or_default();
        let slot = if write { &mut own.0 } else { &mut own.1 };
        if fast {
            match slot {
                Slot::Epoch(i) if same_epoch(*i) => {
                    *i = j;
                    continue;
                }
                Slot::Shared(v) if v[th].is_some_and(same_epoch) => {
                    v[th] = Some(j);
                    continue;
                }
                _ => {}
            }
        }
        let mut best = None;
        for (&s, (w, r)) in &state {
            if !may_conflict(s, me) {
                continue;
            }
            for slot in [Some(w), write.then_some(r)].into_iter().flatten() {
                let held: Vec<usize> = match slot {
                    Slot::Empty => Vec::new(),
                    Slot::Epoch(i) => vec![*i],
                    Slot::Shared(v) => v.iter().flatten().copied().collect(),
                };
                for i in held {
                    if !ord(i) && near(i, j) {
                        latest(&mut best, i);
                    }
                }
            }
        }
        let own = state.get_mut(&me).expect("made above");
        if write && me.2 == 0 {
            own.0 = Slot::Epoch(j);
        } else {
            let slot = if write { &mut own.0 } else { &mut own.1 };
            *slot = match std::mem::take(slot) {
                Slot::Empty => Slot::Epoch(j),
                Slot::Epoch(i) if ord(i) => Slot::Epoch(j),
                Slot::Epoch(i) => {
                    let mut v = vec![None; nt];
                    v[t.events[i].thread as usize] = Some(i);
                    v[th] = Some(j);
                    Slot::Shared(v)
                }
                Slot::Shared(mut v) => {
                    v[th] = Some(j);
                    Slot::Shared(v)
                }
            };
        }
        if let Some(i) = best {
            out.push((j as EventId, i as EventId));
        }
    }
    out
}
