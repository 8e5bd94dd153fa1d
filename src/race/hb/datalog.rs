//! The HB closure over synchronization points, within the window, in datafrog.
//!
//! ```text
//! edge(x, y): consecutive points of a thread; a release -> the next acquire of
//!             its lock; fork -> child's first event; child's last event -> join;
//!             volatile write -> later read (latest write of each other thread).
//! hb(x, y) <- edge(x, y), y - x < K.
//! hb(x, z) <- hb(x, y), edge(y, z), z - x < K.
//! ```
//! Every HB path between two points moves forward in the trace, so restricting
//! derivations to pairs less than K apart loses nothing for such pairs. Two data
//! accesses of different threads are HB-ordered iff the first point of the
//! earlier one's thread at or after it reaches the last point of the later one's
//! thread at or before it: every inter-thread HB edge starts and ends at a point.
//! This is what `query --relation hb` shows and what `--relation hb --engine
//! datalog` reports races from; it must equal the vector clocks within K.
//!
//! [`HbClosure`] derives every pair. The race engine ([`analyze`]) evaluates
//! the same rules on demand instead (the magic-set form of the program: `hb`
//! is only derived from the sources the race check asks about, and only up to
//! the targets it asks about), because the whole relation is quadratic in the
//! points: 100,000 threads passing one lock along have 2·10^10 pairs, which no
//! memory holds. Restricting a source's derivation to targets before a slot
//! `hi` is exact for those targets, since paths only move forward.

use datafrog::{Iteration, Relation, RelationLeaper, ValueFilter};
use rustc_hash::FxHashMap;

use crate::engine::history::AccessHistory;
use crate::engine::sync::{NONE, SyncPoints};
use crate::facts::Facts;
use crate::relation::{self, Engine};
use crate::report::Report;
use crate::trace::{EventId, Op, Trace};

/// The points of a trace and the generating edges among them: the input
/// of every evaluation of the rules.
pub(crate) struct HbEdges {
    /// Sync points (slots) the edges refer to (no clocks: the order is
    /// derived here, independently of the vector-clock engines).
    pub sync: SyncPoints,
    /// Generating edges `(x, y)` between slots, sorted, deduplicated.
    pub edges: Vec<(u32, u32)>,
    /// The window K (None: none).
    pub window: Option<u64>,
}

impl HbEdges {
    /// The points and generating edges of `trace`.
    pub(crate) fn new(trace: &Trace, window: Option<u64>) -> HbEdges {
        let facts = Facts::new(trace);
        let sync = SyncPoints::without_clocks(trace, &facts);
        let edges = generating_edges(trace, &facts, &sync);
        HbEdges {
            sync,
            edges,
            window,
        }
    }

    /// Whether `x` and `y` lie less than K apart (every pair without a window).
    fn within(&self, x: u32, y: u32) -> bool {
        let d = (self.sync.event(y) - self.sync.event(x)) as u64;
        self.window.is_none_or(|k| d < k)
    }

    /// The first slot at least K events after `x` (the number of slots
    /// without a window): no pair from `x` reaches it.
    fn cap(&self, x: u32) -> u32 {
        let Some(k) = self.window else {
            return self.sync.len() as u32;
        };
        let limit = self.sync.event(x) as u64 + k;
        self.sync.events.partition_point(|&e| (e as u64) < limit) as u32
    }

    /// Evaluate the rules for the sources `from` (one slot, or every slot
    /// when None), deriving only targets below slot `hi`. Returns the pairs
    /// `(x, y)`, sorted, and the fixpoint rounds.
    fn derive(&self, from: Option<u32>, hi: u32) -> (Vec<(u32, u32)>, u64) {
        let lo = from.unwrap_or(0);
        let first = self.edges.partition_point(|&(x, _)| x < lo);
        let last = self.edges.partition_point(|&(x, _)| x < hi);
        let slice = &self.edges[first..last];
        let edge_rel: Relation<(u32, u32)> =
            Relation::from_iter(slice.iter().copied().filter(|&(_, y)| y < hi));
        let mut iteration = Iteration::new();
        // Keyed by the later point, to extend along edges out of it.
        let hb = iteration.variable::<(u32, u32)>("hb");
        hb.extend(
            slice
                .iter()
                .filter(|&&(x, y)| from.is_none_or(|s| x == s) && y < hi && self.within(x, y))
                .map(|&(x, y)| (y, x)),
        );
        let mut rounds = 0;
        while iteration.changed() {
            rounds += 1;
            hb.from_leapjoin(
                &hb,
                (
                    edge_rel.extend_with(|&(y, _)| y),
                    ValueFilter::from(|&(_, x): &(u32, u32), &z: &u32| self.within(x, z)),
                ),
                |&(_, x), &z| (z, x),
            );
        }
        let mut pairs: Vec<(u32, u32)> = hb.complete().iter().map(|&(y, x)| (x, y)).collect();
        pairs.sort_unstable();
        (pairs, rounds)
    }
}

