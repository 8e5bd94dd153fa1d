//! Property tests of the reference engines on small generated traces:
//! - `rules/hb.dl` derives exactly the HB of a plain-Rust reachability closure,
//!   and its races (racy events and witnesses) match a brute-force check;
//! - `rules/cp.dl` derives exactly the CP of an independent plain-Rust fixpoint
//!   (CP = HB? ∘ Base ∘ HB?, Base grown by rule (b) until stable);
//! - the laws of issue 5: HB races within K ⊆ CP(K) races ⊆ exact CP races,
//!   CP(K) races grow with K, and CP(K) with K beyond the trace is exact CP.

use std::collections::BTreeSet;

use cprace::facts::Facts;
use cprace::generate::{Config, trace};
use cprace::reference::{Pairs, cp, hb};
use cprace::trace::{EventId, Op, Trace};

const SEEDS: u64 = 300;

fn config(seed: u64) -> Config {
    Config {
        events: 20 + seed % 41,
        threads: 2 + (seed % 5) as u32,
        locks: 1 + (seed % 4) as u32,
        vars: 1 + (seed % 4) as u32,
        volatiles: (seed % 2) as u32,
        max_nesting: 1 + (seed % 3) as u32,
        p_acquire: 0.25,
        p_volatile: 0.08,
        fork_join: !seed.is_multiple_of(3),
        seed,
        ..Config::default()
    }
}

fn describe(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{i}:T{}.{}({})", e.thread, e.op.as_str(), e.target))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Square bit matrix: row x holds the y with (x, y) in the relation.
struct Matrix {
    n: usize,
    words: usize,
    bits: Vec<u64>,
}

impl Matrix {
    fn new(n: usize) -> Matrix {
        let words = n.div_ceil(64).max(1);
        Matrix {
            n,
            words,
            bits: vec![0; n * words],
        }
    }
    fn get(&self, x: usize, y: usize) -> bool {
        self.bits[x * self.words + y / 64] >> (y % 64) & 1 == 1
    }
    fn set(&mut self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64] |= 1 << (y % 64);
    }
    /// row x |= row y
    fn or_row(&mut self, x: usize, y: usize) {
        for w in 0..self.words {
            self.bits[x * self.words + w] |= self.bits[y * self.words + w];
        }
    }
    fn pairs(&self) -> Pairs {
        let mut p = Pairs::default();
        for x in 0..self.n {
            for y in 0..self.n {
                if self.get(x, y) {
                    p.insert((x as u32, y as u32));
                }
            }
        }
        p
    }
}

/// Hard edges straight from the trace: fork/join (Facts) and vw -> later vr of
/// another thread.
fn hard_edges(t: &Trace, facts: &Facts) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = facts
        .fork_edges
        .iter()
        .chain(&facts.join_edges)
        .map(|&(a, b)| (a as usize, b as usize))
        .collect();
    for (i, a) in t.events.iter().enumerate() {
        for (j, b) in t.events.iter().enumerate().skip(i + 1) {
            if a.op == Op::VolatileWrite
                && b.op == Op::VolatileRead
                && a.target == b.target
                && a.thread != b.thread
            {
                v.push((i, j));
            }
        }
    }
    v
}

/// Strict HB by reachability over program order, release -> later acquire of
/// the same lock, and the hard edges.
fn brute_hb(t: &Trace, facts: &Facts) -> Matrix {
    let n = t.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, a) in t.events.iter().enumerate() {
        if let Some(j) = (i + 1..n).find(|&j| t.events[j].thread == a.thread) {
            succ[i].push(j);
        }
        if a.op == Op::Release {
            for j in i + 1..n {
                if t.events[j].op == Op::Acquire && t.events[j].target == a.target {
                    succ[i].push(j);
                }
            }
        }
    }
    for (a, b) in hard_edges(t, facts) {
        succ[a].push(b);
    }
    let mut m = Matrix::new(n);
    for x in (0..n).rev() {
        for &s in &succ[x] {
            assert!(s > x, "edges go forward");
            m.set(x, s);
            m.or_row(x, s);
        }
    }
    m
}

