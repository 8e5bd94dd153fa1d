//! Hand-written traces with known HB verdicts, run through every engine.

use crate::common::hb::{pairs, run, tr};
use crate::common::oracle::hb_races as oracle;

const EXACT: [&str; 4] = ["vc", "epoch", "lockset", "treeclock"];

/// Every exact engine reports exactly `want` ((racy event, witness) pairs),
/// which also matches the brute-force oracle; Eraser reports at least those.
fn check(text: &str, want: &[(u32, u32)]) {
    let t = tr(text);
    assert_eq!(
        oracle(&t, None),
        want,
        "oracle disagrees with the expected verdict"
    );
    for e in EXACT {
        assert_eq!(pairs(&run(e, None, &t)), want, "engine {e}");
    }
    let er = run("eraser", None, &t).racy_events();
    for (r, _) in want {
        assert!(er.contains(r), "eraser misses HB-racy event {r}");
    }
}

#[test]
fn unsynchronized_write_read_races() {
    check("T1 w x\nT2 r x", &[(1, 0)]);
    check("T1 r x\nT2 r x", &[]);
    check("T1 w x\nT1 r x", &[]);
}

#[test]
fn release_orders_later_acquire() {
    check(
        "T1 acq l\nT1 w x\nT1 rel l\nT2 acq l\nT2 w x\nT2 rel l",
        &[],
    );
    // Acquire before the release: no edge.
    check(
        "T2 acq m\nT2 rel m\nT1 acq l\nT1 w x\nT1 rel l\nT2 w x",
        &[(5, 3)],
    );
    // Different locks do not order.
    check(
        "T1 acq l\nT1 w x\nT1 rel l\nT2 acq m\nT2 w x\nT2 rel m",
        &[(4, 1)],
    );
}

#[test]
fn transitive_ordering_through_a_third_thread() {
    check(
        "T1 w x\nT1 acq l\nT1 rel l\nT2 acq l\nT2 rel l\nT2 acq m\nT2 rel m\nT3 acq m\nT3 rel m\nT3 r x",
        &[],
    );
}

#[test]
fn nested_locks_and_out_of_order_release() {
    // Common inner lock b orders the writes.
    check(
        "T1 acq a\nT1 acq b\nT1 w x\nT1 rel b\nT1 rel a\nT2 acq b\nT2 w x\nT2 rel b",
        &[],
    );
    // T1 releases a before b; T2 synchronizes on a only, which T1 released
    // before its write: race.
    check(
        "T1 acq a\nT1 acq b\nT1 rel a\nT1 w x\nT1 rel b\nT2 acq a\nT2 w x\nT2 rel a",
        &[(6, 3)],
    );
    // Re-entrant acquire/release are no-ops: the inner release is not the
    // real one, so T2's acquire after it is still ordered only by the outer.
    check(
        "T1 acq l\nT1 acq l\nT1 w x\nT1 rel l\nT1 rel l\nT2 acq l\nT2 r x\nT2 rel l",
        &[],
    );
}

#[test]
fn fork_and_join_are_hard_edges() {
    check(
        "T1 w x\nT1 fork T2\nT2 w x\nT2 r x\nT1 join T2\nT1 r x",
        &[],
    );
    // Parent writes after the fork: races with the child.
    check("T1 fork T2\nT1 w x\nT2 r x\nT1 join T2", &[(2, 1)]);
    // Child writes, parent reads before joining: race.
    check("T1 fork T2\nT2 w x\nT1 r x\nT1 join T2", &[(2, 1)]);
    // Joining through another thread: T3 joins T2, then T3's release orders T1.
    check(
        "T1 fork T2\nT2 w x\nT3 join T2\nT3 acq l\nT3 rel l\nT1 acq l\nT1 r x\nT1 rel l",
        &[],
    );
}

#[test]
fn child_without_events_contributes_no_edge() {
    // T2 has no events: no first event for the fork edge, no last event for
    // the join edge, so T1's write is not ordered before T3's read.
    check("T1 w x\nT1 fork T2\nT3 join T2\nT3 r x", &[(3, 0)]);
}

#[test]
fn volatiles_follow_the_java_memory_model() {
    // vw -> later vr orders.
    check("T1 w x\nT1 vw v\nT2 vr v\nT2 r x", &[]);
    // vr before vw: no edge.
    check("T2 vr v\nT1 w x\nT1 vw v\nT2 r x", &[(3, 1)]);
    // vw -> vw is not an edge.
    check("T1 w x\nT1 vw v\nT2 vw v\nT2 w x", &[(3, 0)]);
    // vr -> vw is not an edge.
    check("T1 w x\nT1 vr v\nT2 vw v\nT2 w x", &[(3, 0)]);
    // Different volatile variables do not order; volatile accesses never race.
    check(
        "T1 w x\nT1 vw v\nT2 vr u\nT2 r x\nT2 vw v\nT1 vw v",
        &[(3, 0)],
    );
}

