//! `cprace query --relation wcp`: dumps against the crepe reference WCP
//! (rules/wcp.dl) restricted to synchronization events, base edges re-checked
//! against the trace and shown to generate WCP, witness chains replayed step by
//! step (rule (b) justifications recursively), dropped HB steps re-checked,
//! reported races unordered, and the command line.

use crate::common;

use common::cli::{cprace, with_stdin};
use common::query::{
    BaseEdges, Counts, Replay, arr, assert_not_after_is_not_ordered,
    cli_races_are_unordered_on_figures, dump_rows, id, json_pairs, query_json, query_text,
    replay_pairs, replay_races, sync_pairs_within, traces,
};
use common::traces::{dump, figure, figures};
use cprace::facts::{CriticalSection, Facts};
use cprace::race::wcp::reference::{Derived, derive};
use cprace::relation::Relation;
use cprace::tools::generate::Config;
use cprace::trace::{Op, Trace};
use serde_json::{Value, json};

/// Small traces with nesting, fork/join and volatiles; every other one leans
/// on few variables and many critical sections, where rule (b) edges appear.
fn config(seed: u64) -> Config {
    Config {
        events: 12 + seed % 36,
        threads: 2 + (seed % 3) as u32,
        vars: 1 + (seed % 3) as u32,
        p_acquire: if seed.is_multiple_of(2) { 0.35 } else { 0.25 },
        p_unlocked_access: if seed.is_multiple_of(2) { 0.1 } else { 0.4 },
        ..common::query::config(seed)
    }
}

/// The reference WCP and HBv of a trace, and the checks of chains and edges.
/// Everything here is re-derived from the trace and `rules/wcp.dl`, never
/// from the query engine.
struct Oracle<'a> {
    t: &'a Trace,
    r: Derived,
    facts: Facts,
}

