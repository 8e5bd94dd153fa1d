//! What tests/it/query.rs (HB, CP) and tests/it/query_wcp.rs (WCP) share: the
//! traces they replay, reading answers and dumps, the replay of HB steps and
//! paths, of "not ordered although HB orders" answers and of every answer of
//! a trace against a reference relation ([`Replay`]), and the command line.

use cprace::facts::CriticalSection;
use cprace::relation::Relation;
use cprace::report::Race;
use cprace::tools::generate::{Config, trace};
use cprace::tools::query::{self, DumpFormat, is_sync_event};
use cprace::trace::{Event, Op, Trace};
use serde_json::{Value, json};

use super::cli::cprace;
use super::traces::{dump, figures};

/// What the generated traces of both query tests share: up to three locks
/// nested up to three deep, fork/join in two traces of three, a volatile
/// variable in every other trace, used often in every fourth.
pub fn config(seed: u64) -> Config {
    Config {
        locks: 1 + (seed % 3) as u32,
        volatiles: (seed % 2) as u32,
        max_nesting: 1 + (seed % 3) as u32,
        p_release: 0.3,
        fork_join: !seed.is_multiple_of(3),
        p_volatile: if seed % 4 == 1 { 0.25 } else { 0.03 },
        // Relaxed and synchronizing atomic accesses in every fifth trace.
        p_atomic: if seed % 5 == 2 { 0.3 } else { 0.0 },
        seed,
        ..Config::default()
    }
}

/// The figures, then the traces generated from `config` for seeds `0..n`.
pub fn traces(n: u64, config: impl Fn(u64) -> Config) -> Vec<(String, Trace)> {
    let mut v: Vec<(String, Trace)> = figures()
        .into_iter()
        .map(|(p, t)| (p.display().to_string(), t))
        .collect();
    v.extend((0..n).map(|seed| (format!("seed {seed}"), trace(&config(seed)))));
    v
}

/// An event id in an answer.
pub fn id(v: &Value) -> u32 {
    v.as_u64().unwrap_or_else(|| panic!("not an event id: {v}")) as u32
}

/// An array in an answer.
pub fn arr(v: &Value) -> &[Value] {
    v.as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("not an array: {v}"))
}

