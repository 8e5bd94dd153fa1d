//! `cprace query --relation wcp`: dumps against the crepe reference WCP
//! (rules/wcp.dl) restricted to synchronization events, base edges re-checked
//! against the trace and shown to generate WCP, witness chains replayed step by
//! step (rule (b) justifications recursively), dropped HB steps re-checked,
//! reported races unordered, and the command line.

use std::path::{Path, PathBuf};
use std::process::Command;

use cprace::analyze::Relation;
use cprace::facts::{CriticalSection, Facts};
use cprace::generate::{Config, trace};
use cprace::query::{self, DumpFormat, is_sync_event};
use cprace::trace::{Event, Op, Trace, load};
use cprace::wcp::reference::{Derived, derive};
use serde_json::{Value, json};

fn figures() -> Vec<(PathBuf, Trace)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/figures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("data/figures exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 14, "expected the paper figures");
    paths
        .into_iter()
        .map(|p| {
            let t = load(&p, None).unwrap_or_else(|e| panic!("{e}"));
            (p, t)
        })
        .collect()
}

/// Small traces with nesting, fork/join and volatiles; every other one leans
/// on few variables and many critical sections, where rule (b) edges appear.
fn configs(n: u64) -> impl Iterator<Item = Config> {
    (0..n).map(|seed| Config {
        events: 12 + seed % 36,
        threads: 2 + (seed % 3) as u32,
        locks: 1 + (seed % 3) as u32,
        vars: 1 + (seed % 3) as u32,
        volatiles: (seed % 2) as u32,
        max_nesting: 1 + (seed % 3) as u32,
        p_acquire: if seed % 2 == 0 { 0.35 } else { 0.25 },
        p_release: 0.3,
        p_unlocked_access: if seed % 2 == 0 { 0.1 } else { 0.4 },
        fork_join: seed % 3 != 0,
        p_volatile: if seed % 4 == 1 { 0.25 } else { 0.03 },
        seed,
        ..Config::default()
    })
}

/// The figures, then `n` generated traces.
fn traces(n: u64) -> Vec<(String, Trace)> {
    let mut v: Vec<(String, Trace)> = figures()
        .into_iter()
        .map(|(p, t)| (p.display().to_string(), t))
        .collect();
    v.extend(configs(n).map(|c| (format!("seed {}", c.seed), trace(&c))));
    v
}

fn dump(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "{i}: {} {} {}\n",
                t.names.thread(e.thread),
                e.op.as_str(),
                t.names.target(e)
            )
        })
        .collect()
}

fn id(v: &Value) -> u32 {
    v.as_u64().unwrap_or_else(|| panic!("not an event id: {v}")) as u32
}

fn arr(v: &Value) -> &[Value] {
    v.as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("not an array: {v}"))
}

/// Pairs of sync events or data accesses, earlier first.
fn interesting_pairs(t: &Trace) -> Vec<(u32, u32)> {
    let ids: Vec<u32> = (0..t.len() as u32)
        .filter(|&e| {
            let op = t.events[e as usize].op;
            is_sync_event(op) || op.is_access()
        })
        .collect();
    let mut v = Vec::new();
    for (i, &x) in ids.iter().enumerate() {
        for &y in &ids[i + 1..] {
            v.push((x, y));
        }
    }
    v
}