/// The strict HB relation among sync points within the window, whole.
pub struct HbClosure {
    /// Sync points (slots) the pairs refer to.
    pub sync: SyncPoints,
    /// Pairs `(x, y)` of slots with `x` HB-before `y`, sorted, deduplicated.
    pub pairs: Vec<(u32, u32)>,
    /// Generating edges.
    pub edges: usize,
    /// Fixpoint rounds.
    pub rounds: u64,
}

impl HbClosure {
    /// Compute the closure of `trace` under `window`.
    pub fn new(trace: &Trace, window: Option<u64>) -> HbClosure {
        let input = HbEdges::new(trace, window);
        let (pairs, rounds) = input.derive(None, input.sync.len() as u32);
        HbClosure {
            edges: input.edges.len(),
            sync: input.sync,
            pairs,
            rounds,
        }
    }

    /// `x <=HB y` for slots (reflexive).
    pub fn ordered(&self, x: u32, y: u32) -> bool {
        x == y || self.pairs.binary_search(&(x, y)).is_ok()
    }
}

/// The rows of the closure the race check asks for, derived on demand.
///
/// A row is the set of slots a source reaches below some bound `hi`. A
/// question beyond the bound re-derives the row with the bound at least
/// doubled (so a row costs a constant factor over its final size). Rows are
/// dropped wholesale when they hold more than `budget` slots together:
/// the check moves forward through the trace, so old rows are rarely asked
/// again, and one asked again is derived again.
struct Rows<'a> {
    input: &'a HbEdges,
    rows: FxHashMap<u32, Row>,
    held: usize,
    /// Slots held across rows before they are all dropped.
    budget: usize,
    /// The least span (in slots) of a new row.
    min_span: u32,
    /// Rows derived, pairs derived in them, and the most fixpoint rounds one took.
    derived_rows: u64,
    derived_pairs: u64,
    rounds: u64,
}

struct Row {
    hi: u32,
    reach: Vec<u32>,
}

impl<'a> Rows<'a> {
    /// Rows of at least 64 slots, dropped past 2^24 slots held (64 MB).
    fn new(input: &'a HbEdges) -> Self {
        Self::with_limits(input, 64, 1 << 24)
    }

    fn with_limits(input: &'a HbEdges, min_span: u32, budget: usize) -> Self {
        Rows {
            input,
            rows: FxHashMap::default(),
            held: 0,
            budget,
            min_span,
            derived_rows: 0,
            derived_pairs: 0,
            rounds: 0,
        }
    }

    /// `x <=HB y` for slots `x <= y`, within the window.
    fn ordered(&mut self, x: u32, y: u32) -> bool {
        if x == y {
            return true;
        }
        if !self.input.within(x, y) {
            return false;
        }
        let old = match self.rows.get(&x) {
            Some(row) if y < row.hi => return row.reach.binary_search(&y).is_ok(),
            Some(row) => row.hi,
            None => x,
        };
        // The window's bound (a search) only when a row is derived.
        let cap = self.input.cap(x);
        let span = (y - x + 1).max(2 * (old - x)).max(self.min_span);
        let hi = (x as u64 + span as u64).min(cap as u64) as u32;
        let (pairs, rounds) = self.input.derive(Some(x), hi);
        self.derived_rows += 1;
        self.derived_pairs += pairs.len() as u64;
        self.rounds = self.rounds.max(rounds);
        let reach: Vec<u32> = pairs.into_iter().map(|(_, y)| y).collect();
        let answer = reach.binary_search(&y).is_ok();
        if self.held + reach.len() > self.budget {
            self.rows.clear();
            self.held = 0;
        }
        self.held += reach.len();
        if let Some(old) = self.rows.insert(x, Row { hi, reach }) {
            self.held -= old.reach.len();
        }
        answer
    }
}

