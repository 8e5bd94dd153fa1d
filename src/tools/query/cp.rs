//! `query --relation cp`: base CP edges and CP pairs among synchronization
//! events, and witness chains for CP orderings.
//!
//! CP(x, y) holds exactly when some base edge (r, a) has `x <=HB r` and
//! `a <=HB y`, or, under a window K, when `x <=HB y` and `y - x >= K` (see
//! `crate::race::cp::input`). CP composes with HBv (HB plus the volatile edges; docs/src/semantic-decisions.md,
//! "Semantic decisions"), so "HB" in this module, its paths and its `hb_ordered`
//! answers, is HBv: the engine's sync clocks are HBv clocks. A chain is therefore an HB path into a base edge, the
//! edge, and an HB path out of it. A rule (b) edge rests on CP(acq1, end2),
//! which has a chain of its own; to keep those finite, the base edges are
//! ranked by a breadth-first replay of rule (b) from the seed edges (rule (a),
//! hard and window edges), and each rule (b) edge is justified by an edge of
//! lower rank.

use std::collections::VecDeque;
use std::io;

use rustc_hash::FxHashMap;

use super::hb::{count_sync, not_after, not_hb, window_note};
use super::hbpath::HbIndex;
use super::{
    Answer, CpEdge, Dropped, DumpSink, Justification, Kind, QueryEngine, Step, clock_pairs,
    hb_only_text, show,
};
use crate::engine::sync::NONE;
use crate::facts::{CriticalSection, Facts};
use crate::race::cp::input::{CpInput, Rule, Section};
use crate::relation::Relation;
use crate::trace::{EventId, Trace};

/// CP over one trace: the engine's inputs and base edges.
pub(crate) struct CpQuery<'a> {
    trace: &'a Trace,
    window: Option<u64>,
    /// Sync points, critical sections (slots), as the engine built them.
    input: CpInput,
    /// Base edges `(a, r, rule)` in slots, as the engine computed them.
    base: Vec<(u32, u32, Rule)>,
}

/// The name of a rule in dumps and chains.
pub(crate) fn rule_name(rule: Rule) -> &'static str {
    match rule {
        Rule::A => "a",
        Rule::B => "b",
        Rule::Window => "window",
        Rule::Hard => "hard",
    }
}

impl<'a> CpQuery<'a> {
    /// Run the CP engine (`crate::race::cp::compute`) on `trace` under `window`.
    pub(crate) fn new(trace: &'a Trace, window: Option<u64>) -> CpQuery<'a> {
        let result = crate::race::cp::compute(trace, window, &[]);
        CpQuery {
            trace,
            window,
            input: result.input,
            base: result.base,
        }
    }

    /// The context for explaining pairs.
    fn context(&self) -> Cx<'_> {
        let facts = Facts::new(self.trace);
        let mut sec_by_rel = FxHashMap::default();
        let mut sec_by_acq = FxHashMap::default();
        for (i, s) in self.input.sections.iter().enumerate() {
            sec_by_acq.insert(s.acq, i as u32);
            if s.rel != NONE {
                sec_by_rel.insert(s.rel, i as u32);
            }
        }
        Cx {
            trace: self.trace,
            window: self.window,
            hb: HbIndex::new(self.trace, &facts, &self.input.sync),
            facts,
            sections: &self.input.sections,
            by_lock: &self.input.by_lock,
            base: &self.base,
            sec_by_rel,
            sec_by_acq,
        }
    }
}

/// What explaining needs: HB paths, critical sections, base edges.
struct Cx<'q> {
    trace: &'q Trace,
    window: Option<u64>,
    facts: Facts,
    hb: HbIndex<'q>,
    /// Critical sections in slot terms, in the order of `facts.critical_sections`.
    sections: &'q [Section],
    by_lock: &'q [Vec<u32>],
    base: &'q [(u32, u32, Rule)],
    /// Section whose release / acquire is at a slot.
    sec_by_rel: FxHashMap<u32, u32>,
    sec_by_acq: FxHashMap<u32, u32>,
}