impl Oracle<'_> {
    fn new(t: &Trace) -> Oracle<'_> {
        Oracle {
            t,
            r: derive(t),
            facts: Facts::new(t),
        }
    }

    fn wcp(&self, x: u32, y: u32) -> bool {
        self.r.wcp.contains(&(x, y))
    }

    /// `x <=HBv y` (reflexive): WCP composes with HBv.
    fn hb_leq(&self, x: u32, y: u32) -> bool {
        x == y || self.r.hbv.contains(&(x, y))
    }

    /// The section released at `r`.
    fn released(&self, r: u32) -> Result<&CriticalSection, String> {
        self.facts
            .cs_of(r)
            .filter(|c| c.rel == Some(r))
            .ok_or(format!("{r} is no release"))
    }

    /// The section on `lock` holding `e` (the trace's own).
    fn section_of(&self, e: u32, lock: u32) -> Option<&CriticalSection> {
        self.facts
            .critical_sections
            .iter()
            .find(|c| c.lock == lock && self.inside(e, c))
    }

    /// Which hard edge `f -> to` is, if any.
    fn hard_kind(&self, f: u32, to: u32) -> Option<&'static str> {
        let (x, y) = (self.ev(f), self.ev(to));
        if self.facts.fork_edges.contains(&(f, to)) && x.op == Op::Fork && x.target == y.thread {
            Some("fork")
        } else if self.facts.join_edges.contains(&(f, to))
            && y.op == Op::Join
            && y.target == x.thread
        {
            Some("join")
        } else if common::oracle::volatile_edge(self.t, f as usize, to as usize) {
            Some("volatile")
        } else if common::oracle::relaxed_edges(self.t, &common::oracle::hbv_matrix(self.t))
            .contains(&(f as usize, to as usize))
        {
            Some("atomic")
        } else {
            None
        }
    }

    /// A base WCP edge `f -> to` with `rule`: a real instance of the rule,
    /// re-checked from the trace. Rule (b)'s premise is checked against the
    /// reference here; its chain is checked by [`Replay::check_answer`].
    fn check_edge_facts(&self, f: u32, to: u32, rule: &str) -> Result<(), String> {
        if !self.wcp(f, to) {
            return Err(format!(
                "base edge {f}->{to} ({rule}) is not in the reference WCP"
            ));
        }
        match rule {
            "hard" => self
                .hard_kind(f, to)
                .map(|_| ())
                .ok_or(format!("{f}->{to} is no hard edge")),
            "a" => {
                let cs1 = self.released(f)?;
                let cs2 = self
                    .section_of(to, cs1.lock)
                    .ok_or(format!("{to} is in no section on the lock of {f}"))?;
                let partner =
                    (cs1.acq..=cs1.end).any(|e| self.inside(e, cs1) && self.conflict(e, to));
                if !self.ev(to).op.is_memory() || f >= to || !partner || cs2.thread == cs1.thread {
                    return Err(format!("rule (a) edge {f}->{to} does not hold"));
                }
                Ok(())
            }
            "b" => {
                let (cs1, cs2) = (self.released(f)?, self.released(to)?);
                if cs1.lock != cs2.lock || f >= to || !self.wcp(cs1.acq, to) {
                    return Err(format!("rule (b) edge {f}->{to} does not hold"));
                }
                Ok(())
            }
            _ => Err(format!("unknown rule {rule}")),
        }
    }

    /// A WCP chain from `from` to `to`: HB steps, exactly one `wcp-edge` step
    /// whose details hold, HB steps. A rule (b) step names a justification
    /// whose pair ends strictly before `bound` (the end of the pair this
    /// chain justifies), so the reasoning cannot go round in circles.
    fn check_chain(
        &self,
        chain: &[Value],
        from: u32,
        to: u32,
        just: &[Value],
        bound: Option<u32>,
    ) -> Result<(), String> {
        self.check_connects(chain, from, to)?;
        let mut edges = 0;
        for s in chain {
            if s["kind"] != "wcp-edge" {
                self.check_hb_step(s)?;
                continue;
            }
            edges += 1;
            let (f, t) = (id(&s["from"]), id(&s["to"]));
            let rule = s["rule"].as_str().unwrap_or("");
            self.check_edge_facts(f, t, rule)?;
            let d = &s["details"];
            match rule {
                "hard" => {
                    if d["edge"] != json!(self.hard_kind(f, t)) {
                        return Err(format!("{s}: wrong hard edge kind"));
                    }
                }
                "a" => {
                    let cs1 = self.released(f)?;
                    let cs2 = self.section_of(t, cs1.lock).ok_or("no cs2")?;
                    self.check_cs(&d["cs1"], cs1)?;
                    self.check_cs(&d["cs2"], cs2)?;
                    let (e1, e2) = (id(&d["conflict"][0]["id"]), id(&d["conflict"][1]["id"]));
                    if e2 != t || !self.inside(e1, cs1) || !self.conflict(e1, e2) {
                        return Err(format!("rule (a) step {s}: bad conflict"));
                    }
                }
                "b" => {
                    let (cs1, cs2) = (self.released(f)?, self.released(t)?);
                    self.check_cs(&d["cs1"], cs1)?;
                    self.check_cs(&d["cs2"], cs2)?;
                    if d["wcp_pair"] != json!({"from": cs1.acq, "to": t}) {
                        return Err(format!("{s}: wcp_pair is not (acq1, rel2)"));
                    }
                    let j = d["justification"].as_u64().ok_or("no justification")? as usize;
                    let jv = just.get(j).ok_or("dangling justification")?;
                    if jv["from"] != cs1.acq || jv["to"] != t || jv["id"] != j {
                        return Err(format!("justification {jv} does not match {s}"));
                    }
                    if bound.is_some_and(|b| t >= b) {
                        return Err(format!(
                            "{s}: justification {j} does not go back in the trace"
                        ));
                    }
                }
                _ => return Err(format!("unknown rule in {s}")),
            }
        }
        if edges != 1 {
            return Err(format!("{edges} WCP edges in a chain"));
        }
        Ok(())
    }
}

