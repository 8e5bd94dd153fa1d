//! `cprace query`: witness chains replayed against the reference relations
//! (rules/hb.dl, rules/cp.dl), dumps against the reference relations restricted
//! to synchronization events, facts against `facts::Relations`, and the CLI.

use crate::common;

use common::cli::cprace;
use common::query::{
    Counts, Replay, arr, assert_not_after_is_not_ordered, cli_races_are_unordered_on_figures,
    dump_of, dump_rows, id, interesting_pairs, parse_csv_dump, query_json, query_text,
    replay_pairs, replay_races, sync_pairs_within, traces,
};
use common::traces::{dump, figure, figures};
use cprace::facts::{Facts, Relations};
use cprace::race::cp::Reporting;
use cprace::race::cp::reference::CpRelations;
use cprace::relation::Relation;
use cprace::tools::generate::{Config, trace};
use cprace::tools::query::{self, DumpFormat, is_sync_event};
use cprace::trace::{EventId, Format, Op, Trace, load_str};
use serde_json::Value;

/// The generated traces the property tests use (after the figures): small,
/// many accesses outside critical sections.
fn config(seed: u64) -> Config {
    Config {
        events: 10 + seed % 28,
        threads: 2 + (seed % 4) as u32,
        vars: 2 + (seed % 3) as u32,
        p_acquire: 0.3,
        p_unlocked_access: 0.5,
        ..common::query::config(seed)
    }
}

/// The reference relations and what checking a chain needs.
struct Oracle<'a> {
    t: &'a Trace,
    r: CpRelations,
    facts: Facts,
    window: Option<u64>,
    /// Paths are checked against HBv (what CP composes with) when true,
    /// against HB (`query --relation hb`) when false.
    hbv: bool,
}