impl Cx<'_> {
    fn ev(&self, slot: u32) -> EventId {
        self.hb.sync.event(slot)
    }

    fn leq(&self, x: EventId, y: EventId) -> bool {
        self.hb.leq(self.trace, x, y)
    }

    /// CP(x, y) for x before y, from the base edges (and the window rule).
    fn cp(&self, x: EventId, y: EventId) -> bool {
        if x >= y {
            return false;
        }
        if self.window.is_some_and(|k| (y - x) as u64 >= k) {
            return self.leq(x, y);
        }
        self.base
            .iter()
            .any(|&(a, r, _)| self.leq(x, self.ev(r)) && self.leq(self.ev(a), y))
    }

    /// Conflicting accesses `(e1 in cs1, e2 in cs2)`, if any, as rule (a)
    /// counts them: atomic accesses like plain ones.
    fn conflict(&self, cs1: &CriticalSection, cs2: &CriticalSection) -> Option<(EventId, EventId)> {
        if cs1.thread == cs2.thread {
            return None;
        }
        let events = &self.trace.events;
        // Per variable, a write and a read of cs1 (any will do).
        let mut seen: FxHashMap<u32, (Option<EventId>, Option<EventId>)> = FxHashMap::default();
        for e in cs1.acq..=cs1.end {
            let ev = events[e as usize];
            if ev.thread == cs1.thread && ev.op.is_memory() {
                let s = seen.entry(ev.target).or_default();
                if ev.op.is_write() {
                    s.0 = Some(e);
                } else {
                    s.1 = Some(e);
                }
            }
        }
        for e in cs2.acq..=cs2.end {
            let ev = events[e as usize];
            if ev.thread != cs2.thread || !ev.op.is_memory() {
                continue;
            }
            if let Some(&(w, r)) = seen.get(&ev.target) {
                if let Some(w) = w {
                    return Some((w, e));
                }
                if let (true, Some(r)) = (ev.op.is_write(), r) {
                    return Some((r, e));
                }
            }
        }
        None
    }

    /// Rank base edges by a breadth-first replay of rule (b) from the seeds,
    /// recording for each rule (b) edge the edge that justified it.
    fn provenance(&self) -> Provenance {
        let n = self.base.len();
        let mut rank = vec![NONE; n];
        let mut justifier = vec![NONE; n];
        let mut queue: VecDeque<usize> = VecDeque::new();
        // Rule (b) edges per lock, keyed by (position of CS2, position of CS1).
        let mut per_lock: FxHashMap<u32, Vec<(u32, u32, u32)>> = FxHashMap::default();
        for (j, &(a, r, rule)) in self.base.iter().enumerate() {
            if rule != Rule::B {
                rank[j] = 0;
                queue.push_back(j);
                continue;
            }
            if let (Some(&c2), Some(&c1)) = (self.sec_by_acq.get(&a), self.sec_by_rel.get(&r)) {
                let (s1, s2) = (self.sections[c1 as usize], self.sections[c2 as usize]);
                if s1.lock == s2.lock {
                    per_lock
                        .entry(s2.lock)
                        .or_default()
                        .push((s2.pos, s1.pos, j as u32));
                }
            }
        }
        let mut locks: Vec<LockEdges> = per_lock
            .into_iter()
            .map(|(lock, mut entries)| {
                entries.sort_unstable();
                let tree = MinTree::new(entries.iter().map(|e| e.1).collect());
                LockEdges {
                    lock,
                    entries,
                    tree,
                }
            })
            .collect();
        locks.sort_unstable_by_key(|e| e.lock);
        let sync = &self.hb.sync;
        while let Some(j) = queue.pop_front() {
            let (a, r, _) = self.base[j];
            for LockEdges {
                lock,
                entries,
                tree,
            } in locks.iter_mut()
            {
                let list = &self.by_lock[*lock as usize];
                let sec = |c: u32| self.sections[c as usize];
                // CS1 candidates (acquire HB-before r) form a prefix of the
                // lock's sections, CS2 candidates (a HB-before the end) a suffix.
                let g = list.partition_point(|&c| sync.hb_leq(sec(c).acq, r)) as u32;
                if g == 0 {
                    continue;
                }
                let f = list.partition_point(|&c| !sync.hb_leq(a, sec(c).end)) as u32;
                let start = entries.partition_point(|e| e.0 < f);
                while let Some(i) = tree.first_below(start, g) {
                    tree.clear(i);
                    let k = entries[i].2 as usize;
                    rank[k] = rank[j] + 1;
                    justifier[k] = j as u32;
                    queue.push_back(k);
                }
            }
        }
        Provenance { rank, justifier }
    }

    /// The chain step of base edge `j`; rule (b) edges get a justification
    /// number from `just` (allocated on first use).
    fn edge_step(&self, j: usize, just: &mut Justifications) -> Option<Step> {
        let (a, r, rule) = self.base[j];
        let (ea, er) = (self.ev(a), self.ev(r));
        let css = &self.facts.critical_sections;
        let sections = || -> Option<(CriticalSection, CriticalSection)> {
            let c1 = *self.sec_by_rel.get(&r)?;
            let c2 = *self.sec_by_acq.get(&a)?;
            Some((*css.get(c1 as usize)?, *css.get(c2 as usize)?))
        };
        let edge = match rule {
            Rule::A => {
                let (cs1, cs2) = sections()?;
                let (first, second) = self.conflict(&cs1, &cs2)?;
                CpEdge::RuleA {
                    cs1,
                    cs2,
                    first,
                    second,
                }
            }
            Rule::B => {
                let (cs1, cs2) = sections()?;
                CpEdge::RuleB {
                    cs1,
                    cs2,
                    justification: just.id(j, cs1.acq, cs2.end),
                }
            }
            Rule::Window => {
                let (cs1, cs2) = sections()?;
                CpEdge::Window {
                    cs1,
                    cs2,
                    window: self.window?,
                    hb_path: self.hb.path(self.trace, cs1.acq, cs2.end)?,
                }
            }
            Rule::Hard => {
                let (x, y) = (
                    self.trace.events[er as usize],
                    self.trace.events[ea as usize],
                );
                let edge = if self.facts.fork_edges.contains(&(er, ea)) {
                    Kind::Fork
                } else if self.facts.join_edges.contains(&(er, ea)) {
                    Kind::Join
                } else if super::volatile_conflict(&x, &y) {
                    Kind::Volatile
                } else if super::relaxed_pair(&x, &y) {
                    Kind::Atomic
                } else {
                    return None;
                };
                CpEdge::Hard {
                    edge: Box::new(edge),
                }
            }
        };
        Some(Step::new(er, ea, Kind::Cp(edge)))
    }

    /// A chain from `x` to `y` through base edge `j`.
    fn chain_through(
        &self,
        x: EventId,
        y: EventId,
        j: usize,
        just: &mut Justifications,
    ) -> Option<Vec<Step>> {
        let (a, r, _) = self.base[j];
        let mut chain = self.hb.path(self.trace, x, self.ev(r))?;
        chain.push(self.edge_step(j, just)?);
        chain.extend(self.hb.path(self.trace, self.ev(a), y)?);
        Some(chain)
    }

    /// The chains of every justification `just` allocated, breadth first.
    fn justify(&self, prov: &Provenance, just: &mut Justifications) -> Option<Vec<Justification>> {
        let mut out = Vec::new();
        while out.len() < just.edges.len() {
            let (j, from, to) = just.edges[out.len()];
            let by = prov.justifier[j];
            if by == NONE {
                return None;
            }
            let chain = self.chain_through(from, to, by as usize, just)?;
            out.push(Justification { from, to, chain });
        }
        Some(out)
    }

    /// The HB path from `e1` to `e2`, each release -> acquire step annotated
    /// with why CP has no edge there.
    fn dropped_path(&self, e1: EventId, e2: EventId) -> Vec<Step> {
        let mut path = self.hb.path(self.trace, e1, e2).unwrap_or_default();
        for s in &mut path {
            if let Kind::ReleaseAcquire { dropped } = &mut s.kind
                && let (Some(cs1), Some(cs2)) = (self.facts.cs_of(s.from), self.facts.cs_of(s.to))
            {
                *dropped = Some(Box::new(Dropped {
                    cs1: *cs1,
                    cs2: *cs2,
                    conflict: self.conflict(cs1, cs2),
                    cp_ordered: self.cp(cs1.acq, cs2.end),
                    relation: Relation::Cp,
                }));
            }
        }
        path
    }
}