/// The generating edges of HB among sync points (see the module docs).
fn generating_edges(trace: &Trace, facts: &Facts, sync: &SyncPoints) -> Vec<(u32, u32)> {
    let slot = |e: EventId| sync.slot(e).expect("edge ends are sync points");
    let mut edges = Vec::new();
    let mut last_of_thread = vec![NONE; trace.num_threads()];
    for s in 0..sync.len() as u32 {
        let t = sync.thread[s as usize] as usize;
        if last_of_thread[t] != NONE {
            edges.push((last_of_thread[t], s));
        }
        last_of_thread[t] = s;
    }
    let mut last_release: FxHashMap<u32, u32> = FxHashMap::default();
    // Per volatile variable, the latest write of each thread that wrote it
    // (only those: a row per variable of every thread would be threads x
    // variables). The edges are sorted below, so map order does not matter.
    let mut volatile_writes: FxHashMap<u32, FxHashMap<u32, u32>> = FxHashMap::default();
    for (i, ev) in trace.events.iter().enumerate() {
        let i = i as EventId;
        match ev.op {
            Op::Release => {
                last_release.insert(ev.target, slot(i));
            }
            Op::Acquire => {
                if let Some(&r) = last_release.get(&ev.target) {
                    edges.push((r, slot(i)));
                }
            }
            Op::VolatileWrite => {
                volatile_writes
                    .entry(ev.target)
                    .or_default()
                    .insert(ev.thread, slot(i));
            }
            Op::VolatileRead => {
                if let Some(w) = volatile_writes.get(&ev.target) {
                    for (&t, &s) in w {
                        if t != ev.thread {
                            edges.push((s, slot(i)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for &(a, b) in facts.fork_edges.iter().chain(&facts.join_edges) {
        edges.push((slot(a), slot(b)));
    }
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// Races from the closure (`--relation hb --engine datalog`).
pub fn analyze(trace: &Trace, window: Option<u64>) -> Report {
    let started = std::time::Instant::now();
    let input = HbEdges::new(trace, window);
    let sync = &input.sync;
    let mut rows = Rows::new(&input);
    // Point slots of each thread, ascending.
    let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); trace.num_threads()];
    for s in 0..sync.len() as u32 {
        per_thread[sync.thread[s as usize] as usize].push(s);
    }
    let mut last_point = vec![NONE; trace.num_threads()];
    let mut next = 0u32;
    let mut history = AccessHistory::new(window);
    let mut report = Report::new(
        relation::Relation::Hb,
        Engine::Datalog,
        window,
        trace.len() as u64,
    );
    for (i, ev) in trace.events.iter().enumerate() {
        let i = i as EventId;
        if (next as usize) < sync.len() && sync.event(next) == i {
            last_point[ev.thread as usize] = next;
            next += 1;
        }
        // Every access, plain or atomic; a volatile read is a point, so it
        // is checked after its acquire.
        if !ev.op.is_memory() {
            continue;
        }
        let s2 = last_point[ev.thread as usize];
        let ordered = |t: u32, e1: u32| {
            let list = &per_thread[t as usize];
            let p = list.partition_point(|&s| sync.event(s) < e1);
            s2 != NONE && p < list.len() && list[p] <= s2 && rows.ordered(list[p], s2)
        };
        if let Some(r) = history.access(i, ev, i, ordered) {
            report.races.push(r);
        }
    }
    report.normalize();
    report.stats.insert("sync_events".into(), sync.len().into());
    report
        .stats
        .insert("generating_edges".into(), input.edges.len().into());
    // What the on-demand evaluation derived (see `Rows`).
    report
        .stats
        .insert("rows_derived".into(), rows.derived_rows.into());
    report
        .stats
        .insert("hb_pairs_derived".into(), rows.derived_pairs.into());
    report
        .stats
        .insert("fixpoint_rounds".into(), rows.rounds.into());
    report.stats.insert(
        "seconds".into(),
        serde_json::json!({"total": started.elapsed().as_secs_f64()}),
    );
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::{Config, Rng, trace};

    /// Rows derived on demand, with tiny spans and budgets so that rows grow
    /// and are dropped and derived again, answer exactly as the whole closure,
    /// whatever order the questions come in.
    #[test]
    fn rows_on_demand_equal_the_whole_closure() {
        for seed in 0..60 {
            let cfg = Config {
                events: 40 + seed % 60,
                threads: 2 + (seed % 4) as u32,
                seed,
                ..Config::default()
            };
            let t = trace(&cfg);
            for window in [None, Some(4), Some(15)] {
                let whole = HbClosure::new(&t, window);
                let input = HbEdges::new(&t, window);
                let mut rows = Rows::with_limits(&input, 1, 1 + (seed % 7) as usize);
                let n = input.sync.len() as u64;
                let mut rng = Rng::new(seed);
                for _ in 0..4 * n * n {
                    let a = rng.below(n) as u32;
                    let b = rng.below(n) as u32;
                    let (x, y) = (a.min(b), a.max(b));
                    assert_eq!(
                        rows.ordered(x, y),
                        whole.ordered(x, y),
                        "seed {seed} window {window:?} slots {x} {y}"
                    );
                }
            }
        }
    }
}