impl Oracle<'_> {
    fn new(t: &Trace, window: Option<u64>) -> Oracle<'_> {
        Oracle {
            t,
            r: cprace::race::cp::reference::derive_trace(t, window),
            facts: Facts::new(t),
            window,
            hbv: true,
        }
    }

    /// The oracle of `query --relation hb`: plain HB, the Java memory model.
    fn hb_only(t: &Trace) -> Oracle<'_> {
        Oracle {
            hbv: false,
            ..Oracle::new(t, None)
        }
    }

    fn cp(&self, x: u32, y: u32) -> bool {
        self.r.cp.contains(&(x, y))
    }

    /// A CP chain: HB steps, exactly one CP step (a base edge or the window
    /// rule) with a justification that holds, HB steps. `just` holds the
    /// answer's justifications; rule (b) steps inside justification `level`
    /// may only refer to later ones (so the reasoning is not circular).
    fn check_cp_chain(
        &self,
        chain: &[Value],
        from: u32,
        to: u32,
        just: &[Value],
        level: Option<usize>,
    ) -> Result<(), String> {
        self.check_connects(chain, from, to)?;
        let mut cp_steps = 0;
        for s in chain {
            let kind = s["kind"].as_str().unwrap_or("");
            let (f, t) = (id(&s["from"]), id(&s["to"]));
            let d = &s["details"];
            match kind {
                "cp-edge" => {
                    cp_steps += 1;
                    if !self.cp(f, t) {
                        return Err(format!("CP edge {s} is not in the reference CP"));
                    }
                    let rule = s["rule"].as_str().unwrap_or("");
                    if rule == "hard" {
                        if !self.r.hb.hard_edges.contains(&(f, t))
                            && !self.r.volatile_edges.contains(&(f, t))
                            && !common::oracle::relaxed_edges(
                                self.t,
                                &common::oracle::hbv_matrix(self.t),
                            )
                            .contains(&(f as usize, t as usize))
                        {
                            return Err(format!("hard edge {s} is not a hard edge"));
                        }
                        continue;
                    }
                    let cs1 = self
                        .facts
                        .cs_of(f)
                        .filter(|c| c.rel == Some(f))
                        .ok_or(format!("{f} is no release"))?;
                    let cs2 = self
                        .facts
                        .cs_of(t)
                        .filter(|c| c.acq == t)
                        .ok_or(format!("{t} is no acquire"))?;
                    if cs1.lock != cs2.lock {
                        return Err(format!("{s}: sections on different locks"));
                    }
                    self.check_cs(&d["cs1"], cs1)?;
                    self.check_cs(&d["cs2"], cs2)?;
                    match rule {
                        "a" => {
                            let (e1, e2) =
                                (id(&d["conflict"][0]["id"]), id(&d["conflict"][1]["id"]));
                            if !self.r.rule_a.contains(&(f, t))
                                || !self.inside(e1, cs1)
                                || !self.inside(e2, cs2)
                                || !self.conflict(e1, e2)
                            {
                                return Err(format!("rule (a) step {s} does not hold"));
                            }
                        }
                        "b" | "window" => {
                            if d["cp_pair"]["from"] != cs1.acq || d["cp_pair"]["to"] != cs2.end {
                                return Err(format!("{s}: cp_pair is not (acq1, end2)"));
                            }
                            if !self.r.rule_b.contains(&(f, t)) || !self.cp(cs1.acq, cs2.end) {
                                return Err(format!("rule (b) step {s} does not hold"));
                            }
                            if rule == "window" {
                                let k = self.window.ok_or("window edge without a window")?;
                                if ((cs2.end - cs1.acq) as u64) < k || d["window"] != k {
                                    return Err(format!("window edge {s} spans less than K"));
                                }
                                self.check_hb_path(
                                    d["hb_path"].as_array().ok_or("no hb_path")?,
                                    cs1.acq,
                                    cs2.end,
                                )?;
                            } else {
                                let j =
                                    d["justification"].as_u64().ok_or("no justification")? as usize;
                                if level.is_some_and(|l| j <= l) {
                                    return Err(format!("{s}: circular justification {j}"));
                                }
                                let jv = just.get(j).ok_or("dangling justification")?;
                                if jv["from"] != cs1.acq || jv["to"] != cs2.end || jv["id"] != j {
                                    return Err(format!("justification {jv} does not match {s}"));
                                }
                            }
                        }
                        _ => return Err(format!("unknown rule in {s}")),
                    }
                }
                "window" => {
                    cp_steps += 1;
                    let k = self.window.ok_or("window step without a window")?;
                    if ((t - f) as u64) < k || d["window"] != k || d["distance"] != t - f {
                        return Err(format!("window step {s} spans less than K"));
                    }
                    self.check_hb_path(d["hb_path"].as_array().ok_or("no hb_path")?, f, t)?;
                }
                _ => self.check_hb_step(s)?,
            }
        }
        if cp_steps != 1 {
            return Err(format!("{cp_steps} CP steps in a CP chain"));
        }
        Ok(())
    }

    /// A whole CP answer that says "ordered", justifications included.
    fn check_cp_answer(&self, a: &Value) -> Result<(), String> {
        let (from, to) = (id(&a["from"]), id(&a["to"]));
        let just = a["justifications"].as_array().ok_or("no justifications")?;
        self.check_cp_chain(arr(&a["chain"]), from, to, just, None)?;
        for (i, j) in just.iter().enumerate() {
            self.check_cp_chain(
                arr(&j["chain"]),
                id(&j["from"]),
                id(&j["to"]),
                just,
                Some(i),
            )
            .map_err(|e| format!("justification {i}: {e}"))?;
        }
        Ok(())
    }
}

impl Replay for Oracle<'_> {
    fn trace(&self) -> &Trace {
        self.t
    }

    fn relation(&self) -> Relation {
        Relation::Cp
    }

    fn ordered(&self, x: u32, y: u32) -> bool {
        self.cp(x, y)
    }

    /// HBv, what CP composes with (`rules/cp.dl`), or HB.
    fn hb(&self, x: u32, y: u32) -> bool {
        if self.hbv {
            self.r.hbv.contains(&(x, y))
        } else {
            self.r.hb.hb.contains(&(x, y))
        }
    }

    /// The edge is one of `rules/hb.dl`'s generating edges, or one of the
    /// volatile edges `rules/cp.dl` adds for HBv.
    fn generating_edge(&self, kind: &str, f: u32, to: u32) -> bool {
        let (x, y) = (self.ev(f), self.ev(to));
        let hard = self.r.hb.hard_edges.contains(&(f, to));
        match kind {
            "release-acquire" => self.r.hb.edges.contains(&(f, to)),
            "fork" => x.op == Op::Fork && x.target == y.thread && hard,
            "join" => y.op == Op::Join && y.target == x.thread && hard,
            "volatile" if self.hbv => self.r.volatile_edges.contains(&(f, to)),
            "volatile" => {
                x.op == Op::VolatileWrite
                    && y.op == Op::VolatileRead
                    && x.target == y.target
                    && hard
            }
            _ => false,
        }
    }

    fn check_answer(&self, a: &Value) -> Result<(), String> {
        self.check_cp_answer(a)
    }

    /// Nothing orders this release before this acquire in CP: no
    /// conflicting accesses, no CP-ordered events.
    fn check_dropped_step(&self, s: &Value, f: u32, t: u32, _to: u32) -> Result<(), String> {
        let d = &s["details"]["cp_dropped"];
        let cs1 = self.facts.cs_of(f).ok_or("no section")?;
        let cs2 = self.facts.cs_of(t).ok_or("no section")?;
        self.check_cs(&d["cs1"], cs1)?;
        self.check_cs(&d["cs2"], cs2)?;
        let conflicts = (cs1.acq..=cs1.end).any(|x| {
            (cs2.acq..=cs2.end)
                .any(|y| self.inside(x, cs1) && self.inside(y, cs2) && self.conflict(x, y))
        });
        if self.cp(f, t)
            || conflicts
            || self.cp(cs1.acq, cs2.end)
            || !d["conflicting_accesses"].is_null()
            || d["cp_ordered_events"] != false
        {
            return Err(format!("dropped step {s} is in fact a CP edge"));
        }
        Ok(())
    }
}