/// The rule (b) edges of one lock, `(position of CS2, position of CS1, edge)`
/// sorted, with a tree over the CS1 positions of those not yet ranked.
struct LockEdges {
    lock: u32,
    entries: Vec<(u32, u32, u32)>,
    tree: MinTree,
}

/// Ranks and justifiers of base edges.
struct Provenance {
    /// Rule (b) replay round in which the edge is derived (NONE: never).
    rank: Vec<u32>,
    /// The base edge whose CP pair justified a rule (b) edge.
    justifier: Vec<u32>,
}

/// Justifications allocated while building a chain: base edge and pair.
#[derive(Default)]
struct Justifications {
    edges: Vec<(usize, EventId, EventId)>,
    ids: FxHashMap<usize, usize>,
}

impl Justifications {
    fn id(&mut self, j: usize, from: EventId, to: EventId) -> usize {
        *self.ids.entry(j).or_insert_with(|| {
            self.edges.push((j, from, to));
            self.edges.len() - 1
        })
    }
}

/// Minimum segment tree supporting "first index at or after `start` whose
/// value is below `g`" and clearing an index.
struct MinTree {
    size: usize,
    t: Vec<u32>,
}

impl MinTree {
    fn new(values: Vec<u32>) -> MinTree {
        let size = values.len().next_power_of_two().max(1);
        let mut t = vec![u32::MAX; 2 * size];
        t[size..size + values.len()].copy_from_slice(&values);
        for i in (1..size).rev() {
            t[i] = t[2 * i].min(t[2 * i + 1]);
        }
        MinTree { size, t }
    }

