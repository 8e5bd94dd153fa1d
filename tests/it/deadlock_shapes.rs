//! The classic deadlock shapes (data/deadlocks/) and the CP paper's deadlock
//! figure: what each report lists, with `--all` too, checked against the
//! exhaustive explorer of correct reorderings; the window; and a deadlock
//! SPDOffline's per-thread lock sets miss.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::oracle::{Mode, deadlock_after, deadlock_cycles};
use cprace::deadlock::{Options, analyze_path, analyze_trace};
use cprace::report::{Deadlock, Report};
use cprace::trace::{Trace, load, load_str};

fn path(dir: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(dir)
        .join(name)
}

/// `kind locks [requests]`, and `(why)` for a filtered cycle.
fn describe(t: &Trace, d: &Deadlock) -> String {
    let locks: Vec<&str> = d.locks().iter().map(|&l| t.names.lock(l)).collect();
    let events: Vec<String> = d.events().iter().map(|e| e.to_string()).collect();
    let mut s = format!(
        "{} {} [{}]",
        d.kind.as_str(),
        locks.join(","),
        events.join(",")
    );
    if let Some(why) = &d.filtered {
        s.push_str(&format!(" ({why})"));
    }
    s
}

fn describe_all(t: &Trace, r: &Report) -> Vec<String> {
    r.deadlocks.iter().map(|d| describe(t, d)).collect()
}

/// Load `name`, check the default and `--all` reports, the witnesses (by
/// the oracle and by `verify`'s checker) and whether the oracle finds a
/// deadlock (`reachable`, `sync_preserving`).
fn shape(
    t: &Trace,
    default: &[&str],
    all: &[&str],
    reachable: bool,
    sync_preserving: bool,
) -> Report {
    let r = analyze_trace(t, &Options::default());
    assert_eq!(describe_all(t, &r), default);
    let every = analyze_trace(
        t,
        &Options {
            all: true,
            ..Options::default()
        },
    );
    assert_eq!(describe_all(t, &every), all);
    let (any, _) = deadlock_cycles(t, Mode::All, 1_000_000);
    let (sp, _) = deadlock_cycles(t, Mode::SyncPreserving, 1_000_000);
    assert_eq!(!any.is_empty(), reachable, "reachable: {any:?}");
    assert_eq!(!sp.is_empty(), sync_preserving, "sync-preserving: {sp:?}");
    for d in r.deadlocks.iter().filter(|d| d.witness.is_some()) {
        let w = d.witness.as_ref().unwrap();
        let cycles = deadlock_after(t, w, &d.events()).unwrap();
        assert!(
            !cycles.is_empty(),
            "{}: no cycle after the witness",
            describe(t, d)
        );
        cprace::witness::deadlock::check(t, &d.events(), None, w).unwrap();
    }
    r
}

fn file(name: &str) -> Trace {
    load(&path("deadlocks", name), None).unwrap()
}

#[test]
fn two_threads_in_opposite_orders_deadlock() {
    let r = shape(
        &file("two-threads.std"),
        &["predicted b,a [1,5]"],
        &["predicted b,a [1,5]"],
        true,
        true,
    );
    assert_eq!(r.deadlocks[0].witness.as_deref(), Some(&[0, 4][..]));
}

#[test]
fn three_dining_philosophers_deadlock() {
    shape(
        &file("philosophers-3.std"),
        &["predicted f1,f2,f0 [1,5,9]"],
        &["predicted f1,f2,f0 [1,5,9]"],
        true,
        true,
    );
}

#[test]
fn an_inversion_ordered_by_happens_before_through_another_lock_is_predicted() {
    let r = shape(
        &file("hidden.std"),
        &["predicted b,a [1,9]"],
        &["predicted b,a [1,9]"],
        true,
        true,
    );
    // T2's section on m moves before T1's, which the witness leaves out.
    assert_eq!(r.deadlocks[0].witness.as_deref(), Some(&[0, 6, 7, 8][..]));
}

#[test]
fn a_gate_lock_fork_join_or_one_thread_rules_an_inversion_out() {
    shape(
        &file("gated.std"),
        &[],
        &["inversion b,a [2,8] (a gate lock, `g`, is held around its edges)"],
        false,
        false,
    );
    shape(
        &file("fork-join.std"),
        &[],
        &["inversion b,a [1,6] (fork and join order its edges)"],
        false,
        false,
    );
    shape(
        &file("one-thread.std"),
        &[],
        &["inversion b,a [1,5] (all its edges come from one thread)"],
        false,
        false,
    );
}

#[test]
fn inversions_no_sync_preserving_reordering_reaches_stay_potential() {
    // A read orders the halves: the lock graph's cycle is a false alarm.
    shape(
        &file("reads-from.std"),
        &["inversion b,a [1,7]"],
        &["inversion b,a [1,7]"],
        false,
        false,
    );
    // Reachable, but only by swapping two sections on l1.
    shape(
        &file("not-sync-preserving.std"),
        &["inversion l2,l1 [1,9]"],
        &["inversion l2,l1 [1,9]"],
        true,
        false,
    );
}

