//! The reference engines on the CP paper's figures (causally-precedes-2012,
//! Sections 1-3), written as inline traces, and on the fixed semantics of the
//! brief (fork/join and volatile edges, unreleased critical sections, windows).
//! `sync(n)` is the paper's shorthand for `acq(n) r(nVar) w(nVar) rel(n)`.

use cprace::engine::reference::{self, compare};
use cprace::race::cp::reference as cp;
use cprace::race::hb::reference as hb;
use cprace::report::Report;
use cprace::trace::{EventId, Trace, load_str};

/// Build a trace from `thread op(target)` steps; `sync(n)` expands to four events.
fn trace(steps: &[&str]) -> Trace {
    let mut text = String::new();
    for (i, s) in steps.iter().enumerate() {
        let (t, op) = s.split_once(' ').expect("step `thread op(target)`");
        if let Some(n) = op.strip_prefix("sync(").and_then(|r| r.strip_suffix(')')) {
            for e in [
                format!("acq({n})"),
                format!("r({n}Var)"),
                format!("w({n}Var)"),
                format!("rel({n})"),
            ] {
                text.push_str(&format!("{t}|{e}|L{i}\n"));
            }
        } else {
            text.push_str(&format!("{t}|{op}|L{i}\n"));
        }
    }
    load_str(&text, None).expect("valid figure trace")
}

fn cp_racy(t: &Trace, window: Option<u64>) -> Vec<EventId> {
    cp::analyze(t, window).expect("small trace").racy_events()
}

fn hb_racy(t: &Trace, window: Option<u64>) -> Vec<EventId> {
    hb::analyze(t, window).expect("small trace").racy_events()
}

/// Figure 1: the release-acquire edge on lock 1 is a CP edge by rule (a), so
/// the two writes to y are CP-ordered: no race for HB or CP.
#[test]
fn figure_1_no_race_on_y() {
    let t = trace(&[
        "T1 w(y)",
        "T1 acq(l1)",
        "T1 w(x)",
        "T1 rel(l1)",
        "T2 acq(l1)",
        "T2 r(x)",
        "T2 rel(l1)",
        "T2 w(y)",
    ]);
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert!(
        r.rule_a.contains(&(3, 4)),
        "rule (a) edge rel(l1) -> acq(l1): {:?}",
        r.rule_a
    );
    assert!(r.cp.contains(&(0, 7)), "w(y) CP-before w(y)");
}

const POLAR: [&str; 10] = [
    "T1 r(count)",
    "T1 w(count)",
    "T1 acq(this)",
    "T1 w(radius)",
    "T1 rel(this)",
    "T2 acq(this)",
    "T2 r(angle)",
    "T2 rel(this)",
    "T2 r(count)",
    "T2 w(count)",
];