    fn clear(&mut self, i: usize) {
        let mut p = i + self.size;
        self.t[p] = u32::MAX;
        while p > 1 {
            p /= 2;
            self.t[p] = self.t[2 * p].min(self.t[2 * p + 1]);
        }
    }

    fn first_below(&self, start: usize, g: u32) -> Option<usize> {
        self.descend(1, 0, self.size, start, g)
    }

    fn descend(&self, node: usize, lo: usize, hi: usize, start: usize, g: u32) -> Option<usize> {
        if hi <= start || self.t[node] >= g {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.descend(2 * node, lo, mid, start, g)
            .or_else(|| self.descend(2 * node + 1, mid, hi, start, g))
    }
}

/// Preference among base edges that order a pair: simplest rule first.
fn rule_order(rule: Rule) -> u8 {
    match rule {
        Rule::A => 0,
        Rule::Hard => 1,
        Rule::Window => 2,
        Rule::B => 3,
    }
}

impl QueryEngine for CpQuery<'_> {
    fn relation(&self) -> Relation {
        Relation::Cp
    }
    fn window(&self) -> Option<u64> {
        self.window
    }
    fn sync_events(&self) -> usize {
        count_sync(self.trace)
    }
    fn has_base_edges(&self) -> bool {
        true
    }

    fn dump(&self, sink: &mut dyn DumpSink) -> io::Result<()> {
        let mut edges: Vec<(EventId, EventId, Rule)> = self
            .base
            .iter()
            .map(|&(a, r, rule)| (self.input.sync.event(r), self.input.sync.event(a), rule))
            .collect();
        edges.sort_unstable();
        for (from, to, rule) in edges {
            sink.base_edge(from, to, rule_name(rule))?;
        }
        // CP clocks at sync points: the engine's final pass.
        let base: Vec<(u32, u32)> = self.base.iter().map(|&(a, r, _)| (a, r)).collect();
        let pass = crate::race::cp::races::race_pass(self.trace, &self.input, &base, None, true);
        clock_pairs(
            self.trace,
            &self.input.sync,
            &pass.cp_clocks,
            self.window,
            |x, y| sink.pair(x, y),
        )
    }

    fn explain(&self, e1: EventId, e2: EventId) -> Answer {
        self.context().explain(e1, e2)
    }
}