fn conflict(t: &Trace, a: usize, b: usize) -> bool {
    let (x, y) = (&t.events[a], &t.events[b]);
    x.op.is_access()
        && y.op.is_access()
        && x.thread != y.thread
        && x.target == y.target
        && (x.op == Op::Write || y.op == Op::Write)
}

/// CP by an independent fixpoint: Base holds rule (a) edges, hard edges and the
/// window rule's HB pairs; CP = HB? ∘ Base ∘ HB?; rule (b) adds edges to Base
/// until nothing changes.
fn brute_cp(t: &Trace, facts: &Facts, hb: &Matrix, window: Option<u64>) -> Matrix {
    let n = t.len();
    let hbr = |x: usize, y: usize| x == y || hb.get(x, y);
    let mut base: BTreeSet<(usize, usize)> = hard_edges(t, facts).into_iter().collect();
    if let Some(k) = window {
        for x in 0..n {
            for y in x + 1..n {
                if hb.get(x, y) && (y - x) as u64 >= k {
                    base.insert((x, y));
                }
            }
        }
    }
    let css = &facts.critical_sections;
    let members = |c: usize| -> Vec<usize> {
        (css[c].acq as usize..=css[c].end as usize)
            .filter(|&e| css[c].contains(t.events[e].thread, e as u32))
            .collect()
    };
    let mut candidates = Vec::new();
    for (i, c1) in css.iter().enumerate() {
        let Some(r1) = c1.rel else { continue };
        for (j, c2) in css.iter().enumerate() {
            if c2.lock == c1.lock && c2.acq > r1 {
                candidates.push((r1 as usize, c2.acq as usize, members(i), members(j)));
            }
        }
    }
    for (r1, a2, m1, m2) in &candidates {
        if m1
            .iter()
            .any(|&e1| m2.iter().any(|&e2| conflict(t, e1, e2)))
        {
            base.insert((*r1, *a2));
        }
    }
    loop {
        let mut cp = Matrix::new(n);
        for &(r, a) in &base {
            for x in 0..n {
                if hbr(x, r) {
                    for y in a..n {
                        if hbr(a, y) {
                            cp.set(x, y);
                        }
                    }
                }
            }
        }
        let before = base.len();
        for (r1, a2, m1, m2) in &candidates {
            if m1.iter().any(|&e1| m2.iter().any(|&e2| cp.get(e1, e2))) {
                base.insert((*r1, *a2));
            }
        }
        if base.len() == before {
            return cp;
        }
    }
}

/// Racy events and witnesses (latest unordered conflicting earlier access
/// within the window) by brute force.
fn brute_races(t: &Trace, ordered: &Matrix, window: Option<u64>) -> Vec<(EventId, EventId)> {
    let mut v = Vec::new();
    for e2 in 0..t.len() {
        let w = (0..e2)
            .rev()
            .filter(|&e1| window.is_none_or(|k| ((e2 - e1) as u64) < k))
            .find(|&e1| conflict(t, e1, e2) && !ordered.get(e1, e2));
        if let Some(e1) = w {
            v.push((e1 as u32, e2 as u32));
        }
    }
    v
}

fn witnesses(r: &cprace::report::Report) -> Vec<(EventId, EventId)> {
    r.races.iter().map(|r| (r.first.id, r.second.id)).collect()
}