#[test]
fn blocked_requests_in_a_cycle_are_an_actual_deadlock() {
    let r = shape(
        &file("actual.std"),
        &["actual b,a [2,3]"],
        &["actual b,a [2,3]"],
        true,
        true,
    );
    let d = &r.deadlocks[0];
    assert_eq!(d.witness.as_deref(), Some(&[0, 1][..]));
    // The held locks and the requests' sites.
    let t = file("actual.std");
    let held: Vec<(&str, u32, &str)> = d
        .links
        .iter()
        .map(|l| {
            (
                t.names.lock(l.holder.lock),
                l.holder.acquire.id,
                t.names.loc(l.request.loc),
            )
        })
        .collect();
    assert_eq!(held, [("a", 0, "hang.c:11"), ("b", 1, "hang.c:21")]);
    shape(
        &file("self.std"),
        &["actual m [2]"],
        &["actual m [2]"],
        true,
        true,
    );
}

#[test]
fn cp_paper_figure_9_has_the_predicted_deadlock_its_race_stands_for() {
    let t = load(&path("figures", "cp-fig9.csv"), None).unwrap();
    let r = shape(
        &t,
        &["predicted l,m [1,6]"],
        &["predicted l,m [1,6]"],
        true,
        true,
    );
    assert_eq!(r.deadlocks[0].witness.as_deref(), Some(&[0, 5][..]));
    // CP's (first) race there has no witness: the CP theorem's deadlock.
    let mut cp = cprace::race::cp::analyze(&t, None, cprace::race::cp::Reporting::FirstRace);
    cprace::witness::attach(&mut cp, &t);
    assert_eq!(cp.racy_events(), [8]);
    assert_eq!(cp.witnesses, Some(vec![None]));
    assert!(
        cp.notes.iter().any(|n| n.contains("predictable deadlock")),
        "{:?}",
        cp.notes
    );
}

#[test]
fn a_critical_section_spanning_a_join_deadlocks_where_per_thread_lock_sets_see_nothing() {
    let t = file("join-holding.std");
    let r = shape(
        &t,
        &["predicted m2 [2]"],
        &[
            "predicted m2 [2]",
            "inversion m1,m2 [1,2] (its edges cannot come from distinct threads)",
        ],
        true,
        true,
    );
    let l = &r.deadlocks[0].links[0];
    assert_eq!(t.names.thread(l.holder.thread), "main");
    assert_eq!(l.holder.acquire.id, 5);
    assert_eq!(l.holder.joins.iter().map(|j| j.id).collect::<Vec<_>>(), [9]);
    // SPDOffline's lock sets are per thread: no cycle, nothing reported.
    let spd = analyze_trace(
        &t,
        &Options {
            through_joins: false,
            ..Options::default()
        },
    );
    assert!(spd.deadlocks.is_empty(), "{:?}", spd.deadlocks);
}

/// T1's half of an inversion, `gap` events of T3, then T2's half.
fn far_apart(gap: usize) -> Trace {
    let mut s = String::from("T1|acq(a)|\nT1|acq(b)|\nT1|rel(b)|\nT1|rel(a)|\n");
    for i in 0..gap {
        s.push_str(&format!("T3|w(y{})|\n", i % 7));
    }
    s.push_str("T2|acq(b)|\nT2|acq(a)|\nT2|rel(a)|\nT2|rel(b)|\n");
    load_str(&s, None).unwrap()
}

#[test]
fn the_window_bounds_how_far_back_a_prediction_reorders() {
    let t = far_apart(100);
    let with = |window| {
        let r = analyze_trace(
            &t,
            &Options {
                window,
                ..Options::default()
            },
        );
        describe_all(&t, &r)
    };
    assert_eq!(with(None), ["predicted b,a [1,105]"]);
    assert_eq!(with(Some(200)), ["predicted b,a [1,105]"]);
    // T1's half is in the base of a 50-event window: its request has run.
    assert_eq!(with(Some(50)), ["inversion b,a [1,105]"]);
}

#[test]
fn streaming_and_loaded_analyses_agree() {
    for name in [
        "two-threads.std",
        "hidden.std",
        "join-holding.std",
        "reads-from.std",
        "actual.std",
    ] {
        let p = path("deadlocks", name);
        let (streamed, names) = analyze_path(&p, None, &Options::default()).unwrap();
        let loaded = analyze_trace(&load(&p, None).unwrap(), &Options::default());
        let strip = |r: &Report| -> BTreeSet<String> {
            r.deadlocks
                .iter()
                .map(|d| format!("{:?} {:?} {:?}", d.kind, d.locks(), d.events()))
                .collect()
        };
        assert_eq!(strip(&streamed), strip(&loaded), "{name}");
        assert!(!names.locks.is_empty());
    }
}
