//! `cprace query --relation shb`: every answer and every dump against SHB
//! computed by brute force from its definition (HB plus an edge from the
//! write each data read reads from, transitively closed), and every chain
//! checked step by step.

#![allow(clippy::needless_range_loop)]

use crate::common;

use common::oracle::hb_matrix;
use common::query::{
    arr, dump_rows, id, interesting_pairs, query_json, query_text, sync_pairs_within,
};
use common::traces::dump;
use cprace::facts::Facts;
use cprace::relation::Relation;
use cprace::tools::generate::{Config, trace};
use cprace::tools::query;
use cprace::trace::{Op, Trace};
use serde_json::Value;

/// Small traces with many reads of other threads' writes, locks, volatiles
/// and fork/join.
fn config(seed: u64) -> Config {
    Config {
        events: 10 + seed % 30,
        threads: 2 + (seed % 3) as u32,
        vars: 1 + (seed % 3) as u32,
        locks: 1 + (seed % 2) as u32,
        volatiles: (seed % 2) as u32,
        p_volatile: 0.1,
        fork_join: seed.is_multiple_of(3),
        seed,
        ..Config::default()
    }
}

/// The write data read `r` reads from: the last earlier data write to its
/// variable.
fn reads_from(t: &Trace, r: usize) -> Option<usize> {
    let target = t.events[r].target;
    (0..r)
        .rev()
        .find(|&w| t.events[w].op == Op::Write && t.events[w].target == target)
}

/// Reflexive SHB matrix, from the definition.
fn shb_matrix(t: &Trace) -> Vec<Vec<bool>> {
    let mut m = hb_matrix(t);
    let n = t.len();
    for r in 0..n {
        if t.events[r].op == Op::Read
            && let Some(w) = reads_from(t, r)
        {
            m[w][r] = true;
        }
    }
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
    m
}

/// Each step of `chain` is a generating SHB edge and the steps lead from
/// `x` to `y`.
fn check_chain(t: &Trace, facts: &Facts, chain: &[Value], x: u32, y: u32) -> Result<(), String> {
    let mut at = x;
    for s in chain {
        let (f, to) = (id(&s["from"]), id(&s["to"]));
        let (a, b) = (t.events[f as usize], t.events[to as usize]);
        let ok = f == at
            && f < to
            && match s["kind"].as_str().unwrap_or("") {
                "po" => a.thread == b.thread,
                "release-acquire" => {
                    a.op == Op::Release && b.op == Op::Acquire && a.target == b.target
                }
                "fork" => facts.fork_edges.contains(&(f, to)),
                "join" => facts.join_edges.contains(&(f, to)),
                "volatile" => {
                    a.op == Op::VolatileWrite && b.op == Op::VolatileRead && a.target == b.target
                }
                "reads-from" => {
                    b.op == Op::Read
                        && a.thread != b.thread
                        && reads_from(t, to as usize) == Some(f as usize)
                }
                _ => false,
            };
        if !ok {
            return Err(format!("step {s} is not an SHB edge continuing from {at}"));
        }
        at = to;
    }
    if at != y {
        return Err(format!("the chain ends at {at}, not {y}"));
    }
    Ok(())
}

#[test]
fn answers_equal_the_definition_and_chains_check() {
    let (mut rf_steps, mut only_shb) = (0, 0);
    for seed in 0..250 {
        let t = trace(&config(seed));
        let (shb, hb) = (shb_matrix(&t), hb_matrix(&t));
        let facts = Facts::new(&t);
        let q = query::engine(&t, Relation::Shb, None).unwrap();
        for (x, y) in interesting_pairs(&t) {
            let j = q.explain(x, y).to_json(&t);
            let ctx = || format!("seed {seed} pair {x},{y}\n{j:#}\n{}", dump(&t));
            let (xs, ys) = (x as usize, y as usize);
            assert_eq!(j["ordered"], shb[xs][ys], "{}", ctx());
            assert_eq!(j["hb_ordered"], hb[xs][ys], "{}", ctx());
            let chain = arr(&j["chain"]);
            if shb[xs][ys] {
                if let Err(e) = check_chain(&t, &facts, chain, x, y) {
                    panic!("{e}\n{}", ctx());
                }
                rf_steps += chain.iter().filter(|s| s["kind"] == "reads-from").count();
                only_shb += usize::from(!hb[xs][ys]);
            } else {
                assert!(chain.is_empty(), "{}", ctx());
                let why = j["explanation"].as_str().unwrap();
                assert!(why.contains("is not SHB-before"), "{}", ctx());
            }
        }
    }
    // The traces exercise what SHB adds to HB.
    assert!(
        rf_steps > 500 && only_shb > 500,
        "{rf_steps} reads-from steps, {only_shb} SHB-only pairs"
    );
}

#[test]
fn dumps_equal_the_definition_among_sync_events_within_the_window() {
    let mut added = 0;
    for seed in 0..250 {
        let t = trace(&config(seed));
        let (shb, hb) = (shb_matrix(&t), hb_matrix(&t));
        let strict = |m: &[Vec<bool>]| -> Vec<(u32, u32)> {
            let n = t.len();
            (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| m[i][j])
                .map(|(i, j)| (i as u32, j as u32))
                .collect()
        };
        let (shb_pairs, hb_pairs) = (strict(&shb), strict(&hb));
        for k in [None, Some(3), Some(8)] {
            let (_, base, got) = dump_rows(&t, Relation::Shb, k);
            assert!(base.is_empty());
            let want = sync_pairs_within(&t, &shb_pairs, k);
            assert_eq!(got, want, "seed {seed} K={k:?}\n{}", dump(&t));
            added += want.len() - sync_pairs_within(&t, &hb_pairs, k).len();
        }
    }
    assert!(added > 100, "SHB dumps add only {added} pairs to HB's");
}

#[test]
fn cli_pair_and_syncp_usage() {
    // T1 releases M, then writes x; T0 reads x (from T1's write), then
    // acquires L. No HB edge crosses the threads (two locks); SHB orders
    // T1's release before T0's acquire through the reads-from edge.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rf.std");
    std::fs::write(
        &path,
        "T1|acq(M)|10\nT1|rel(M)|11\nT1|w(x)|12\nT0|r(x)|20\nT0|acq(L)|21\nT0|rel(L)|22\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let j = query_json(p, &["--relation", "shb", "--pair", "1,4"]);
    assert_eq!(j["ordered"], true);
    assert_eq!(j["hb_ordered"], false);
    let kinds: Vec<&str> = arr(&j["chain"])
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["po", "reads-from", "po"]);
    let text = query_text(p, &["--relation", "shb", "--pair", "1,4"]);
    assert!(text.contains("reads-from: T0's read of x"), "{text}");
    let hb = query_json(p, &["--relation", "hb", "--pair", "1,4"]);
    assert_eq!(hb["ordered"], false);
    // The dump has the pair; HB's does not.
    let (code, out, _) = common::cli::cprace(&["query", p, "--relation", "shb"]);
    assert_eq!(code, 0);
    assert!(out.contains("shb,pair,,1,4,"), "{out}");
    let (_, out, _) = common::cli::cprace(&["query", p, "--relation", "hb"]);
    assert!(!out.contains(",1,4,"), "{out}");
    let (code, _, err) = common::cli::cprace(&["query", p, "--relation", "syncp"]);
    assert_eq!(code, 2);
    assert!(err.contains("not an order"), "{err}");
}