fn subset(a: &[EventId], b: &[EventId]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

#[test]
fn hb_rules_match_brute_force_closure() {
    for seed in 0..SEEDS {
        let t = trace(&config(seed));
        let facts = Facts::new(&t);
        let brute = brute_hb(&t, &facts);
        let r = hb::derive_trace(&t);
        assert!(
            r.hb == brute.pairs(),
            "seed {seed}: HB differs on {}",
            describe(&t)
        );
        for window in [None, Some(3), Some(10)] {
            let rep = hb::analyze(&t, window).unwrap();
            assert_eq!(
                witnesses(&rep),
                brute_races(&t, &brute, window),
                "seed {seed} window {window:?}: {}",
                describe(&t)
            );
        }
    }
}

#[test]
fn cp_rules_match_brute_force_fixpoint() {
    let mut rule_b_only = 0;
    for seed in 0..SEEDS {
        let t = trace(&config(seed));
        let facts = Facts::new(&t);
        let hbm = brute_hb(&t, &facts);
        for window in [None, Some(4), Some(12)] {
            let brute = brute_cp(&t, &facts, &hbm, window);
            let r = cp::derive_trace(&t, window);
            if window.is_none() {
                rule_b_only += usize::from(r.rule_b.iter().any(|p| !r.rule_a.contains(p)));
            }
            let bp = brute.pairs();
            let mut only_rules: Vec<_> = r.cp.difference(&bp).collect();
            let mut only_brute: Vec<_> = bp.difference(&r.cp).collect();
            only_rules.sort();
            only_brute.sort();
            assert!(
                r.cp == bp,
                "seed {seed} window {window:?}: CP differs (only rules: {only_rules:?}, only brute force: {only_brute:?}) on {}",
                describe(&t)
            );
            let rep = cp::analyze(&t, window).unwrap();
            assert_eq!(
                witnesses(&rep),
                brute_races(&t, &brute, window),
                "seed {seed} window {window:?}: {}",
                describe(&t)
            );
        }
    }
    // Rule (b) must matter in the sample, or the recursion goes untested.
    println!("{rule_b_only} traces with rule (b) edges beyond rule (a)");
    assert!(
        rule_b_only > 10,
        "only {rule_b_only} traces with rule (b) edges beyond rule (a)"
    );
}

#[test]
fn cp_laws_hold() {
    let mut strictly_more = 0;
    for seed in 0..SEEDS {
        let t = trace(&config(seed));
        let n = t.len() as u64;
        let exact = cp::derive_trace(&t, None);
        let hb_exact = hb::analyze(&t, None).unwrap().racy_events();
        let cp_exact = cp::analyze(&t, None).unwrap().racy_events();
        let ctx = || format!("seed {seed}: {}", describe(&t));
        assert!(
            exact.cp.iter().all(|p| exact.hb.hb.contains(p)),
            "CP ⊆ HB, {}",
            ctx()
        );
        assert!(
            subset(&hb_exact, &cp_exact),
            "HB races ⊆ CP races, {}",
            ctx()
        );
        strictly_more += usize::from(cp_exact.len() > hb_exact.len());
        let mut previous: Vec<EventId> = Vec::new();
        for k in [1, 2, 3, 5, 8, 13, 21, 34, n, n + 1] {
            let w = cp::analyze(&t, Some(k)).unwrap().racy_events();
            let hb_k = hb::analyze(&t, Some(k)).unwrap().racy_events();
            assert!(
                subset(&hb_k, &w),
                "HB(K={k}) races ⊆ CP(K) races, {}",
                ctx()
            );
            assert!(
                subset(&w, &cp_exact),
                "CP(K={k}) races ⊆ exact CP races, {}",
                ctx()
            );
            assert!(
                subset(&previous, &w),
                "CP races grow with K (K={k}), {}",
                ctx()
            );
            previous = w;
        }
        assert_eq!(previous, cp_exact, "CP(K > length) == exact CP, {}", ctx());
        assert!(
            cp::derive_trace(&t, Some(n + 1)).cp == exact.cp,
            "CP(K > length) relation == exact, {}",
            ctx()
        );
    }
    // Not a law, but the test would be vacuous if CP never found more than HB.
    assert!(
        strictly_more > 10,
        "only {strictly_more} traces where CP finds more races than HB"
    );
}