#[test]
fn explained_cp_pairs_replay_against_the_reference() {
    let mut counts = Counts::default();
    for (name, t) in traces(260, config) {
        for k in [None, Some(3), Some(8)] {
            replay_pairs(&Oracle::new(&t, k), &name, k, &mut counts, |_, _, _, _| {});
        }
    }
    // The traces exercise every case, rule (b) included.
    counts.assert_more_than(1000, 1000, 1000, 20);
}

#[test]
fn explained_hb_pairs_replay_against_the_reference() {
    for (name, t) in traces(200, config) {
        let o = Oracle::hb_only(&t);
        let q = query::engine(&t, Relation::Hb, None).unwrap();
        for (x, y) in interesting_pairs(&t) {
            let j = q.explain(x, y).to_json(&t);
            let ctx = || format!("{name} pair {x},{y}\n{j:#}\n{}", dump(&t));
            assert_eq!(j["ordered"], o.hb(x, y), "{}", ctx());
            if o.hb(x, y) {
                if let Err(e) = o.check_hb_path(arr(&j["chain"]), x, y) {
                    panic!("{e}\n{}", ctx());
                }
            } else {
                assert!(arr(&j["chain"]).is_empty(), "{}", ctx());
                assert!(
                    j["explanation"]
                        .as_str()
                        .unwrap()
                        .contains("does not happen before"),
                    "{}",
                    ctx()
                );
            }
        }
    }
}

#[test]
fn every_reported_race_is_unordered() {
    let mut races = 0;
    for (name, t) in traces(300, config) {
        for k in [None, Some(4), Some(1000)] {
            let report = cprace::race::cp::analyze(&t, k, Reporting::All);
            races += report.races.len();
            replay_races(&Oracle::new(&t, k), &name, k, &report.races);
        }
    }
    assert!(races > 500, "only {races} races");
}

#[test]
fn not_after_is_not_ordered() {
    let t = &figures()[0].1;
    for rel in [Relation::Hb, Relation::Cp] {
        assert_not_after_is_not_ordered(t, rel);
    }
}

#[test]
fn dumps_equal_the_reference_among_sync_events_within_the_window() {
    for (name, t) in traces(400, config) {
        for k in [None, Some(3), Some(10)] {
            let o = Oracle::new(&t, k);
            for (rel, pairs) in [(Relation::Cp, &o.r.cp), (Relation::Hb, &o.r.hb.hb)] {
                let (text, base, got) = dump_rows(&t, rel, k);
                assert_eq!(
                    got,
                    sync_pairs_within(&t, pairs, k),
                    "{name} {} K={k:?}\n{text}\n{}",
                    rel.name(),
                    dump(&t)
                );
                let mut sorted = base.clone();
                sorted.sort();
                assert_eq!(sorted, base, "base edges sorted");
                for (f, to, rule) in &base {
                    assert!(
                        o.cp(*f, *to),
                        "{name} K={k:?}: base edge {f}->{to} ({rule}) not CP"
                    );
                    assert!(["a", "b", "window", "hard"].contains(&rule.as_str()));
                    if let Some(k) = k {
                        assert!(((to - f) as u64) < k, "base edges lie within the window");
                    }
                }
            }
        }
    }
}