/// The reference WCP and HB of a trace, and the checks of chains and edges.
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

    fn ev(&self, e: u32) -> Event {
        self.t.events[e as usize]
    }

    fn wcp(&self, x: u32, y: u32) -> bool {
        self.r.wcp.contains(&(x, y))
    }

    /// `x <=HB y` (reflexive).
    fn hb_leq(&self, x: u32, y: u32) -> bool {
        x == y || self.r.hb.contains(&(x, y))
    }

    fn inside(&self, e: u32, cs: &CriticalSection) -> bool {
        cs.contains(self.ev(e).thread, e)
    }

    fn conflict(&self, a: u32, b: u32) -> bool {
        let (x, y) = (self.ev(a), self.ev(b));
        x.op.is_access()
            && y.op.is_access()
            && x.thread != y.thread
            && x.target == y.target
            && (x.op == Op::Write || y.op == Op::Write)
    }

    /// The section released at `r`.
    fn released(&self, r: u32) -> Result<&CriticalSection, String> {
        self.facts
            .cs_of(r)
            .filter(|c| c.rel == Some(r))
            .ok_or(format!("{r} is no release"))
    }

    /// A critical section given in JSON is the trace's section `want`.
    fn check_cs(&self, cs: &Value, want: &CriticalSection) -> Result<(), String> {
        let ok = cs["acq"] == want.acq
            && cs["end"] == want.end
            && cs["rel"] == json!(want.rel)
            && cs["lock"] == self.t.names.lock(want.lock)
            && cs["thread"] == self.t.names.thread(want.thread);
        if ok {
            Ok(())
        } else {
            Err(format!("critical section {cs} is not {want:?}"))
        }
    }

    /// The section on `lock` holding `e` (the trace's own).
    fn section_of(&self, e: u32, lock: u32) -> Option<&CriticalSection> {
        self.facts
            .critical_sections
            .iter()
            .find(|c| c.lock == lock && self.inside(e, c))
    }

    /// A generating HB edge `f -> to` (program order run, release -> later
    /// acquire of the lock by another thread, fork, join, volatile), read
    /// off the trace and confirmed by the reference HB.
    fn check_hb_step(&self, s: &Value) -> Result<(), String> {
        let (f, to) = (id(&s["from"]), id(&s["to"]));
        let (x, y) = (self.ev(f), self.ev(to));
        if f >= to {
            return Err(format!("step {s} goes backwards"));
        }
        let ok = match s["kind"].as_str().unwrap_or("") {
            "po" => x.thread == y.thread,
            "release-acquire" => {
                x.op == Op::Release
                    && y.op == Op::Acquire
                    && x.target == y.target
                    && x.thread != y.thread
            }
            "fork" => self.hard_kind(f, to) == Some("fork"),
            "join" => self.hard_kind(f, to) == Some("join"),
            "volatile" => self.hard_kind(f, to) == Some("volatile"),
            _ => false,
        };
        if !ok || !self.hb_leq(f, to) {
            return Err(format!("HB step {s} does not hold"));
        }
        Ok(())
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
        } else if x.op == Op::VolatileWrite
            && y.op == Op::VolatileRead
            && x.target == y.target
            && x.thread != y.thread
            && f < to
        {
            Some("volatile")
        } else {
            None
        }
    }

    fn check_connects(&self, chain: &[Value], from: u32, to: u32) -> Result<(), String> {
        let mut at = from;
        for s in chain {
            if id(&s["from"]) != at {
                return Err(format!("chain breaks at {s}: expected it to start at {at}"));
            }
            at = id(&s["to"]);
        }
        if at != to {
            return Err(format!("chain ends at {at}, not at {to}"));
        }
        Ok(())
    }

    fn check_hb_path(&self, chain: &[Value], from: u32, to: u32) -> Result<(), String> {
        self.check_connects(chain, from, to)?;
        chain.iter().try_for_each(|s| self.check_hb_step(s))
    }

    /// A base WCP edge `f -> to` with `rule`: a real instance of the rule,
    /// re-checked from the trace. Rule (b)'s premise is checked against the
    /// reference here; its chain is checked by [`Oracle::check_answer`].
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
                if !self.ev(to).op.is_access() || f >= to || !partner || cs2.thread == cs1.thread {
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

    /// A whole answer that says "ordered", justifications included.
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

    /// An answer that says "not ordered" although HB orders the pair: the HB
    /// path, each release -> acquire step carrying a true account of what
    /// WCP orders its release before instead.
    fn check_dropped(&self, a: &Value) -> Result<(), String> {
        let (from, to) = (id(&a["from"]), id(&a["to"]));
        let chain = arr(&a["chain"]);
        self.check_hb_path(chain, from, to)?;
        let mut dropped = 0;
        for s in chain {
            let (f, t) = (id(&s["from"]), id(&s["to"]));
            if s["kind"] != "release-acquire" {
                if s["kind"] != "po" {
                    return Err(format!(
                        "{s}: a hard edge on the path of a WCP-unordered pair"
                    ));
                }
                continue;
            }
            dropped += 1;
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
        }
        if dropped == 0 && self.ev(from).thread != self.ev(to).thread {
            return Err("no dropped step named".into());
        }
        let why = a["explanation"].as_str().unwrap_or("");
        if !why.contains("not ordered by WCP") {
            return Err(format!("explanation lacks the reason: {why}"));
        }
        Ok(())
    }
}