impl Replay for Oracle<'_> {
    fn trace(&self) -> &Trace {
        self.t
    }

    fn relation(&self) -> Relation {
        Relation::Wcp
    }

    fn ordered(&self, x: u32, y: u32) -> bool {
        self.wcp(x, y)
    }

    fn hb(&self, x: u32, y: u32) -> bool {
        self.hb_leq(x, y)
    }

    /// Release -> acquire needs no more than its shape; the hard edges are
    /// read off the facts.
    fn generating_edge(&self, kind: &str, f: u32, to: u32) -> bool {
        kind == "release-acquire" || self.hard_kind(f, to) == Some(kind)
    }

    fn check_answer(&self, a: &Value) -> Result<(), String> {
        let (from, to) = (id(&a["from"]), id(&a["to"]));
        let just = arr(&a["justifications"]);
        self.check_chain(arr(&a["chain"]), from, to, just, None)?;
        for (i, j) in just.iter().enumerate() {
            let (jf, jt) = (id(&j["from"]), id(&j["to"]));
            if !self.wcp(jf, jt) {
                return Err(format!("justification {i} claims {jf} WCP-before {jt}"));
            }
            self.check_chain(arr(&j["chain"]), jf, jt, just, Some(jt))
                .map_err(|e| format!("justification {i}: {e}"))?;
        }
        Ok(())
    }

    /// A true account of what WCP orders the release before instead: rule
    /// (a)'s and rule (b)'s targets, neither reaching `to`.
    fn check_dropped_step(&self, s: &Value, f: u32, t: u32, to: u32) -> Result<(), String> {
        let d = &s["details"]["wcp_dropped"];
        let cs1 = self.released(f)?;
        let cs2 = self.facts.cs_of(t).filter(|c| c.acq == t).ok_or("no cs2")?;
        self.check_cs(&d["cs1"], cs1)?;
        self.check_cs(&d["cs2"], cs2)?;
        if self.wcp(f, t) {
            return Err(format!("dropped step {s} is a WCP pair"));
        }
        // Rule (a): the first access of cs2 conflicting with cs1, which
        // must not reach `to`.
        let first = (cs2.acq..=cs2.end).find(|&y| {
            self.inside(y, cs2)
                && (cs1.acq..=cs1.end).any(|x| self.inside(x, cs1) && self.conflict(x, y))
        });
        match (first, d["conflicting_accesses"].as_array()) {
            (None, None) => {}
            (Some(y), Some(pair)) => {
                let x = id(&pair[0]);
                if id(&pair[1]) != y || !self.inside(x, cs1) || !self.conflict(x, y) {
                    return Err(format!("{s}: wrong conflicting accesses"));
                }
                if !self.wcp(f, y) || self.hb_leq(y, to) {
                    return Err(format!("{s}: rule (a) target {y} does reach {to}"));
                }
            }
            _ => return Err(format!("{s}: conflicting accesses should be {first:?}")),
        }
        // Rule (b).
        let ordered = cs2.rel.is_some_and(|r2| self.wcp(cs1.acq, r2));
        if d["wcp_ordered_events"] != ordered {
            return Err(format!("{s}: wcp_ordered_events should be {ordered}"));
        }
        if let (true, Some(r2)) = (ordered, cs2.rel)
            && (!self.wcp(f, r2) || self.hb_leq(r2, to))
        {
            return Err(format!("{s}: rule (b) target {r2} does reach {to}"));
        }
        Ok(())
    }
}

