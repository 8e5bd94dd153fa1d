//! Deeply nested critical sections, most never released: the engines keep
//! one entry per access however deep the nesting (a section reads its
//! variables off its thread's list), and must still give the reference
//! engines' answers exactly. Small instances, so the references can run.

use cprace::race::{Options, analyze_trace};
use cprace::relation::{Engine, Relation};
use cprace::trace::{Trace, load_str};

/// Thread T0 nests `depth` sections (locks L0, L1, ...), accessing a
/// variable of its own and a shared one in each; T1 then takes some of the
/// same locks (only those T0 released) and accesses the shared variables;
/// the innermost `open` sections of T0 are never released.
fn nested(depth: usize, open: usize, seed: usize) -> Trace {
    let mut s = String::new();
    for i in 0..depth {
        s += &format!("T0|acq(L{i})|a{i}\nT0|w(x{i})|b{i}\n");
        if (i + seed).is_multiple_of(3) {
            s += &format!("T0|r(y{})|c{i}\n", i % 4);
        }
    }
    // Release the outer sections' inner part from the innermost closed one
    // outwards; sections `depth - open ..` stay open.
    let closed = depth - open;
    let mut released = Vec::new();
    for i in (0..depth).rev() {
        if i < closed {
            // Out of nesting: T0 still holds the open inner ones.
            s += &format!("T0|rel(L{i})|d{i}\n");
            released.push(i);
        }
    }
    for (k, &i) in released.iter().enumerate() {
        if (k + seed).is_multiple_of(2) {
            s += &format!(
                "T1|acq(L{i})|e{i}\nT1|w(y{})|f{i}\nT1|r(x{i})|g{i}\nT1|rel(L{i})|h{i}\n",
                i % 4
            );
        } else {
            s += &format!("T1|w(y{})|i{i}\n", (i + 1) % 4);
        }
    }
    s += "T1|w(x0)|z\n";
    load_str(&s, None).unwrap_or_else(|e| panic!("{e}"))
}

fn run(t: &Trace, relation: Relation, engine: Engine, window: Option<u64>) -> Vec<(u32, u32)> {
    let mut opts = Options::new(relation);
    opts.engine = Some(engine);
    opts.window = window;
    let r = analyze_trace(t, &opts).unwrap_or_else(|e| panic!("{e}"));
    r.races.iter().map(|r| (r.first.id, r.second.id)).collect()
}

#[test]
fn nested_never_released_sections_match_the_references() {
    let mut racy = 0;
    for depth in [1, 2, 5, 12, 30, 60] {
        for open in [0, 1, depth / 2, depth] {
            for seed in 0..3 {
                let t = nested(depth, open.min(depth), seed);
                let label = format!("depth {depth}, {open} open, seed {seed}");
                for window in [None, Some(7), Some(1000)] {
                    let cp = run(&t, Relation::Cp, Engine::Datalog, window);
                    let cp_ref = run(&t, Relation::Cp, Engine::Reference, window);
                    assert_eq!(cp, cp_ref, "cp, {label}, window {window:?}");
                }
                let wcp = run(&t, Relation::Wcp, Engine::Vc, None);
                let wcp_ref = run(&t, Relation::Wcp, Engine::Reference, None);
                assert_eq!(wcp, wcp_ref, "wcp, {label}");
                racy += wcp.len();
            }
        }
    }
    assert!(racy > 20, "only {racy} WCP races: the traces test little");
}
