//! Brute-force oracles straight from the papers' definitions, over all event
//! pairs (cubic; for traces of a few dozen events). Independent of every engine.

#![allow(dead_code, clippy::needless_range_loop)]

use cprace::facts::Facts;
use cprace::trace::{Op, Trace};

/// Reflexive HB matrix: program order, release -> later acquire of the same
/// lock, fork -> child's first event, child's last event -> join, volatile
/// write -> later volatile read of the same variable (relaxed atomics give
/// no edge); transitively closed.
pub fn hb_matrix(t: &Trace) -> Vec<Vec<bool>> {
    let n = t.len();
    let f = Facts::new(t);
    let mut m = vec![vec![false; n]; n];
    for i in 0..n {
        for j in i..n {
            let (a, b) = (&t.events[i], &t.events[j]);
            let edge = i == j
                || a.thread == b.thread
                || (a.op == Op::Release && b.op == Op::Acquire && a.target == b.target)
                || (a.op == Op::VolatileWrite && b.op == Op::VolatileRead && a.target == b.target);
            if edge {
                m[i][j] = true;
            }
        }
    }
    for &(x, y) in f.fork_edges.iter().chain(&f.join_edges) {
        m[x as usize][y as usize] = true;
    }
    close(&mut m);
    m
}

/// Whether `i < j` are atomic accesses (volatile or relaxed) of one variable
/// by different threads, at least one a write (whatever bytes they touch):
/// the extra edges of HBv.
pub fn volatile_edge(t: &Trace, i: usize, j: usize) -> bool {
    let (a, b) = (&t.events[i], &t.events[j]);
    i < j
        && a.op.is_atomic()
        && b.op.is_atomic()
        && a.target == b.target
        && a.thread != b.thread
        && (a.op.is_write() || b.op.is_write())
}

/// Reflexive HBv matrix: [`hb_matrix`] plus an edge between every two
/// atomic accesses of a variable by different threads, at least one a write
/// ([`volatile_edge`]), transitively closed. CP and WCP compose with it.
pub fn hbv_matrix(t: &Trace) -> Vec<Vec<bool>> {
    let mut m = hb_matrix(t);
    let n = t.len();
    for i in 0..n {
        for j in i + 1..n {
            if volatile_edge(t, i, j) {
                m[i][j] = true;
            }
        }
    }
    close(&mut m);
    m
}

fn close(m: &mut [Vec<bool>]) {
    let n = m.len();
    for k in 0..n {
        for i in 0..n {
            if m[i][k] {
                for j in 0..n {
                    if m[k][j] {
                        m[i][j] = true;
                    }
                }
            }
        }
    }
}

/// The conflict relation races are reported on: same variable and a common
/// byte, different threads, at least one a write, not both atomic.
pub fn conflict(t: &Trace, i: usize, j: usize) -> bool {
    t.events[i].conflicts(&t.events[j])
}

/// The conflict relation of CP's rule (a): [`conflict`] with the bytes not
/// looked at (more conflicts only add edges).
pub fn rule_a_conflict(t: &Trace, i: usize, j: usize) -> bool {
    let (a, b) = (&t.events[i], &t.events[j]);
    a.op.is_memory()
        && b.op.is_memory()
        && a.thread != b.thread
        && a.target == b.target
        && (a.op.is_write() || b.op.is_write())
        && !(a.op.is_atomic() && b.op.is_atomic())
}

/// CP matrix by Definition 2 (rules a, b, c; rule (a) on
/// [`rule_a_conflict`]) with rule (c) composing with HBv, hard fork/join
/// edges, hard edges between atomic accesses ([`volatile_edge`]), and under
/// a window K the
/// conservative rule: `x <=HBv y` with `y - x >= K` implies CP(x, y).
pub fn cp_matrix(t: &Trace, window: Option<u64>) -> Vec<Vec<bool>> {
    cp_matrix_with(t, window, &[])
}

