//! The example traces of wcp-2017 (Figures 1-4) with the verdicts the paper
//! states, checked on both WCP engines. Figures 2b, 3 and 4 are the paper's
//! cases where CP misses a predictable race and WCP reports it.

use cprace::race::wcp::{reference, vc};
use cprace::report::Report;
use cprace::trace::{Trace, load_str};

/// Build a trace from lines `thread op target`; `sync x` expands to the paper's
/// `acq(x) r(xVar) w(xVar) rel(x)`.
fn trace(text: &str) -> Trace {
    let mut csv = String::from("thread,op,target\n");
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [t, op, target] = parts[..] else {
            panic!("bad line {line}")
        };
        if op == "sync" {
            for (o, x) in [
                ("acq", target.to_string()),
                ("r", format!("{target}Var")),
                ("w", format!("{target}Var")),
                ("rel", target.to_string()),
            ] {
                csv.push_str(&format!("{t},{o},{x}\n"));
            }
        } else {
            csv.push_str(&format!("{t},{op},{target}\n"));
        }
    }
    load_str(&csv, None).expect("valid figure trace")
}

/// Run both engines, check they agree, return the vc report.
fn both(t: &Trace) -> Report {
    let v = vc::analyze(t, None);
    let r = reference::analyze(t, None);
    assert_eq!(v.racy_events(), r.racy_events(), "engines disagree");
    assert_eq!(v.races, r.races, "engines pick different witnesses");
    v
}

/// (first, second) of every witness.
fn pairs(r: &Report) -> Vec<(u32, u32)> {
    r.races.iter().map(|r| (r.first.id, r.second.id)).collect()
}

#[test]
fn figure_1a_cannot_swap_critical_sections() {
    let t = trace(
        "t1 acq l
         t1 r x
         t1 w x
         t1 rel l
         t2 acq l
         t2 r x
         t2 w x
         t2 rel l",
    );
    assert!(both(&t).races.is_empty());
}

#[test]
fn figure_1b_swappable_critical_sections_race_on_y() {
    let t = trace(
        "t1 w y
         t1 acq l
         t1 r x
         t1 rel l
         t2 acq l
         t2 r x
         t2 rel l
         t2 r y",
    );
    // w(y) (event 0) and r(y) (event 7): HB orders them, WCP does not.
    assert_eq!(pairs(&both(&t)), vec![(0, 7)]);
}

#[test]
fn figure_2a_no_predictable_race() {
    let t = trace(
        "t1 w y
         t1 acq l
         t1 w x
         t1 rel l
         t2 acq l
         t2 r x
         t2 r y
         t2 rel l",
    );
    assert!(both(&t).races.is_empty());
}

#[test]
fn figure_2b_race_cp_misses() {
    let t = trace(
        "t1 w y
         t1 acq l
         t1 w x
         t1 rel l
         t2 acq l
         t2 r y
         t2 r x
         t2 rel l",
    );
    // CP orders the critical sections; WCP only orders rel(l) before r(x).
    assert_eq!(pairs(&both(&t)), vec![(0, 5)]);
}

#[test]
fn figure_3_weaker_rule_b() {
    // Lines 1-12 of the figure; sync(x) is four events, so r(z) (line 3) is
    // event 5 and w(z) (line 12) is event 17.
    let t = trace(
        "t1 acq l
         t1 sync x
         t1 r z
         t1 rel l
         t2 sync x
         t2 acq l
         t2 acq n
         t2 rel n
         t2 rel l
         t3 acq n
         t3 rel n
         t3 w z",
    );
    let r = both(&t);
    assert_eq!(
        pairs(&r),
        vec![(5, 17)],
        "CP: no race; WCP: race between r(z) and w(z)"
    );
    // And the relation is as the paper explains: e4 ≺WCP e9 (rule b), but
    // nothing composes from there to w(z).
    let d = reference::derive(&t);
    let (e4, e9) = (6, 14);
    assert!(
        d.wcp.contains(&(e4, e9)),
        "rule (b) orders the releases of l"
    );
    assert!(!d.wcp.contains(&(5, 17)));
}

#[test]
fn figure_4_race_cp_misses() {
    // sync(x) at lines 8 and 14 is four events each: r(z) (line 4) is event 3,
    // w(z) (line 15) is event 20.
    let t = trace(
        "t1 acq l
         t1 acq m
         t1 rel m
         t1 r z
         t1 rel l
         t2 acq m
         t2 acq n
         t2 sync x
         t2 rel n
         t2 rel m
         t3 acq n
         t3 acq l
         t3 rel l
         t3 sync x
         t3 w z
         t3 rel n",
    );
    let r = both(&t);
    assert_eq!(
        pairs(&r),
        vec![(3, 20)],
        "CP orders r(z) before w(z); WCP does not"
    );
    // Rule (b) gives e9 ≺WCP e16 (the releases of n), not e9 ≺ e11.
    let d = reference::derive(&t);
    let (e9, e11, e16) = (11, 13, 21);
    assert!(d.wcp.contains(&(e9, e16)));
    assert!(!d.wcp.contains(&(e9, e11)));
}

#[test]
fn hard_edges_order_fork_join_and_volatiles() {
    let t = trace(
        "main w x
         main fork c
         c r x
         c vw v
         main vr v
         main w x
         c2 w y
         c2 vr v
         c2 r y",
    );
    // fork orders w(x) before c's r(x); vw -> vr orders c's r(x) before main's
    // second w(x); c2 only races with nothing (same thread on y).
    assert!(both(&t).races.is_empty());
    let u = trace(
        "main vr v
         c w x
         c vw v
         main w x",
    );
    // vr before vw: no edge, so the writes race.
    assert_eq!(pairs(&both(&u)), vec![(1, 3)]);
}