#[test]
fn dumps_equal_the_reference_and_base_edges_generate_it() {
    let mut rules = std::collections::BTreeMap::<String, usize>::new();
    for (name, t) in traces(250, config) {
        let o = Oracle::new(&t);
        let mut first_base: Option<BaseEdges> = None;
        for k in [None, Some(3), Some(10)] {
            let ctx = || format!("{name} K={k:?}\n{}", dump(&t));
            let (text, base, pairs) = dump_rows(&t, Relation::Wcp, k);
            let want = sync_pairs_within(&t, &o.r.wcp, k);
            assert_eq!(pairs, want, "pairs of {}\n{text}", ctx());
            // The window limits the pairs only: WCP itself is exact.
            match &first_base {
                None => first_base = Some(base),
                Some(b) => assert_eq!(&base, b, "base edges depend on the window: {}", ctx()),
            }
        }
        let base = first_base.unwrap();
        let mut sorted = base.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, base, "base edges sorted and distinct: {name}");
        for (f, to, rule) in &base {
            *rules.entry(rule.clone()).or_default() += 1;
            if let Err(e) = o.check_edge_facts(*f, *to, rule) {
                panic!("{e}\n{name}\n{}", dump(&t));
            }
        }
        // HB ∘ base ∘ HB is exactly the reference WCP, over all events.
        let n = t.len() as u32;
        for x in 0..n {
            for y in x + 1..n {
                let generated = base
                    .iter()
                    .any(|&(u, v, _)| o.hb_leq(x, u) && o.hb_leq(v, y));
                assert_eq!(
                    generated,
                    o.wcp(x, y),
                    "{name}: base edges generate {x}->{y}: {generated}\n{base:?}\n{}",
                    dump(&t)
                );
            }
        }
    }
    eprintln!("base edges by rule: {rules:?}");
    for (rule, min) in [("a", 150), ("b", 25), ("hard", 300)] {
        let got = rules.get(rule).copied().unwrap_or(0);
        assert!(got >= min, "only {got} rule-{rule} base edges: {rules:?}");
    }
}

#[test]
fn explained_pairs_replay_against_the_reference() {
    let mut counts = Counts::default();
    for (name, t) in traces(250, config) {
        let o = Oracle::new(&t);
        for k in [None, Some(4)] {
            replay_pairs(&o, &name, k, &mut counts, |x, y, j, ctx| {
                assert_eq!(j["window"], json!(k));
                let far = k.is_some_and(|k| (y - x) as u64 >= k);
                let why = j["explanation"].as_str().unwrap();
                assert_eq!(why.contains("does not pair them"), far, "{}", ctx());
            });
        }
    }
    counts.assert_more_than(5000, 2000, 2000, 50);
}

#[test]
fn every_reported_race_is_unordered() {
    let mut races = 0;
    let mut hb_ordered = 0;
    for (name, t) in traces(250, config) {
        let o = Oracle::new(&t);
        for k in [None, Some(4)] {
            let report = cprace::race::wcp::vc::analyze(&t, k);
            races += report.races.len();
            hb_ordered += replay_races(&o, &name, k, &report.races);
        }
    }
    assert!(
        races > 300 && hb_ordered > 50,
        "{races} races, {hb_ordered} HB-ordered"
    );
}

#[test]
fn not_after_is_not_ordered() {
    assert_not_after_is_not_ordered(&figures()[0].1, Relation::Wcp);
}

// ---- the command line ----

#[test]
fn cli_reported_races_are_unordered_on_every_figure() {
    let races = cli_races_are_unordered_on_figures("wcp: event", |t| Box::new(Oracle::new(t)));
    assert!(races >= 10, "only {races} races on the figures");
}

#[test]
fn cli_dump_csv_and_json() {
    let f = figure("wcp-fig1a.csv");
    let out = query_text(&f, &["--relation", "wcp"]);
    assert_eq!(
        out,
        "relation,kind,rule,from,to,from_thread,from_op,from_target,from_loc,to_thread,to_op,to_target,to_loc\n\
         wcp,base,a,3,5,T1,rel,l,wcp-fig1a:L4,T2,r,x,wcp-fig1a:L6\n\
         wcp,pair,,0,7,T1,acq,l,wcp-fig1a:L1,T2,rel,l,wcp-fig1a:L8\n\
         wcp,pair,,3,7,T1,rel,l,wcp-fig1a:L4,T2,rel,l,wcp-fig1a:L8\n"
    );
    // A window limits the pairs, not the base edges; no default window.
    let j = query_json(&f, &["--relation", "wcp", "--window", "5"]);
    assert_eq!(j["window"], 5);
    assert_eq!(j["sync_events"], 4);
    assert_eq!(arr(&j["base_edges"]).len(), 1);
    assert_eq!(j["base_edges"][0]["rule"], "a");
    assert_eq!(j["base_edges"][0]["to_op"], "r");
    assert_eq!(json_pairs(&j["pairs"]), [(3, 7)]);
    let j = query_json(&f, &["--relation", "wcp"]);
    assert_eq!(j["window"], Value::Null);
    assert_eq!(arr(&j["pairs"]).len(), 2);
}

