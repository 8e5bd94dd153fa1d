//! The first sync-preserving engine, kept as the reference the streaming
//! one ([`super::SyncpDetector`]) is checked against: it loads the trace,
//! indexes every event ([`crate::witness::TraceIndex`]) and keeps one dense
//! closure per thread ([`crate::witness::Closure`]), so it needs threads²
//! memory; the candidate loop is the same.

use serde_json::json;

use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{EventId, Trace};
use crate::witness::{Closure, TraceIndex};

/// One earlier access: position in its thread and event id.
#[derive(Clone, Copy, Debug)]
struct Past {
    pos: u32,
    id: EventId,
}

/// The accesses of one thread to one variable.
#[derive(Clone, Debug, Default)]
struct History {
    thread: u32,
    /// Its writes (what a read conflicts with), and all its accesses (what
    /// a write conflicts with).
    lists: [Vec<Past>; 2],
    /// Per list and other thread t2, how many entries are known to be in
    /// t2's closure C(e2) (which only grows): a cursor instead of a binary
    /// search per access, whose cache misses dominated.
    cursor: [Vec<u32>; 2],
}

/// Decide the sync-preserving racy events of `trace`, pairing only accesses
/// less than `window` events apart.
pub(crate) fn analyze(trace: &Trace, window: Option<u64>) -> Report {
    let idx = TraceIndex::new(trace);
    let nt = idx.num_threads();
    let mut report = Report::new(Relation::Syncp, Engine::Closure, window, trace.len() as u64);
    let mut own: Vec<Closure> = (0..nt)
        .map(|_| Closure::new(nt, trace.num_locks()))
        .collect();
    // Per variable, per thread that accessed it, its accesses in order.
    let mut past: Vec<Vec<History>> = vec![Vec::new(); trace.num_vars()];
    let (mut checked, mut extended, mut unclosable) = (0u64, 0u64, 0u64);
    for (i, ev) in trace.events.iter().enumerate() {
        if !ev.op.is_memory() {
            continue;
        }
        let e2 = i as EventId;
        let t2 = ev.thread;
        let p2 = idx.pos[i];
        let write = ev.op.is_write();
        let c = &mut own[t2 as usize];
        if c.extend_pred(&idx, e2).is_err() {
            // Cannot happen on a validated trace (every section acquired before
            // a later acquire of its lock is released before it); stay silent
            // rather than report without a witness.
            unclosable += 1;
        } else {
            let mut best: Option<(Past, u32)> = None;
            for h in past[ev.target as usize].iter_mut() {
                let w = write as usize;
                let (t1, list, cursor) = (&h.thread, &h.lists[w], &mut h.cursor[w]);
                if *t1 == t2 {
                    continue;
                }
                let start = c.len(*t1);
                if cursor.len() <= t2 as usize {
                    cursor.resize(t2 as usize + 1, 0);
                }
                let mut k = cursor[t2 as usize] as usize;
                while k < list.len() && list[k].pos < start {
                    k += 1;
                }
                cursor[t2 as usize] = k as u32;
                let near = |a: &Past| window.is_none_or(|w| ((e2 - a.id) as u64) < w);
                c.begin();
                // Of the thread's accesses of the variable, those that
                // conflict with e2 (bytes overlap, not both atomic).
                let conflicts = |a: &Past| trace.events[a.id as usize].conflicts(ev);
                for a in list[k..].iter().filter(|a| near(a) && conflicts(a)) {
                    if c.len(*t1) > a.pos {
                        continue;
                    }
                    checked += 1;
                    if c.extend_pred(&idx, a.id).is_err() {
                        break;
                    }
                    extended += 1;
                    if c.len(*t1) == a.pos && c.len(t2) <= p2 {
                        if best.is_none_or(|(b, _)| a.id > b.id) {
                            best = Some((*a, *t1));
                        }
                        break;
                    }
                }
                c.rollback();
            }
            if let Some((a, t1)) = best {
                let f = trace.events[a.id as usize];
                report.races.push(Race {
                    first: Access {
                        id: a.id,
                        thread: t1,
                        op: f.op,
                        loc: f.loc,
                    },
                    second: Access::of(e2, ev),
                    variable: ev.target,
                });
            }
        }
        let lists = &mut past[ev.target as usize];
        let entry = match lists.iter().position(|h| h.thread == t2) {
            Some(k) => &mut lists[k].lists,
            None => {
                lists.push(History {
                    thread: t2,
                    ..History::default()
                });
                &mut lists.last_mut().expect("just pushed").lists
            }
        };
        let p = Past { pos: p2, id: e2 };
        if write {
            entry[0].push(p);
        }
        entry[1].push(p);
    }
    let s = &mut report.stats;
    s.insert("threads".into(), json!(nt));
    s.insert("candidates_checked".into(), json!(checked));
    s.insert("closures_extended".into(), json!(extended));
    if unclosable > 0 {
        s.insert("unclosable".into(), json!(unclosable));
    }
    report.notes.push(
        "every sync-preserving race is a predictable race, and every race whose witness keeps lock order is found (POPL 2021)"
            .into(),
    );
    report.normalize();
    report
}
