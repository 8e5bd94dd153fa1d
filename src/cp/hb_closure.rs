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

use datafrog::{Iteration, Relation, RelationLeaper, ValueFilter};
use rustc_hash::FxHashMap;

use super::sync::{NONE, SyncPoints};
use crate::facts::Facts;
use crate::history::AccessHistory;
use crate::report::Report;
use crate::trace::{EventId, Op, Trace};

/// The strict HB relation among sync points within the window.
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
        let facts = Facts::new(trace);
        let sync = SyncPoints::new(trace, &facts, &[]);
        let edges = generating_edges(trace, &facts, &sync);
        let within =
            |x: u32, y: u32| window.is_none_or(|k| ((sync.event(y) - sync.event(x)) as u64) < k);
        let edge_rel: Relation<(u32, u32)> = Relation::from_iter(edges.iter().copied());
        let mut iteration = Iteration::new();
        // Keyed by the later point, to extend along edges out of it.
        let hb = iteration.variable::<(u32, u32)>("hb");
        hb.extend(
            edges
                .iter()
                .filter(|&&(x, y)| within(x, y))
                .map(|&(x, y)| (y, x)),
        );
        let mut rounds = 0;
        while iteration.changed() {
            rounds += 1;
            hb.from_leapjoin(
                &hb,
                (
                    edge_rel.extend_with(|&(y, _)| y),
                    ValueFilter::from(|&(_, x): &(u32, u32), &z: &u32| within(x, z)),
                ),
                |&(_, x), &z| (z, x),
            );
        }
        let mut pairs: Vec<(u32, u32)> = hb.complete().iter().map(|&(y, x)| (x, y)).collect();
        pairs.sort_unstable();
        HbClosure {
            sync,
            pairs,
            edges: edges.len(),
            rounds,
        }
    }

    /// `x <=HB y` for slots (reflexive).
    pub fn ordered(&self, x: u32, y: u32) -> bool {
        x == y || self.pairs.binary_search(&(x, y)).is_ok()
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
    let mut volatile_writes: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
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
                let w = volatile_writes
                    .entry(ev.target)
                    .or_insert_with(|| vec![NONE; trace.num_threads()]);
                w[ev.thread as usize] = slot(i);
            }
            Op::VolatileRead => {
                if let Some(w) = volatile_writes.get(&ev.target) {
                    for (t, &s) in w.iter().enumerate() {
                        if s != NONE && t != ev.thread as usize {
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
    let c = HbClosure::new(trace, window);
    let sync = &c.sync;
    // Point slots of each thread, ascending.
    let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); trace.num_threads()];
    for s in 0..sync.len() as u32 {
        per_thread[sync.thread[s as usize] as usize].push(s);
    }
    let mut last_point = vec![NONE; trace.num_threads()];
    let mut next = 0u32;
    let mut history = AccessHistory::new(window);
    let mut report = Report::new("hb", "datalog", window, trace.len() as u64);
    for (i, ev) in trace.events.iter().enumerate() {
        let i = i as EventId;
        if (next as usize) < sync.len() && sync.event(next) == i {
            last_point[ev.thread as usize] = next;
            next += 1;
        }
        if !ev.op.is_access() {
            continue;
        }
        let s2 = last_point[ev.thread as usize];
        let ordered = |t: u32, e1: u32| {
            let list = &per_thread[t as usize];
            let p = list.partition_point(|&s| sync.event(s) < e1);
            s2 != NONE && p < list.len() && c.ordered(list[p], s2)
        };
        if let Some(r) = history.access(i, ev, i, ordered) {
            report.races.push(r);
        }
    }
    report.normalize();
    report.stats.insert("sync_events".into(), sync.len().into());
    report
        .stats
        .insert("generating_edges".into(), c.edges.into());
    report.stats.insert("hb_pairs".into(), c.pairs.len().into());
    report
        .stats
        .insert("fixpoint_rounds".into(), c.rounds.into());
    report.stats.insert(
        "seconds".into(),
        serde_json::json!({"total": started.elapsed().as_secs_f64()}),
    );
    report
}