/// Figure 3(A), PolarCoord: HB says "no race", CP says "race" on count.
#[test]
fn figure_3a_polarcoord_cp_race_on_count() {
    let t = trace(&POLAR);
    assert_eq!(cp_racy(&t, None), vec![8, 9]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert!(r.cp.is_empty(), "no CP edge at all: {:?}", r.cp);
    let rep = cp::analyze(&t, None).unwrap();
    let w = rep.races.iter().find(|r| r.second.id == 8).unwrap();
    assert_eq!(
        w.first.id, 1,
        "witness of r(count) is the latest unordered write"
    );
    let w = rep.races.iter().find(|r| r.second.id == 9).unwrap();
    assert_eq!(
        w.first.id, 1,
        "witness of w(count) is the latest unordered access"
    );
}

/// Figure 2's program forks the two threads from main: the fork edges are hard
/// CP edges but order nothing between the two workers, so the race remains.
#[test]
fn figure_3a_with_forks_and_joins() {
    let mut steps = vec!["main w(count)", "main fork(T1)", "main fork(T2)"];
    steps.extend(POLAR);
    steps.extend(["main join(T1)", "main join(T2)", "main r(count)"]);
    let t = trace(&steps);
    assert_eq!(cp_racy(&t, None), vec![11, 12]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    assert_eq!(cp_racy(&t, Some(1000)), vec![11, 12]);
}

/// The window K orders HB pairs K or more apart (rule (w)); every pair is
/// checked: on PolarCoord, w(count)@1 - r(count)@8 are 7 apart, w(count)@9 is 8
/// from w(count)@1.
#[test]
fn figure_3a_windows() {
    let t = trace(&POLAR);
    assert_eq!(cp_racy(&t, Some(5)), Vec::<EventId>::new());
    assert_eq!(cp_racy(&t, Some(8)), vec![8]);
    assert_eq!(cp_racy(&t, Some(9)), vec![8, 9]);
    assert_eq!(cp_racy(&t, Some(1000)), vec![8, 9]);
    let r = cp::derive_trace(&t, Some(8));
    assert!(r.cp.contains(&(0, 8)) && r.cp.contains(&(1, 9)) && !r.cp.contains(&(1, 8)));
}

/// Figure 4: a certain race on y that HB does not report.
#[test]
fn figure_4_race_hb_misses() {
    let t = trace(&[
        "T1 w(y)",
        "T1 acq(l)",
        "T1 rel(l)",
        "T2 acq(l)",
        "T2 rel(l)",
        "T2 w(y)",
    ]);
    assert_eq!(cp_racy(&t, None), vec![5]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
}

/// Figure 5, reconstructed from the text of Section 3.1 (the figure itself is an
/// image): Thread 2's critical section on l contains sync(n); Thread 3 syncs on
/// n and then runs an empty critical section on l. Rule (b) orders the two
/// sections on l (sync(n) in Thread 2 is CP-before acq(l) in Thread 3), which
/// orders the writes to x. Without Thread 3's empty section, CP reports a race.
#[test]
fn figure_5_no_race_thanks_to_rule_b() {
    let with_cs = [
        "T2 acq(l)",  // 0
        "T2 sync(n)", // 1-4
        "T1 acq(m)",  // 5
        "T1 w(x)",    // 6
        "T1 rel(m)",  // 7
        "T2 acq(m)",  // 8
        "T2 rel(m)",  // 9
        "T3 sync(n)", // 10-13
        "T2 rel(l)",  // 14
        "T3 acq(l)",  // 15
        "T3 rel(l)",  // 16
        "T3 w(x)",    // 17
    ];
    let t = trace(&with_cs);
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert!(
        r.rule_b.contains(&(14, 15)),
        "rule (b) orders the sections on l: {:?}",
        r.rule_b
    );
    assert!(
        !r.rule_a.contains(&(14, 15)),
        "rule (a) does not: {:?}",
        r.rule_a
    );
    assert!(r.rule_a.contains(&(4, 10)), "sync(n) is a rule (a) edge");
    assert!(
        !r.rule_a.contains(&(7, 8)),
        "the sections on m do not conflict"
    );
    assert!(r.cp.contains(&(6, 17)));

    let without: Vec<&str> = with_cs
        .iter()
        .copied()
        .filter(|s| !s.starts_with("T3 acq(l)") && !s.starts_with("T3 rel(l)"))
        .collect();
    let t = trace(&without);
    assert_eq!(
        cp_racy(&t, None),
        vec![15],
        "without T3's empty section on l the writes race"
    );
    assert_eq!(
        hb_racy(&t, None),
        vec![15],
        "an HB race even: nothing reaches Thread 3 after x is written"
    );
}

const FIG8: [&str; 12] = [
    "T1 acq(m)",
    "T1 sync(o)",
    "T1 w(x)",
    "T1 acq(n)",
    "T1 rel(n)",
    "T1 rel(m)",
    "T2 acq(n)",
    "T2 acq(m)",
    "T2 rel(m)",
    "T2 w(x)",
    "T2 sync(o)",
    "T2 rel(n)",
];

/// Figure 8 (left): a CP race between the two writes to x that HB misses; the
/// reordering on the right exposes it as an HB race.
#[test]
fn figure_8_cp_race() {
    let t = trace(&FIG8);
    assert_eq!(cp_racy(&t, None), vec![12]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert_eq!(
        r.rule_a.iter().copied().collect::<Vec<_>>(),
        vec![(4, 13)],
        "only sync(o) is a rule (a) edge"
    );

    let right = trace(&[
        "T2 acq(n)",
        "T2 acq(m)",
        "T2 rel(m)",
        "T1 acq(m)",
        "T1 sync(o)",
        "T1 w(x)",
        "T2 w(x)",
        "T2 sync(o)",
        "T2 rel(n)",
        "T1 acq(n)",
        "T1 rel(n)",
        "T1 rel(m)",
    ]);
    assert_eq!(hb_racy(&right, None), vec![9]);
    assert_eq!(cp_racy(&right, None), vec![9]);
}

/// Figure 9: a CP race on x (the paper: a deadlock, not a race, is predictable);
/// HB orders the writes through lock m.
#[test]
fn figure_9_cp_race() {
    let t = trace(&[
        "T1 acq(m)",
        "T1 acq(l)",
        "T1 rel(l)",
        "T1 w(x)",
        "T1 rel(m)",
        "T2 acq(l)",
        "T2 acq(m)",
        "T2 rel(m)",
        "T2 w(x)",
        "T2 rel(l)",
    ]);
    assert_eq!(cp_racy(&t, None), vec![8]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    assert!(cp::derive_trace(&t, None).cp.is_empty());
}

/// HB follows the Java memory model: only a volatile write before a later
/// volatile read of the same variable by another thread is an edge. CP keeps
/// every conflicting pair of volatile accesses of different threads in trace
/// order (vw -> vr, vr -> vw, vw -> vw; docs/src/semantic-decisions.md "Semantic decisions"), so it
/// orders the second and third traces, where HB does not.
#[test]
fn volatile_edges_hb_java_cp_every_conflicting_pair() {
    for (steps, hb, cp) in [
        (
            ["T1 w(x)", "T1 vw(v)", "T2 vr(v)", "T2 r(x)"],
            vec![],
            vec![],
        ),
        (
            ["T1 w(x)", "T1 vr(v)", "T2 vw(v)", "T2 r(x)"],
            vec![3],
            vec![],
        ),
        (
            ["T1 w(x)", "T1 vw(v)", "T2 vw(v)", "T2 r(x)"],
            vec![3],
            vec![],
        ),
        (
            ["T1 w(x)", "T1 vr(v)", "T2 vr(v)", "T2 r(x)"],
            vec![3],
            vec![3],
        ),
        (
            ["T1 w(x)", "T1 vw(v)", "T2 vr(u)", "T2 r(x)"],
            vec![3],
            vec![3],
        ),
    ] {
        let t = trace(&steps);
        assert_eq!(hb_racy(&t, None), hb, "hb on {steps:?}");
        assert_eq!(cp_racy(&t, None), cp, "cp on {steps:?}");
    }
}

/// Fork and join are hard edges for HB and CP.
#[test]
fn fork_join_are_hard_edges() {
    let t = trace(&[
        "main w(x)",
        "main fork(T1)",
        "T1 r(x)",
        "T1 w(x)",
        "main join(T1)",
        "main r(x)",
    ]);
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert!(r.hb.hard_edges.contains(&(1, 2)) && r.hb.hard_edges.contains(&(3, 4)));
}

/// A critical section never released extends to its thread's last event, so
/// rule (a) sees the read after the unreleased acquire.
#[test]
fn unreleased_section_extends_to_thread_end() {
    let t = trace(&[
        "T1 w(y)",
        "T1 acq(l)",
        "T1 w(x)",
        "T1 rel(l)",
        "T2 acq(l)",
        "T2 r(x)",
        "T2 w(y)",
    ]);
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    assert!(cp::derive_trace(&t, None).rule_a.contains(&(3, 4)));
}

/// Re-entrant acquires and releases are ignored: the inner release does not
/// end the section, so the outer one still conflicts with Thread 2's.
#[test]
fn reentrant_operations_are_ignored() {
    let t = trace(&[
        "T1 w(y)",
        "T1 acq(l)",
        "T1 acq(l)",
        "T1 rel(l)",
        "T1 w(x)",
        "T1 rel(l)",
        "T2 acq(l)",
        "T2 r(x)",
        "T2 rel(l)",
        "T2 w(y)",
    ]);
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    let r = cp::derive_trace(&t, None);
    assert_eq!(r.rule_a.iter().copied().collect::<Vec<_>>(), vec![(5, 6)]);
}

#[test]
fn oversized_traces_are_refused() {
    let steps: Vec<String> = (0..reference::MAX_EVENTS + 1)
        .map(|i| format!("T{} w(x)", i % 2))
        .collect();
    let refs: Vec<&str> = steps.iter().map(String::as_str).collect();
    let t = trace(&refs);
    let e = cp::analyze(&t, None).unwrap_err();
    assert!(e.to_string().contains("--engine datalog"), "{e}");
    let e = hb::analyze(&t, None).unwrap_err();
    assert!(e.to_string().contains("--engine vc"), "{e}");
}

#[test]
fn compare_names_the_first_difference() {
    let t = trace(&POLAR);
    let a = cp::analyze(&t, None).unwrap();
    let b = hb::analyze(&t, None).unwrap();
    assert_eq!(compare(&a, &a), Ok(()));
    let e = compare(&a, &b).unwrap_err();
    assert!(
        e.contains("event 8")
            && e.contains("cp/reference says racy")
            && e.contains("hb/reference says not racy"),
        "{e}"
    );
    let mut c = a.clone();
    c.races[1].first.id = 0;
    let e = compare(&a, &c).unwrap_err();
    assert!(e.contains("event 9"), "{e}");
    let w = cp::analyze(&t, Some(1000)).unwrap();
    assert!(compare(&a, &w).unwrap_err().contains("window"));
    let mut empty: Report = a.clone();
    empty.races.clear();
    assert!(compare(&empty, &a).unwrap_err().contains("event 8"));
}

/// Definition 2 does not ask rule (b)'s critical sections to belong to
/// different threads, so two sections of one thread on l are CP-ordered when
/// they contain CP-ordered events (here via sync(n) out to Thread 2 and sync(o)
/// back). That edge orders Thread 3's w(x), which reaches the first section
/// through lock m, before Thread 1's r(x): no CP race. (Restricting rule (b)
/// to different threads would report event 25; we keep the literal definition,
/// whose soundness the paper proves.)
#[test]
fn rule_b_applies_within_one_thread() {
    let t = trace(&[
        "T1 acq(l)",  // 0
        "T1 sync(n)", // 1-4
        "T3 w(x)",    // 5
        "T3 acq(m)",  // 6
        "T3 rel(m)",  // 7
        "T1 acq(m)",  // 8
        "T1 rel(m)",  // 9
        "T1 rel(l)",  // 10
        "T1 acq(l)",  // 11
        "T2 sync(n)", // 12-15
        "T2 sync(o)", // 16-19
        "T1 sync(o)", // 20-23
        "T1 rel(l)",  // 24
        "T1 r(x)",    // 25
    ]);
    let r = cp::derive_trace(&t, None);
    let mut a: Vec<_> = r.rule_a.iter().copied().collect();
    a.sort();
    assert_eq!(a, vec![(4, 12), (19, 20)]);
    assert!(r.rule_b.contains(&(10, 11)), "{:?}", r.rule_b);
    assert!(r.cp.contains(&(5, 25)));
    assert_eq!(cp_racy(&t, None), Vec::<EventId>::new());
    assert_eq!(hb_racy(&t, None), Vec::<EventId>::new());
}