/// Pairs of sync events or data accesses, earlier first.
pub fn interesting_pairs(t: &Trace) -> Vec<(u32, u32)> {
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

// ---- dumps ----

/// Base edges `(from, to, rule)`.
pub type BaseEdges = Vec<(u32, u32, String)>;

/// `cprace query` without a pair: the dump of `rel` at window `k`.
pub fn dump_of(t: &Trace, rel: Relation, k: Option<u64>, format: DumpFormat) -> String {
    let q = query::engine(t, rel, k).unwrap();
    let mut out = Vec::new();
    query::write_dump(t, q.as_ref(), format, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Parse a CSV dump of `relation` into (base edges with rules, pairs),
/// checking the header and that every row names the relation.
pub fn parse_csv_dump(text: &str, relation: &str) -> (BaseEdges, Vec<(u32, u32)>) {
    assert_eq!(text.lines().next().unwrap(), query::CSV_COLUMNS.join(","));
    let (mut base, mut pairs) = (Vec::new(), Vec::new());
    for rec in csv::Reader::from_reader(text.as_bytes()).records() {
        let rec = rec.unwrap();
        assert_eq!(&rec[0], relation);
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

/// `(from, to)` of every object in a JSON array.
pub fn json_pairs(v: &Value) -> Vec<(u32, u32)> {
    arr(v)
        .iter()
        .map(|p| (id(&p["from"]), id(&p["to"])))
        .collect()
}

/// The dump of `rel` at window `k` in CSV, checked against the dump in JSON:
/// the same pairs and base edges (HB has none, and no `base_edges` key), and
/// the relation, window and trace length. Returns the CSV text, its base
/// edges and its pairs.
pub fn dump_rows(t: &Trace, rel: Relation, k: Option<u64>) -> (String, BaseEdges, Vec<(u32, u32)>) {
    let text = dump_of(t, rel, k, DumpFormat::Csv);
    let (base, pairs) = parse_csv_dump(&text, rel.name());
    let j: Value = serde_json::from_str(&dump_of(t, rel, k, DumpFormat::Json)).unwrap();
    assert_eq!(json_pairs(&j["pairs"]), pairs);
    assert_eq!(j["relation"], rel.name());
    assert_eq!(j["window"], json!(k));
    assert_eq!(j["events"], t.len());
    if matches!(rel, Relation::Hb | Relation::Shb) {
        assert!(base.is_empty() && j.get("base_edges").is_none());
    } else {
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
    }
    (text, base, pairs)
}

/// The pairs of a reference relation a dump at window `k` lists: both events
/// sync events, less than `k` apart; sorted.
pub fn sync_pairs_within<'a>(
    t: &Trace,
    pairs: impl IntoIterator<Item = &'a (u32, u32)>,
    k: Option<u64>,
) -> Vec<(u32, u32)> {
    let sync = |e: u32| is_sync_event(t.events[e as usize].op);
    let mut v: Vec<(u32, u32)> = pairs
        .into_iter()
        .copied()
        .filter(|&(x, y)| sync(x) && sync(y) && k.is_none_or(|k| ((y - x) as u64) < k))
        .collect();
    v.sort_unstable();
    v
}

// ---- replaying answers ----

/// How many replayed answers fell in each case.
#[derive(Debug, Default)]
pub struct Counts {
    /// The relation orders the pair.
    pub ordered: usize,
    /// Only HB orders the pair.
    pub dropped: usize,
    /// Nothing orders the pair.
    pub unordered: usize,
    /// Ordered answers that needed rule (b) justifications.
    pub rule_b: usize,
}

impl Counts {
    /// Print the counts, and check that every case was exercised: each count
    /// above its minimum.
    pub fn assert_more_than(
        &self,
        ordered: usize,
        dropped: usize,
        unordered: usize,
        rule_b: usize,
    ) {
        let Counts {
            ordered: o,
            dropped: d,
            unordered: u,
            rule_b: b,
        } = *self;
        let text = format!("ordered {o}, dropped {d}, unordered {u}, with rule (b) {b}");
        eprintln!("{text}");
        assert!(
            o > ordered && d > dropped && u > unordered && b > rule_b,
            "{text}"
        );
    }
}

/// A reference relation (CP or WCP) with the trace it was derived from, and
/// the replay of query answers against it. Everything is re-derived from the
/// trace and the reference, never from the query engine.
pub trait Replay {
    /// The trace.
    fn trace(&self) -> &Trace;
    /// The relation replayed.
    fn relation(&self) -> Relation;
    /// Whether the reference relation orders `x` before `y`.
    fn ordered(&self, x: u32, y: u32) -> bool;
    /// Whether the reference HB orders `x` before `y` (`x < y`).
    fn hb(&self, x: u32, y: u32) -> bool;
    /// Whether `f -> to` is a generating HB edge of `kind` (`release-acquire`,
    /// `fork`, `join`, `volatile`) as this relation's reference sees it. The
    /// release -> acquire shape is checked by [`Replay::check_hb_step`].
    fn generating_edge(&self, kind: &str, f: u32, to: u32) -> bool;
    /// A whole answer that says "ordered", justifications included.
    fn check_answer(&self, a: &Value) -> Result<(), String>;
    /// A release `f` -> acquire `t` step `s` on the HB path of a pair ending
    /// at `to` that the relation does not order: its account of why the
    /// relation drops the step.
    fn check_dropped_step(&self, s: &Value, f: u32, t: u32, to: u32) -> Result<(), String>;

    fn ev(&self, e: u32) -> Event {
        self.trace().events[e as usize]
    }

    fn inside(&self, e: u32, cs: &CriticalSection) -> bool {
        cs.contains(self.ev(e).thread, e)
    }

    fn conflict(&self, a: u32, b: u32) -> bool {
        let (x, y) = (self.ev(a), self.ev(b));
        // Rule (a)'s conflicts: atomic accesses count like plain ones.
        x.op.is_memory()
            && y.op.is_memory()
            && x.thread != y.thread
            && x.target == y.target
            && (x.op.is_write() || y.op.is_write())
    }

    /// A critical section given in JSON is the trace's section `want`.
    fn check_cs(&self, cs: &Value, want: &CriticalSection) -> Result<(), String> {
        let names = &self.trace().names;
        let ok = cs["acq"] == want.acq
            && cs["end"] == want.end
            && cs["rel"] == json!(want.rel)
            && cs["lock"] == names.lock(want.lock)
            && cs["thread"] == names.thread(want.thread);
        if ok {
            Ok(())
        } else {
            Err(format!("critical section {cs} is not {want:?}"))
        }
    }

    /// A generating HB edge (program order run, release -> later acquire of
    /// the lock by another thread, fork, join, volatile), read off the trace
    /// and confirmed by the reference HB.
    fn check_hb_step(&self, s: &Value) -> Result<(), String> {
        let (f, to) = (id(&s["from"]), id(&s["to"]));
        let (x, y) = (self.ev(f), self.ev(to));
        if f >= to {
            return Err(format!("step {s} goes backwards"));
        }
        let kind = s["kind"].as_str().unwrap_or("");
        let ok = match kind {
            "po" => x.thread == y.thread,
            "release-acquire" => {
                x.op == Op::Release
                    && y.op == Op::Acquire
                    && x.target == y.target
                    && x.thread != y.thread
                    && self.generating_edge(kind, f, to)
            }
            "fork" | "join" | "volatile" => self.generating_edge(kind, f, to),
            _ => false,
        };
        if !ok || !self.hb(f, to) {
            return Err(format!("HB step {s} does not hold"));
        }
        Ok(())
    }

    /// `chain` leads from `from` to `to`.
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

    /// An HB path from `from` to `to`.
    fn check_hb_path(&self, chain: &[Value], from: u32, to: u32) -> Result<(), String> {
        self.check_connects(chain, from, to)?;
        chain.iter().try_for_each(|s| self.check_hb_step(s))
    }

    /// An answer that says "not ordered" although HB orders the pair: the HB
    /// path (no hard edges: the relation keeps those), each release ->
    /// acquire step explained as dropped, and the reason in the explanation.
    fn check_dropped(&self, a: &Value) -> Result<(), String> {
        let name = self.relation().name().to_uppercase();
        let (from, to) = (id(&a["from"]), id(&a["to"]));
        let chain = arr(&a["chain"]);
        self.check_hb_path(chain, from, to)?;
        let mut dropped = 0;
        for s in chain {
            if s["kind"] != "release-acquire" {
                if s["kind"] != "po" {
                    return Err(format!(
                        "{s}: a hard edge on the path of a {name}-unordered pair"
                    ));
                }
                continue;
            }
            dropped += 1;
            self.check_dropped_step(s, id(&s["from"]), id(&s["to"]), to)?;
        }
        if dropped == 0 && self.ev(from).thread != self.ev(to).thread {
            return Err("no dropped step named".into());
        }
        let why = a["explanation"].as_str().unwrap_or("");
        if !why.contains(&format!("not ordered by {name}")) {
            return Err(format!("explanation lacks the reason: {why}"));
        }
        Ok(())
    }

    /// The answer `j` for the pair `x < y`: its verdicts are the reference's,
    /// and its chain replays (ordered: [`Replay::check_answer`]; ordered by
    /// HB only: [`Replay::check_dropped`]; unordered: no chain). Counts the
    /// case.
    fn replay(&self, x: u32, y: u32, j: &Value, counts: &mut Counts) -> Result<(), String> {
        let (ordered, hb) = (self.ordered(x, y), self.hb(x, y));
        if j["ordered"] != ordered {
            return Err(format!("ordered? the reference says {ordered}"));
        }
        if j["hb_ordered"] != hb {
            return Err(format!("HB-ordered? the reference says {hb}"));
        }
        if ordered {
            counts.ordered += 1;
            counts.rule_b += usize::from(!arr(&j["justifications"]).is_empty());
            self.check_answer(j)
        } else if hb {
            counts.dropped += 1;
            self.check_dropped(j)
        } else {
            counts.unordered += 1;
            if arr(&j["chain"]).is_empty() {
                Ok(())
            } else {
                Err("a chain for an unordered pair".into())
            }
        }
    }
}

/// Explain every interesting pair of the trace of `o` with the query engine
/// at window `k`, and replay each answer against `o` ([`Replay::replay`]);
/// `also` checks more of each answer (given the pair, the answer and the
/// failure context). `name` names the trace in failure messages.
pub fn replay_pairs(
    o: &impl Replay,
    name: &str,
    k: Option<u64>,
    counts: &mut Counts,
    also: impl Fn(u32, u32, &Value, &dyn Fn() -> String),
) {
    let t = o.trace();
    let q = query::engine(t, o.relation(), k).unwrap();
    for (x, y) in interesting_pairs(t) {
        let j = q.explain(x, y).to_json(t);
        let ctx = || format!("{name} K={k:?} pair {x},{y}\n{j:#}\n{}", dump(t));
        if let Err(e) = o.replay(x, y, &j, counts) {
            panic!("{e}\n{}", ctx());
        }
        also(x, y, &j, &ctx);
    }
}

/// Query each of `races` (found at window `k` on the trace of `o`) and check
/// that the answer says "not ordered", replaying it when HB orders the pair.
/// Returns how many of them HB orders.
pub fn replay_races(o: &impl Replay, name: &str, k: Option<u64>, races: &[Race]) -> usize {
    let t = o.trace();
    let q = query::engine(t, o.relation(), k).unwrap();
    let mut hb_ordered = 0;
    for r in races {
        let j = q.explain(r.first.id, r.second.id).to_json(t);
        assert_eq!(j["ordered"], false, "{name} K={k:?}: race {r:?}\n{j:#}");
        if j["hb_ordered"] == true {
            hb_ordered += 1;
            if let Err(e) = o.check_dropped(&j) {
                panic!("{e}\n{name} K={k:?}: race {r:?}\n{j:#}");
            }
        }
    }
    hb_ordered
}

/// A pair after or at its second event is not ordered, has no chain and
/// says so.
pub fn assert_not_after_is_not_ordered(t: &Trace, rel: Relation) {
    let q = query::engine(t, rel, None).unwrap();
    for (x, y) in [(3, 3), (5, 2)] {
        let j = q.explain(x, y).to_json(t);
        assert_eq!(j["ordered"], false);
        assert!(arr(&j["chain"]).is_empty());
        let why = j["explanation"].as_str().unwrap();
        assert!(why.contains("not ordered"), "{why}");
    }
}

// ---- the command line ----

/// `cprace query PATH ARGS.. --format json`, which must succeed: its answer.
pub fn query_json(path: &str, args: &[&str]) -> Value {
    let out = query_text(path, &[args, &["--format", "json"]].concat());
    serde_json::from_str(&out).unwrap()
}

/// `cprace query PATH ARGS..`, which must succeed: its output.
pub fn query_text(path: &str, args: &[&str]) -> String {
    let (code, out, err) = cprace(&[&["query", path], args].concat());
    assert_eq!(code, 0, "query {path} {args:?}: {err}");
    out
}

/// On every figure, each race `cprace analyze` reports for the relation of
/// the oracles `oracle` makes is "NOT ordered" for `cprace query --pair` in
/// JSON (replayed when HB orders it) and in text (which starts with
/// `header`). Returns the number of races.
pub fn cli_races_are_unordered_on_figures(
    header: &str,
    oracle: impl for<'a> Fn(&'a Trace) -> Box<dyn Replay + 'a>,
) -> usize {
    let mut races = 0;
    for (p, t) in figures() {
        let path = p.display().to_string();
        let o = oracle(&t);
        let rel = o.relation().name();
        let (code, out, err) = cprace(&["analyze", &path, "--relation", rel, "--format", "json"]);
        assert!(code == 0 || code == 1, "{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        for r in arr(&report["races"]) {
            races += 1;
            let pair = format!("{},{}", r["first"], r["second"]);
            let args = ["--relation", rel, "--pair", &pair];
            let j = query_json(&path, &args);
            assert_eq!(j["ordered"], false, "{path} race {pair}");
            if j["hb_ordered"] == true {
                o.check_dropped(&j)
                    .unwrap_or_else(|e| panic!("{path} {pair}: {e}"));
            }
            let text = query_text(&path, &args);
            assert!(
                text.starts_with(header) && text.contains("NOT ordered"),
                "{text}"
            );
        }
    }
    races
}
