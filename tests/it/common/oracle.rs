//! Brute-force oracles straight from the papers' definitions, over all event
//! pairs: the one HB closure ([`hb_closure`], bitsets, used by every HB test)
//! and the matrices of HB, HBv, CP and WCP built on it (cubic; for traces of a
//! few dozen events). Independent of every engine.

#![allow(clippy::needless_range_loop)]

use cprace::facts::Facts;
use cprace::trace::{EventId, Op, Trace};

/// Reflexive HB matrix from [`hb_closure`]: program order, release -> later
/// acquire of the same lock, fork -> child's first event, child's last event
/// -> join, volatile write -> later volatile read of the same variable
/// (relaxed atomics give no edge); transitively closed.
pub fn hb_matrix(t: &Trace) -> Vec<Vec<bool>> {
    let pred = hb_closure(t);
    let n = t.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i == j || (i < j && hb(&pred, i, j)))
                .collect()
        })
        .collect()
}

/// Transitive closure of HB over all event pairs, straight from the
/// definition: `pred[j]` is the set of events HB-before `j` (a bitset).
pub fn hb_closure(t: &Trace) -> Vec<Vec<u64>> {
    let n = t.len();
    let words = n.div_ceil(64).max(1);
    let nt = t.num_threads();
    let mut first = vec![None; nt];
    let mut last = vec![None; nt];
    for (i, e) in t.events.iter().enumerate() {
        let th = e.thread as usize;
        first[th].get_or_insert(i);
        last[th] = Some(i);
    }
    let mut fork_of = vec![None; nt];
    for (i, e) in t.events.iter().enumerate() {
        if e.op == Op::Fork {
            fork_of[e.target as usize] = Some(i);
        }
    }
    let mut pred: Vec<Vec<u64>> = vec![vec![0; words]; n];
    let mut prev_of_thread = vec![None; nt];
    for j in 0..n {
        let ej = t.events[j];
        let mut direct: Vec<usize> = Vec::new();
        if let Some(p) = prev_of_thread[ej.thread as usize] {
            direct.push(p);
        }
        prev_of_thread[ej.thread as usize] = Some(j);
        for i in 0..j {
            let ei = t.events[i];
            let edge = match (ei.op, ej.op) {
                (Op::Release, Op::Acquire) => ei.target == ej.target,
                (Op::VolatileWrite, Op::VolatileRead) => ei.target == ej.target,
                _ => false,
            };
            if edge {
                direct.push(i);
            }
        }
        if first[ej.thread as usize] == Some(j)
            && let Some(f) = fork_of[ej.thread as usize]
            && f < j
        {
            direct.push(f);
        }
        if ej.op == Op::Join
            && let Some(l) = last[ej.target as usize]
            && l < j
        {
            direct.push(l);
        }
        let mut acc = vec![0u64; words];
        for i in direct {
            acc[i / 64] |= 1 << (i % 64);
            for w in 0..words {
                acc[w] |= pred[i][w];
            }
        }
        pred[j] = acc;
    }
    pred
}

/// Whether `i` is HB-before `j` in a closure from [`hb_closure`].
pub fn hb(pred: &[Vec<u64>], i: usize, j: usize) -> bool {
    pred[j][i / 64] >> (i % 64) & 1 == 1
}

/// Every HB-racy event with its witness (the latest unordered conflicting
/// earlier access within the window), by brute force over all pairs.
pub fn hb_races(t: &Trace, window: Option<u64>) -> Vec<(EventId, EventId)> {
    let pred = hb_closure(t);
    let mut out = Vec::new();
    for j in 0..t.len() {
        let ej = t.events[j];
        if !ej.op.is_memory() {
            continue;
        }
        let witness = (0..j).rev().find(|&i| {
            t.events[i].conflicts(&ej)
                && window.is_none_or(|k| ((j - i) as u64) < k)
                && !hb(&pred, i, j)
        });
        if let Some(i) = witness {
            out.push((j as EventId, i as EventId));
        }
    }
    out
}

/// Whether `i < j` are volatile accesses of one variable by different
/// threads, at least one a write (whatever bytes they touch): the extra
/// edges of HBv. Relaxed atomic accesses synchronize nothing.
pub fn volatile_edge(t: &Trace, i: usize, j: usize) -> bool {
    let (a, b) = (&t.events[i], &t.events[j]);
    let volatile = |op: Op| matches!(op, Op::VolatileRead | Op::VolatileWrite);
    i < j
        && volatile(a.op)
        && volatile(b.op)
        && a.target == b.target
        && a.thread != b.thread
        && (a.op.is_write() || b.op.is_write())
}

/// The edges of atomic pairs with a relaxed side (rules/cp.dl,
/// `RelaxedEdge`): per atomic access j, from each other thread the latest
/// earlier atomic access i of its variable (a write when j reads), when i
/// or j is relaxed (`ar`, `aw`) and `order` (HBv) already has i before j.
pub fn relaxed_edges(t: &Trace, order: &[Vec<bool>]) -> Vec<(usize, usize)> {
    let relaxed = |op: Op| matches!(op, Op::AtomicRead | Op::AtomicWrite);
    let mut out = Vec::new();
    for (j, b) in t.events.iter().enumerate() {
        if !b.op.is_atomic() {
            continue;
        }
        let mut seen = std::collections::BTreeSet::new();
        for i in (0..j).rev() {
            let a = &t.events[i];
            let source = a.op.is_atomic()
                && a.target == b.target
                && a.thread != b.thread
                && (a.op.is_write() || b.op.is_write());
            if source && seen.insert(a.thread) && (relaxed(a.op) || relaxed(b.op)) && order[i][j] {
                out.push((i, j));
            }
        }
    }
    out
}

/// Reflexive HBv matrix: [`hb_matrix`] plus an edge between every two
/// volatile accesses of a variable by different threads, at least one a write
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
/// looked at (more conflicts only add edges) and two atomic accesses
/// conflicting too (a section's atomic read cannot move before the section
/// with the atomic write it read).
pub fn rule_a_conflict(t: &Trace, i: usize, j: usize) -> bool {
    let (a, b) = (&t.events[i], &t.events[j]);
    a.op.is_memory()
        && b.op.is_memory()
        && a.thread != b.thread
        && a.target == b.target
        && (a.op.is_write() || b.op.is_write())
}

/// CP matrix by Definition 2 (rules a, b, c; rule (a) on
/// [`rule_a_conflict`]) with rule (c) composing with HBv, hard fork/join
/// edges, hard edges between volatile accesses ([`volatile_edge`]), and under
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
    for (i, j) in relaxed_edges(t, &hb) {
        cp[i][j] = true;
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