#[test]
fn hb_dump_equals_the_datalog_hb_closure() {
    for seed in 0..200 {
        let t = trace(&config(seed));
        for k in [None, Some(5)] {
            let closure = cprace::race::hb::datalog::HbClosure::new(&t, k);
            let ev = |s: u32| closure.sync.event(s);
            let want: Vec<(u32, u32)> = closure
                .pairs
                .iter()
                .map(|&(x, y)| (ev(x), ev(y)))
                .filter(|&(x, y)| {
                    is_sync_event(t.events[x as usize].op) && is_sync_event(t.events[y as usize].op)
                })
                .collect();
            let (_, got) = parse_csv_dump(&dump_of(&t, Relation::Hb, k, DumpFormat::Csv), "hb");
            assert_eq!(got, want, "seed {seed} K={k:?}");
        }
    }
}

#[test]
fn facts_equal_the_papers_input_relations() {
    for (name, t) in traces(150, config) {
        let facts = Facts::new(&t);
        let r = Relations::new(&t, &facts);
        let want: Vec<&Vec<(u32, u32)>> = vec![
            &r.trace_next,
            &r.thread_for_event,
            &r.acq_event,
            &r.rel_event,
            &r.read_event,
            &r.write_event,
            &r.volatile_read_event,
            &r.volatile_write_event,
            &r.fork_event,
            &r.join_event,
            &r.matching,
            &r.cs_end,
            &r.in_cs,
            &r.fork_join_edge,
        ];
        for (k, w) in want.into_iter().enumerate() {
            let mut got = Vec::new();
            query::export::for_each_tuple(&t, &facts, k, &mut |a, b| {
                match b {
                    query::export::Value::Id(b) => got.push((a, b)),
                    query::export::Value::Name(_) => panic!("a name in {k}"),
                }
                Ok(())
            })
            .unwrap();
            let mut w = w.clone();
            w.sort_unstable();
            assert_eq!(got, w, "{name}: relation {}", query::export::RELATIONS[k].0);
        }
    }
}

// ---- the command line ----

#[test]
fn cli_reported_races_are_unordered_on_every_figure() {
    let races = cli_races_are_unordered_on_figures("cp, window 1000: event", |t| {
        Box::new(Oracle::new(t, Some(1000)))
    });
    assert!(races >= 5, "only {races} races on the figures");
}

#[test]
fn cli_pair_json_shape_and_text() {
    let f = figure("cp-fig1.csv");
    let j = query_json(&f, &["--relation", "cp", "--pair", "0,7"]);
    assert_eq!(j["ordered"], true);
    assert_eq!(j["window"], 1000, "cp defaults to window 1000");
    let chain = arr(&j["chain"]);
    assert_eq!(chain.len(), 3);
    for s in chain {
        for key in ["from", "to", "kind", "details", "from_event", "to_event"] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
    }
    assert_eq!(chain[1]["kind"], "cp-edge");
    assert_eq!(chain[1]["rule"], "a");
    assert_eq!(chain[1]["details"]["conflict"][0]["id"], 2);
    assert_eq!(chain[1]["details"]["conflict"][1]["id"], 5);
    let text = query_text(&f, &["--relation", "cp", "--pair", "0,7"]);
    assert!(
        text.starts_with("cp, window 1000: event 0 is ordered before event 7"),
        "{text}"
    );
    assert!(
        text.contains("2. #3 T1 rel(l) -> #4 T2 acq(l): CP edge by rule (a)"),
        "{text}"
    );
    // HB has no default window, and orders the pair along the same path.
    let j = query_json(&f, &["--relation", "hb", "--pair", "0,7"]);
    assert_eq!(j["window"], Value::Null);
    assert_eq!(arr(&j["chain"])[1]["kind"], "release-acquire");
}

#[test]
fn cli_unordered_pairs_exit_zero() {
    let f = figure("cp-fig3-polarcoord.csv");
    let j = query_json(&f, &["--relation", "cp", "--pair", "0,7"]);
    assert_eq!(
        (j["ordered"].clone(), j["hb_ordered"].clone()),
        (false.into(), true.into())
    );
    assert_eq!(
        arr(&j["chain"])[1]["details"]["cp_dropped"]["cp_ordered_events"],
        false
    );
    // Later-first and self pairs are answers too.
    for pair in ["7,0", "3,3"] {
        let text = query_text(&f, &["--relation", "cp", "--pair", pair]);
        assert!(
            text.contains("NOT ordered") && text.contains("not ordered:"),
            "{text}"
        );
    }
    // A small window orders the HB path by the window rule.
    let j = query_json(&f, &["--relation", "cp", "--pair", "0,7", "--window", "4"]);
    assert_eq!(j["ordered"], true);
    assert_eq!(arr(&j["chain"])[0]["kind"], "window");
}