fn dump_of(t: &Trace, k: Option<u64>, format: DumpFormat) -> String {
    let q = query::engine(t, Relation::Wcp, k).unwrap();
    let mut out = Vec::new();
    query::write_dump(t, q.as_ref(), format, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Base edges `(from, to, rule)`.
type BaseEdges = Vec<(u32, u32, String)>;

fn parse_csv_dump(text: &str) -> (BaseEdges, Vec<(u32, u32)>) {
    assert_eq!(text.lines().next().unwrap(), query::CSV_COLUMNS.join(","));
    let (mut base, mut pairs) = (Vec::new(), Vec::new());
    for rec in csv::Reader::from_reader(text.as_bytes()).records() {
        let rec = rec.unwrap();
        assert_eq!(&rec[0], "wcp");
        let (f, t) = (rec[3].parse().unwrap(), rec[4].parse().unwrap());
        match &rec[1] {
            "base" => base.push((f, t, rec[2].to_string())),
            "pair" => {
                assert_eq!(&rec[2], "");
                pairs.push((f, t))
            }
            k => panic!("kind {k}"),
        }
    }
    (base, pairs)
}

#[test]
fn dumps_equal_the_reference_and_base_edges_generate_it() {
    let mut rules = std::collections::BTreeMap::<String, usize>::new();
    for (name, t) in traces(250) {
        let o = Oracle::new(&t);
        let sync = |e: u32| is_sync_event(t.events[e as usize].op);
        let mut first_base: Option<BaseEdges> = None;
        for k in [None, Some(3), Some(10)] {
            let ctx = || format!("{name} K={k:?}\n{}", dump(&t));
            let text = dump_of(&t, k, DumpFormat::Csv);
            let (base, pairs) = parse_csv_dump(&text);
            let mut want: Vec<(u32, u32)> =
                o.r.wcp
                    .iter()
                    .copied()
                    .filter(|&(x, y)| sync(x) && sync(y) && k.is_none_or(|k| ((y - x) as u64) < k))
                    .collect();
            want.sort_unstable();
            assert_eq!(pairs, want, "pairs of {}\n{text}", ctx());
            // JSON holds the same rows.
            let j: Value = serde_json::from_str(&dump_of(&t, k, DumpFormat::Json)).unwrap();
            assert_eq!(j["relation"], "wcp");
            assert_eq!(j["window"], json!(k));
            assert_eq!(j["events"], t.len());
            let jp: Vec<(u32, u32)> = arr(&j["pairs"])
                .iter()
                .map(|p| (id(&p["from"]), id(&p["to"])))
                .collect();
            assert_eq!(jp, pairs);
            let jb: BaseEdges = arr(&j["base_edges"])
                .iter()
                .map(|p| {
                    (
                        id(&p["from"]),
                        id(&p["to"]),
                        p["rule"].as_str().unwrap().into(),
                    )
                })
                .collect();
            assert_eq!(jb, base);
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
    let (mut ordered, mut dropped, mut unordered, mut rule_b) = (0, 0, 0, 0);
    for (name, t) in traces(250) {
        let o = Oracle::new(&t);
        for k in [None, Some(4)] {
            let q = query::engine(&t, Relation::Wcp, k).unwrap();
            for (x, y) in interesting_pairs(&t) {
                let j = q.explain(x, y).to_json(&t);
                let ctx = || format!("{name} K={k:?} pair {x},{y}\n{j:#}\n{}", dump(&t));
                assert_eq!(j["ordered"], o.wcp(x, y), "ordered? {}", ctx());
                assert_eq!(j["hb_ordered"], o.hb_leq(x, y), "HB-ordered? {}", ctx());
                assert_eq!(j["window"], json!(k));
                let res = if o.wcp(x, y) {
                    ordered += 1;
                    rule_b += usize::from(!arr(&j["justifications"]).is_empty());
                    o.check_answer(&j)
                } else if o.hb_leq(x, y) {
                    dropped += 1;
                    o.check_dropped(&j)
                } else if arr(&j["chain"]).is_empty() {
                    unordered += 1;
                    Ok(())
                } else {
                    Err("a chain for an unordered pair".into())
                };
                if let Err(e) = res {
                    panic!("{e}\n{}", ctx());
                }
                let far = k.is_some_and(|k| (y - x) as u64 >= k);
                let why = j["explanation"].as_str().unwrap();
                assert_eq!(why.contains("does not pair them"), far, "{}", ctx());
            }
        }
    }
    eprintln!(
        "ordered {ordered}, dropped {dropped}, unordered {unordered}, with rule (b) {rule_b}"
    );
    assert!(
        ordered > 5000 && dropped > 2000 && unordered > 2000 && rule_b > 50,
        "ordered {ordered}, dropped {dropped}, unordered {unordered}, with rule (b) {rule_b}"
    );
}

#[test]
fn every_reported_race_is_unordered() {
    let mut races = 0;
    let mut hb_ordered = 0;
    for (name, t) in traces(250) {
        let o = Oracle::new(&t);
        for k in [None, Some(4)] {
            let report = cprace::wcp::vc::analyze(&t, k);
            let q = query::engine(&t, Relation::Wcp, k).unwrap();
            for r in &report.races {
                races += 1;
                let j = q.explain(r.first.id, r.second.id).to_json(&t);
                assert_eq!(j["ordered"], false, "{name} K={k:?}: race {r:?}\n{j:#}");
                if j["hb_ordered"] == true {
                    hb_ordered += 1;
                    if let Err(e) = o.check_dropped(&j) {
                        panic!("{e}\n{name} K={k:?}: race {r:?}\n{j:#}");
                    }
                }
            }
        }
    }
    assert!(
        races > 300 && hb_ordered > 50,
        "{races} races, {hb_ordered} HB-ordered"
    );
}

#[test]
fn not_after_is_not_ordered() {
    let t = &figures()[0].1;
    let q = query::engine(t, Relation::Wcp, None).unwrap();
    for (x, y) in [(3, 3), (5, 2)] {
        let j = q.explain(x, y).to_json(t);
        assert_eq!(j["ordered"], false);
        assert!(arr(&j["chain"]).is_empty());
        assert!(j["explanation"].as_str().unwrap().contains("not ordered"));
    }
}

// ---- the command line ----

fn cprace(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cprace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fig(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/figures")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn cli_reported_races_are_unordered_on_every_figure() {
    let mut races = 0;
    for (p, t) in figures() {
        let path = p.display().to_string();
        let (code, out, err) = cprace(&["analyze", &path, "--relation", "wcp", "--format", "json"]);
        assert!(code == 0 || code == 1, "{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        let o = Oracle::new(&t);
        for r in arr(&report["races"]) {
            races += 1;
            let pair = format!("{},{}", r["first"], r["second"]);
            let args = ["query", &path, "--relation", "wcp", "--pair", &pair];
            let (code, out, err) = cprace(&[&args[..], &["--format", "json"]].concat());
            assert_eq!(code, 0, "{err}");
            let j: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(j["ordered"], false, "{path} race {pair}");
            if j["hb_ordered"] == true {
                o.check_dropped(&j)
                    .unwrap_or_else(|e| panic!("{path} {pair}: {e}"));
            }
            let (code, text, _) = cprace(&args);
            assert_eq!(code, 0);
            assert!(
                text.contains("wcp: event") && text.contains("NOT ordered"),
                "{text}"
            );
        }
    }
    assert!(races >= 10, "only {races} races on the figures");
}

#[test]
fn cli_dump_csv_and_json() {
    let f = fig("wcp-fig1a.csv");
    let (code, out, err) = cprace(&["query", &f, "--relation", "wcp"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "relation,kind,rule,from,to,from_thread,from_op,from_target,from_loc,to_thread,to_op,to_target,to_loc\n\
         wcp,base,a,3,5,T1,rel,l,wcp-fig1a:L4,T2,r,x,wcp-fig1a:L6\n\
         wcp,pair,,0,7,T1,acq,l,wcp-fig1a:L1,T2,rel,l,wcp-fig1a:L8\n\
         wcp,pair,,3,7,T1,rel,l,wcp-fig1a:L4,T2,rel,l,wcp-fig1a:L8\n"
    );
    // A window limits the pairs, not the base edges; no default window.
    let (code, out, _) = cprace(&[
        "query",
        &f,
        "--relation",
        "wcp",
        "--window",
        "5",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["window"], 5);
    assert_eq!(j["sync_events"], 4);
    assert_eq!(arr(&j["base_edges"]).len(), 1);
    assert_eq!(j["base_edges"][0]["rule"], "a");
    assert_eq!(j["base_edges"][0]["to_op"], "r");
    let pairs: Vec<(u32, u32)> = arr(&j["pairs"])
        .iter()
        .map(|p| (id(&p["from"]), id(&p["to"])))
        .collect();
    assert_eq!(pairs, [(3, 7)]);
    let (_, out, _) = cprace(&["query", &f, "--relation", "wcp", "--format", "json"]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["window"], Value::Null);
    assert_eq!(arr(&j["pairs"]).len(), 2);
}

#[test]
fn cli_pair_text_and_json() {
    let f = fig("wcp-fig1a.csv");
    let (code, out, err) = cprace(&[
        "query",
        &f,
        "--relation",
        "wcp",
        "--pair",
        "0,7",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
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
    let (code, text, _) = cprace(&["query", &f, "--relation", "wcp", "--pair", "0,7"]);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("wcp: event 0 is ordered before event 7"),
        "{text}"
    );
    assert!(
        text.contains("2. #3 T1 rel(l) -> #5 T2 r(x): WCP edge by rule (a)"),
        "{text}"
    );
    // CP orders the acquire; WCP does not (rule (a) ends at the read).
    let (code, out, _) = cprace(&[
        "query",
        &f,
        "--relation",
        "wcp",
        "--pair",
        "3,4",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (j["ordered"].clone(), j["hb_ordered"].clone()),
        (false.into(), true.into())
    );
    let d = &arr(&j["chain"])[0]["details"]["wcp_dropped"];
    assert_eq!(d["conflicting_accesses"], json!([2, 5]));
    let (_, text, _) = cprace(&["query", &f, "--relation", "wcp", "--pair", "3,4"]);
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
    let f = fig("cp-fig5.csv");
    let (code, out, err) = cprace(&[
        "query",
        &f,
        "--relation",
        "wcp",
        "--pair",
        "10,23",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
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
    let (code, text, _) = cprace(&["query", &f, "--relation", "wcp", "--pair", "10,23"]);
    assert_eq!(code, 0);
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
    let f = fig("wcp-fig1a.csv");
    let (code, out, err) = cprace(&["query", &f, "--relation", "wcp", "--pair", "0,8"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("event 8 is not in the trace"), "{err}");
    let text = std::fs::read_to_string(&f).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cprace"))
        .args([
            "query",
            "-",
            "--relation",
            "wcp",
            "--pair",
            "3,7",
            "--format",
            "json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ordered"], true);
}