#[test]
fn read_shared_then_write() {
    // Two concurrent readers after an ordered write; a later write by a
    // third thread races with both reads; the witness is the latest read.
    let text = "T0 w x\nT0 fork T1\nT0 fork T2\nT1 r x\nT2 r x\nT0 w x";
    check(text, &[(5, 4)]);
    let t = tr(text);
    let ep = run("epoch", None, &t);
    assert_eq!(ep.stats["read_share_transitions"], 1);
    // Joined readers: the write is ordered after both.
    check(
        "T0 w x\nT0 fork T1\nT0 fork T2\nT1 r x\nT2 r x\nT0 join T1\nT0 join T2\nT0 w x",
        &[],
    );
    // Same-epoch reads: the witness is the later read of T1.
    check("T0 fork T1\nT1 r x\nT1 r x\nT0 w x", &[(3, 2)]);
}

#[test]
fn later_races_differ_as_documented() {
    // w1 (T1) and w2 (T2) race; T3 synchronizes with T2 only, then reads.
    // vc reports the read (it races with w1); FastTrack and Goldilocks keep
    // only the last write (w2, ordered) and miss it. Same first race.
    let t = tr("T1 w x\nT2 w x\nT2 acq l\nT2 rel l\nT3 acq l\nT3 r x\nT3 rel l");
    assert_eq!(pairs(&run("vc", None, &t)), [(1, 0), (5, 0)]);
    for e in ["epoch", "lockset"] {
        let r = run(e, None, &t);
        assert_eq!(pairs(&r), [(1, 0)], "engine {e}");
        assert_eq!(
            r.first_race_per_variable(),
            run("vc", None, &t).first_race_per_variable()
        );
    }
}

#[test]
fn windows_limit_the_pair_distance() {
    let t = tr("T1 w x\nT3 w y\nT3 w y\nT2 r x");
    assert_eq!(pairs(&run("vc", None, &t)), [(3, 0)]);
    for e in ["vc", "epoch", "lockset", "eraser"] {
        assert_eq!(pairs(&run(e, Some(3), &t)), [], "engine {e}, window 3");
        assert_eq!(
            pairs(&run(e, Some(4), &t)),
            [(3, 0)],
            "engine {e}, window 4"
        );
    }
    // With a window the witness is the latest unordered access inside it.
    let t = tr("T1 w x\nT2 w x\nT3 r x");
    assert_eq!(pairs(&run("vc", Some(2), &t)), [(1, 0), (2, 1)]);
}

#[test]
fn eraser_is_a_superset_and_labelled_unsound() {
    // Fork/join hand-over: HB-ordered, but no common lock.
    let t = tr("T1 w x\nT1 fork T2\nT2 w x\nT1 join T2\nT1 r x");
    assert!(run("vc", None, &t).races.is_empty());
    let er = run("eraser", None, &t);
    assert_eq!(er.racy_events(), [2, 4]);
    assert!(er.notes.iter().any(|n| n.contains("UNSOUND")));
    assert_eq!(er.relation, cprace::relation::Relation::Lockset);
    // Initialization by one thread, then unlocked reads by another: Eraser's
    // original Exclusive state would hide this real race; ours reports it.
    let t = tr("T1 w x\nT2 r x\nT2 r x");
    assert_eq!(run("vc", None, &t).racy_events(), [1, 2]);
    assert_eq!(run("eraser", None, &t).racy_events(), [1, 2]);
    // Consistently locked: no warning.
    let t = tr("T1 acq l\nT1 w x\nT1 rel l\nT2 acq l\nT2 r x\nT2 rel l");
    assert!(run("eraser", None, &t).races.is_empty());
    // Read-only sharing without locks is not a violation.
    let t = tr("T1 r x\nT2 r x");
    assert!(run("eraser", None, &t).races.is_empty());
}

#[test]
fn cp_paper_figure3_polarcoord_trace_a() {
    // CP paper, Figures 2-3 (trace A, as HotSpot schedules it): main forks
    // both threads; T1 runs setRadius (count++, then the synchronized write),
    // then T2 runs getAngle (synchronized read, then count++). T1's release
    // happens-before T2's acquire, so HB (like FastTrack and DJIT+, as the
    // paper says) sees no race on count, although trace B shows one.
    let text = "main fork T1\nmain fork T2\n\
                T1 r count\nT1 w count\nT1 acq this\nT1 w radius\nT1 rel this\n\
                T2 acq this\nT2 r angle\nT2 rel this\nT2 r count\nT2 w count";
    check(text, &[]);
    // Eraser flags count (no lock protects it): the unsound baseline's view.
    let t = tr(text);
    assert_eq!(run("eraser", None, &t).racy_variables().len(), 1);
    // Trace B: T2's increment happens before T1's critical section.
    let b = "main fork T1\nmain fork T2\n\
             T1 r count\nT1 w count\nT2 acq this\nT2 r angle\nT2 rel this\nT2 r count\nT2 w count\n\
             T1 acq this\nT1 w radius\nT1 rel this";
    check(b, &[(7, 3), (8, 3)]);
}