/// [`cp_matrix`] with extra hard edges (`--order-races`): CP edges, and
/// edges of the order CP composes with (HBv plus them, closed), as the CP
/// paper's restricted trace hard-orders its reported races.
pub fn cp_matrix_with(t: &Trace, window: Option<u64>, extra: &[(usize, usize)]) -> Vec<Vec<bool>> {
    let n = t.len();
    let mut hb = hbv_matrix(t);
    for &(x, y) in extra {
        hb[x][y] = true;
    }
    close(&mut hb);
    let f = Facts::new(t);
    let mut cp = vec![vec![false; n]; n];
    for &(x, y) in f.fork_edges.iter().chain(&f.join_edges) {
        cp[x as usize][y as usize] = true;
    }
    for &(x, y) in extra {
        cp[x][y] = true;
    }
    for i in 0..n {
        for j in i + 1..n {
            if volatile_edge(t, i, j) {
                cp[i][j] = true;
            }
            if let Some(k) = window
                && hb[i][j]
                && (j - i) as u64 >= k
            {
                cp[i][j] = true;
            }
        }
    }
    let css = &f.critical_sections;
    let members: Vec<Vec<usize>> = css
        .iter()
        .map(|cs| {
            (cs.acq..=cs.end)
                .filter(|&e| t.events[e as usize].thread == cs.thread)
                .map(|e| e as usize)
                .collect()
        })
        .collect();
    loop {
        let mut changed = false;
        for (c1, cs1) in css.iter().enumerate() {
            let Some(rel1) = cs1.rel else { continue };
            for (c2, cs2) in css.iter().enumerate() {
                if cs2.lock != cs1.lock || cs2.acq < rel1 || cp[rel1 as usize][cs2.acq as usize] {
                    continue;
                }
                let fire = members[c1].iter().any(|&e1| {
                    members[c2]
                        .iter()
                        .any(|&e2| rule_a_conflict(t, e1, e2) || cp[e1][e2])
                });
                if fire {
                    cp[rel1 as usize][cs2.acq as usize] = true;
                    changed = true;
                }
            }
        }
        // Rule (c): compose with HBv on both sides.
        let mut next = cp.clone();
        for x in 0..n {
            for y in 0..n {
                if next[x][y] {
                    continue;
                }
                let left = (0..n).any(|z| hb[x][z] && cp[z][y]);
                let right = (0..n).any(|z| cp[x][z] && hb[z][y]);
                if left || right {
                    next[x][y] = true;
                    changed = true;
                }
            }
        }
        cp = next;
        if !changed {
            return cp;
        }
    }
}

/// Racy events per the output contract given an "ordered" matrix, reporting
/// only pairs less than `max_distance` apart (`--max-distance`; None: all).
/// A reasoning window belongs in the matrix ([`cp_matrix`]'s rule (w)), not
/// here.
pub fn racy(t: &Trace, ordered: &[Vec<bool>], max_distance: Option<u64>) -> Vec<u32> {
    let window = max_distance;
    let n = t.len();
    (0..n)
        .filter(|&j| {
            (0..j).any(|i| {
                conflict(t, i, j) && window.is_none_or(|k| ((j - i) as u64) < k) && !ordered[i][j]
            })
        })
        .map(|j| j as u32)
        .collect()
}

/// The witness of racy event `j`: the latest earlier conflicting unordered
/// access less than `max_distance` before it.
pub fn witness(
    t: &Trace,
    ordered: &[Vec<bool>],
    max_distance: Option<u64>,
    j: usize,
) -> Option<usize> {
    let window = max_distance;
    (0..j).rev().find(|&i| {
        conflict(t, i, j) && window.is_none_or(|k| ((j - i) as u64) < k) && !ordered[i][j]
    })
}

/// The strict pairs `(x, y)`, `x < y`, of a matrix.
pub fn pairs(m: &[Vec<bool>]) -> cprace::engine::reference::Pairs {
    let mut p = cprace::engine::reference::Pairs::default();
    for (x, row) in m.iter().enumerate() {
        for (y, &b) in row.iter().enumerate().skip(x + 1) {
            if b {
                p.insert((x as u32, y as u32));
            }
        }
    }
    p
}

/// `(witness, racy event)` for every racy event, per the output contract,
/// among pairs less than `max_distance` apart.
pub fn witnesses(t: &Trace, ordered: &[Vec<bool>], max_distance: Option<u64>) -> Vec<(u32, u32)> {
    racy(t, ordered, max_distance)
        .into_iter()
        .map(|j| {
            (
                witness(t, ordered, max_distance, j as usize).expect("racy events have a witness")
                    as u32,
                j,
            )
        })
        .collect()
}