/// `cprace query FIGURE --relation wcp --pair PAIR`, in JSON and in text.
fn wcp_pair(f: &str, pair: &str) -> (Value, String) {
    let args = ["--relation", "wcp", "--pair", pair];
    (query_json(f, &args), query_text(f, &args))
}

#[test]
fn cli_pair_text_and_json() {
    let f = figure("wcp-fig1a.csv");
    let (j, text) = wcp_pair(&f, "0,7");
    assert_eq!(
        (j["ordered"].clone(), j["window"].clone()),
        (true.into(), Value::Null)
    );
    let chain = arr(&j["chain"]);
    let kinds: Vec<&str> = chain.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["po", "wcp-edge", "po"]);
    assert_eq!(chain[1]["rule"], "a");
    assert_eq!((id(&chain[1]["from"]), id(&chain[1]["to"])), (3, 5));
    assert_eq!(chain[1]["details"]["conflict"][0]["id"], 2);
    assert_eq!(chain[1]["details"]["conflict"][1]["id"], 5);
    assert!(
        text.starts_with("wcp: event 0 is ordered before event 7"),
        "{text}"
    );
    assert!(
        text.contains("2. #3 T1 rel(l) -> #5 T2 r(x): WCP edge by rule (a)"),
        "{text}"
    );
    // CP orders the acquire; WCP does not (rule (a) ends at the read).
    let (j, text) = wcp_pair(&f, "3,4");
    assert_eq!(
        (j["ordered"].clone(), j["hb_ordered"].clone()),
        (false.into(), true.into())
    );
    let d = &arr(&j["chain"])[0]["details"]["wcp_dropped"];
    assert_eq!(d["conflicting_accesses"], json!([2, 5]));
    assert!(
        text.contains("NOT ordered") && text.contains("no WCP edge"),
        "{text}"
    );
}

#[test]
fn cli_rule_b_justification() {
    // CP paper Figure 5: T2's and T3's sections on l hold WCP-ordered events
    // (T2's acquire reaches T3's read of z through T1's section on m), so
    // rule (b) orders T2's release of l before T3's.
    let (j, text) = wcp_pair(&figure("cp-fig5.csv"), "10,23");
    assert_eq!(j["ordered"], true);
    let step = &arr(&j["chain"])[1];
    assert_eq!(
        (step["rule"].clone(), id(&step["from"]), id(&step["to"])),
        ("b".into(), 11, 22)
    );
    assert_eq!(step["details"]["wcp_pair"], json!({"from": 5, "to": 22}));
    assert_eq!(step["details"]["justification"], 0);
    let just = arr(&j["justifications"]);
    assert_eq!(just.len(), 1);
    assert_eq!((id(&just[0]["from"]), id(&just[0]["to"])), (5, 22));
    let rules: Vec<&Value> = arr(&just[0]["chain"]).iter().map(|s| &s["rule"]).collect();
    assert!(rules.contains(&&json!("a")), "{just:?}");
    for want in [
        "2. #11 T2 rel(l) -> #22 T3 rel(l): WCP edge by rule (b)",
        "justification J0: #5 T2 acq(l) is WCP-before #22 T3 rel(l):",
        "4. #17 T1 rel(m) -> #19 T3 r(z): WCP edge by rule (a)",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

#[test]
fn cli_reads_stdin_and_rejects_bad_ids() {
    let f = figure("wcp-fig1a.csv");
    let (code, out, err) = cprace(&["query", &f, "--relation", "wcp", "--pair", "0,8"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("event 8 is not in the trace"), "{err}");
    let text = std::fs::read_to_string(&f).unwrap();
    let args = [
        "query",
        "-",
        "--relation",
        "wcp",
        "--pair",
        "3,7",
        "--format",
        "json",
    ];
    let out = with_stdin(&args, text.as_bytes());
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ordered"], true);
}