#[test]
fn cli_rejects_bad_event_ids_and_usage() {
    let f = figure("cp-fig1.csv");
    let (code, out, err) = cprace(&["query", &f, "--relation", "cp", "--pair", "0,8"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("event 8 is not in the trace: it has 8 events (ids 0 to 7)"),
        "{err}"
    );
    for bad in ["0", "a,b", "1,-2", "1,2,3"] {
        let (code, _, err) = cprace(&["query", &f, "--relation", "cp", "--pair", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("pair of event ids"), "{err}");
    }
    let cases: [&[&str]; 6] = [
        &["--relation", "cp", "--pair", "0,1", "--format", "csv"],
        &["--relation", "cp", "--format", "text"],
        &["--pair", "0,1"],
        &[],
        &["--relation", "po"],
        &["--facts", "--relation", "cp"],
    ];
    for args in cases {
        let mut all = vec!["query", f.as_str()];
        all.extend_from_slice(args);
        let (code, out, err) = cprace(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
    }
}

#[test]
fn cli_dumps_and_facts() {
    let f = figure("cp-fig1.csv");
    let out = query_text(&f, &["--relation", "cp"]);
    assert_eq!(
        out,
        "relation,kind,rule,from,to,from_thread,from_op,from_target,from_loc,to_thread,to_op,to_target,to_loc\n\
         cp,base,a,3,4,T1,rel,l,cp-fig1:r4,T2,acq,l,cp-fig1:r5\n\
         cp,pair,,1,4,T1,acq,l,cp-fig1:r2,T2,acq,l,cp-fig1:r5\n\
         cp,pair,,1,6,T1,acq,l,cp-fig1:r2,T2,rel,l,cp-fig1:r7\n\
         cp,pair,,3,4,T1,rel,l,cp-fig1:r4,T2,acq,l,cp-fig1:r5\n\
         cp,pair,,3,6,T1,rel,l,cp-fig1:r4,T2,rel,l,cp-fig1:r7\n"
    );
    let out = query_text(&f, &["--facts"]);
    assert!(
        out.starts_with("relation,x,y,name\nTraceNext,0,1,\n"),
        "{out}"
    );
    assert!(
        out.contains("\nAcqEvent,1,0,\n") && out.contains("\nLockName,0,,l\n"),
        "{out}"
    );
    let j = query_json(&f, &["--facts"]);
    assert_eq!(
        j["MatchingCriticalSecBoundary"],
        serde_json::json!([[3, 1], [6, 4]])
    );
    assert_eq!(j["ThreadName"], serde_json::json!([[0, "T1"], [1, "T2"]]));
    assert_eq!(j.as_object().unwrap().len(), query::export::RELATIONS.len());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("facts");
    let out = query_text(&f, &["--facts-dir", d.to_str().unwrap()]);
    assert!(out.is_empty());
    for (name, ..) in query::export::RELATIONS {
        assert!(d.join(format!("{name}.facts")).exists(), "{name}");
    }
    let rel = std::fs::read_to_string(d.join("RelEvent.facts")).unwrap();
    assert_eq!(rel, "3\t0\n6\t0\n");
    let schema = std::fs::read_to_string(d.join("schema.dl")).unwrap();
    assert!(
        schema
            .contains(".decl InSameCriticalSec(e: number, acq: number)\n.input InSameCriticalSec")
    );
    assert!(schema.contains(".decl VariableName(x: number, name: symbol)"));
}

#[test]
fn cli_reads_any_format() {
    let text = "T1|acq(l)|\nT1|w(x)|\nT1|rel(l)|\nT2|acq(l)|\nT2|r(x)|\nT2|rel(l)|\n";
    let t = load_str(text, Some(Format::Std)).unwrap();
    let q = query::engine(&t, Relation::Cp, None).unwrap();
    let a = q.explain(0 as EventId, 5);
    assert!(a.ordered);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(&p, text).unwrap();
    let j = query_json(
        p.to_str().unwrap(),
        &["--relation", "cp", "--window", "none", "--pair", "0,5"],
    );
    assert_eq!(j["ordered"], true);
    assert_eq!(j["window"], Value::Null);
}