impl Cx<'_> {
    fn explain(&self, e1: EventId, e2: EventId) -> Answer {
        let t = self.trace;
        let mut ans = Answer::new(Relation::Cp, self.window, e1, e2);
        if let Some(why) = not_after(e1, e2) {
            ans.explanation = why;
            return ans;
        }
        ans.hb_ordered = self.leq(e1, e2);
        if !ans.hb_ordered {
            ans.explanation = format!(
                "{} CP is contained in HBv (HB plus the volatile read/write -> later write edges; every CP edge is an HBv edge, composed with HBv), so CP does not \
                 order them either.{}",
                not_hb(t, &self.hb, e1, e2),
                window_note(self.window, e1, e2)
            );
            return ans;
        }
        if let Some(k) = self.window
            && (e2 - e1) as u64 >= k
        {
            ans.ordered = true;
            let hb_path = self.hb.path(t, e1, e2).unwrap_or_default();
            ans.chain = vec![Step::new(e1, e2, Kind::Window { window: k, hb_path })];
            ans.explanation = format!(
                "{} happens before {} (the HB path of the window step) and they are {} >= K = {k} events \
                 apart, so the window rule (w) orders them: windowed CP conservatively orders HB-ordered \
                 events K or more apart (and `analyze` never pairs them).",
                show(t, e1),
                show(t, e2),
                e2 - e1
            );
            return ans;
        }
        let prov = self.provenance();
        let best = (0..self.base.len())
            .filter(|&j| prov.rank[j] != NONE)
            .filter(|&j| {
                let (a, r, _) = self.base[j];
                self.leq(e1, self.ev(r)) && self.leq(self.ev(a), e2)
            })
            .min_by_key(|&j| {
                let (a, r, rule) = self.base[j];
                (
                    prov.rank[j],
                    rule_order(rule),
                    self.ev(a).abs_diff(self.ev(r)),
                    self.ev(r),
                )
            });
        let Some(j) = best else {
            ans.chain = self.dropped_path(e1, e2);
            ans.explanation = self.dropped_text(e1, e2, &ans.chain);
            return ans;
        };
        let mut just = Justifications::default();
        let built = self
            .chain_through(e1, e2, j, &mut just)
            .and_then(|chain| Some((chain, self.justify(&prov, &mut just)?)));
        let (a, r, rule) = self.base[j];
        match built {
            Some((chain, justifications)) => {
                ans.ordered = true;
                ans.chain = chain;
                ans.justifications = justifications;
                ans.explanation = format!(
                    "{} is CP-before {}: it happens before {}, the base CP edge {} -> {} holds by {}, and {} \
                     happens before {}; rule (c) closes CP under composition with HBv (HB plus the volatile edges CP keeps) on both sides.",
                    show(t, e1),
                    show(t, e2),
                    show(t, self.ev(r)),
                    show(t, self.ev(r)),
                    show(t, self.ev(a)),
                    match rule {
                        Rule::A => "rule (a)",
                        Rule::B => "rule (b)",
                        Rule::Window => "rule (b) through the window rule",
                        Rule::Hard => "a hard edge",
                    },
                    show(t, self.ev(a)),
                    show(t, e2)
                );
            }
            None => {
                // The engine's edge could not be re-justified: say so rather
                // than print a chain that does not check.
                ans.ordered = true;
                ans.explanation = format!(
                    "{} is CP-before {} through the base CP edge {} -> {} (rule {}), but cprace could not \
                     rebuild that edge's justification; this is a bug, please report it.",
                    show(t, e1),
                    show(t, e2),
                    show(t, self.ev(r)),
                    show(t, self.ev(a)),
                    rule_name(rule)
                );
            }
        }
        ans
    }
}

impl Cx<'_> {
    fn dropped_text(&self, e1: EventId, e2: EventId, path: &[Step]) -> String {
        let mut s = hb_only_text(self.trace, "CP", ("r", "a"), (e1, e2), path, |steps| {
            format!(
                " {steps} joins critical sections holding no conflicting accesses and no CP-ordered \
                 events (the acquire of the first is not CP-before the end of the second), so neither \
                 rule (a) nor rule (b) makes it a CP edge; the path has no fork, join or volatile edge \
                 (those would be hard CP edges)."
            )
        });
        if let Some(k) = self.window {
            s += &format!(
                " The events are {} < K = {k} events apart, so the window rule does not order them.",
                e2 - e1
            );
        }
        s
    }
}
