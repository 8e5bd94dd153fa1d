//! The one result type every engine fills, and the one place that prints it.
//!
//! # Feeding races
//!
//! Engines hand each race witness to [`Report::push`], one at a time. A report
//! either collects them (`races`, the default: tests, `sweep`, JSON and SARIF
//! output) or, after [`Report::spill_races`], writes them straight to a
//! temporary file of fixed-size records ([`spill`]), so a run with tens of
//! millions of racy events stays flat in memory; for the summary, which
//! needs only counts, [`Keep::Count`] keeps nothing per race. Every printed format reads
//! the races back one at a time through [`Report::each_race`]: CSV and JSON
//! Lines write one row per race, the grouped text report keeps one entry per
//! location pair ([`text`]), so only JSON and SARIF (one document) need the
//! collected vector.
//!
//! Races must be pushed in the order of their racy (second) event, at most one
//! per racy event: that is the order the streaming engines (HB `vc`, `epoch`,
//! `lockset`, WCP `vc`) find them in, and what [`Report::normalize`] gives a
//! collected report. Nothing is printed until the analysis finished, so a
//! failed run never leaves a partial result behind.
//!
//! CP's race pass plugs in the same way: it delivers its races in event order
//! through a callback, and `cp::analyze` passes `|r| report.push(r)` as that
//! callback on a report made by `Report::new` (spilled or not, as `analyze`
//! asks); its `--first-race` mode simply stops calling back after the first.

pub mod deadlock;
mod detail_json;
pub(crate) mod format;
mod html;
pub(crate) mod sarif;
pub(crate) mod spill;
pub(crate) mod text;
pub mod tsan;

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::{Map, Value};

use crate::relation::{Engine, Relation};
use crate::trace::{Event, EventId, Names, Op, ThreadId};

pub use deadlock::{Deadlock, DeadlockKind, DeadlockLink, Holder, Site};
pub use format::{Layout, OutputFormat};

/// The races a report laid out as `layout` shows, in order: the first of
/// each location pair (or with `layout.all` the first racy events), at most
/// `layout.max_reports`.
pub fn shown_races(report: &Report, layout: &Layout) -> std::io::Result<Vec<Race>> {
    let cap = usize::try_from(layout.max_reports.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
    if layout.all {
        let mut v = Vec::new();
        report.each_race(|r| {
            if v.len() < cap {
                v.push(*r);
            }
            Ok(())
        })?;
        Ok(v)
    } else {
        Ok(text::groups(report)?
            .into_iter()
            .take(cap)
            .map(|g| g.first)
            .collect())
    }
}

/// [`Report::details`]: TSan-style details by `(first, second)` event ids.
pub type Details = std::collections::BTreeMap<(EventId, EventId), tsan::Detail>;

/// One side of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// Event id (0-based position in the input trace).
    pub id: EventId,
    /// Performing thread.
    pub thread: ThreadId,
    /// `Read` or `Write`.
    pub op: Op,
    /// Location id.
    pub loc: u32,
}

impl Access {
    /// The access view of event `id`.
    pub fn of(id: EventId, ev: &Event) -> Access {
        Access {
            id,
            thread: ev.thread,
            op: ev.op,
            loc: ev.loc,
        }
    }
}

/// A race witness: two conflicting accesses the relation leaves unordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Race {
    /// The earlier access.
    pub first: Access,
    /// The later (racy) access.
    pub second: Access,
    /// The variable both access.
    pub variable: u32,
}

impl Race {
    /// `write-write`, `write-read` or `read-write`.
    pub fn kind(&self) -> &'static str {
        match (self.first.op.is_write(), self.second.op.is_write()) {
            (true, true) => "write-write",
            (true, false) => "write-read",
            _ => "read-write",
        }
    }

    /// The unordered pair of the two accesses' locations, smaller id first.
    pub(crate) fn location_pair(&self) -> (u32, u32) {
        let (a, b) = (self.first.loc, self.second.loc);
        (a.min(b), a.max(b))
    }
}

/// Distinct location pairs `(a, b)`, `a <= b`: a bitset over `a * dim + b`
/// while the locations are few (a racy trace has hundreds of thousands of
/// distinct pairs, which in a hash set cost a cache miss each), a hash set
/// past [`PairSet::MAX_DIM`] locations.
#[derive(Default)]
struct PairSet {
    dim: usize,
    bits: Vec<u64>,
    count: u64,
    many: Option<rustc_hash::FxHashSet<(u32, u32)>>,
}

impl PairSet {
    /// Most locations of the bitset (16,384: 32 MB).
    const MAX_DIM: usize = 1 << 14;

    fn insert(&mut self, (a, b): (u32, u32)) {
        if let Some(set) = &mut self.many {
            set.insert((a, b));
            return;
        }
        let need = b as usize + 1;
        if need > self.dim {
            self.regrow(need);
            return self.insert((a, b));
        }
        let i = a as usize * self.dim + b as usize;
        self.count += u64::from(insert_bit(&mut self.bits, i));
    }

    /// Room for locations below `need`: a bigger bitset, or the hash set.
    fn regrow(&mut self, need: usize) {
        let old: Vec<(u32, u32)> = self.iter().collect();
        if need > Self::MAX_DIM {
            self.many = Some(old.into_iter().collect());
            self.bits = Vec::new();
            return;
        }
        self.dim = need.next_power_of_two().max(1024);
        self.bits = vec![0; (self.dim * self.dim).div_ceil(64)];
        self.count = 0;
        for p in old {
            self.insert(p);
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let dim = self.dim.max(1);
        self.bits
            .iter()
            .enumerate()
            .filter(|&(_, &word)| word != 0)
            .flat_map(move |(w, &word)| {
                // The set bits, lowest first.
                let mut rest = word;
                std::iter::from_fn(move || {
                    let i = rest.trailing_zeros() as usize;
                    (rest != 0).then(|| {
                        rest &= rest - 1;
                        let at = w * 64 + i;
                        ((at / dim) as u32, (at % dim) as u32)
                    })
                })
            })
    }

    fn len(&self) -> u64 {
        match &self.many {
            Some(set) => set.len() as u64,
            None => self.count,
        }
    }
}

/// Set bit `i` of `bits` (grown as needed); true when it was not set.
fn insert_bit(bits: &mut Vec<u64>, i: usize) -> bool {
    let (w, bit) = (i / 64, 1u64 << (i % 64));
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    let new = bits[w] & bit == 0;
    bits[w] |= bit;
    new
}

/// [`Tally`]'s counts, gathered race by race.
#[derive(Default)]
struct Counter {
    races: u64,
    /// Racy variables: variable ids are dense, so a bitset, not a tree
    /// (array code makes hundreds of thousands of variables racy).
    vars: Vec<u64>,
    distinct_vars: u64,
    pairs: PairSet,
}

impl Counter {
    fn add(&mut self, r: &Race) {
        self.races += 1;
        self.distinct_vars += u64::from(insert_bit(&mut self.vars, r.variable as usize));
        self.pairs.insert(r.location_pair());
    }

    fn tally(&self) -> Tally {
        Tally {
            racy_events: self.races,
            racy_variables: self.distinct_vars,
            location_pairs: self.pairs.len(),
        }
    }
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tally().fmt(f)
    }
}

/// Where a report keeps the races engines push.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// In memory (`Report::races`).
    #[default]
    Collect,
    /// In a temporary file ([`Report::spill_races`]): for output that
    /// streams them.
    Spill,
    /// Only counted (the summary's numbers): no memory or disk per race.
    Count,
}

/// What an engine found.
#[derive(Debug)]
pub struct Report {
    /// The relation.
    pub relation: Relation,
    /// The engine that computed it.
    pub engine: Engine,
    /// Window K bounding CP's reasoning (rule (w)), or None: exact (and for
    /// every relation other than CP).
    pub window: Option<u64>,
    /// Only pairs less than this many events apart are reported (None: all).
    pub max_distance: Option<u64>,
    /// Events in the trace.
    pub events: u64,
    /// One witness per racy event, ordered by the racy (second) event. Empty
    /// when the races were spilled ([`Report::spill_races`]).
    pub races: Vec<Race>,
    /// Engine-specific counters, printed under `stats`.
    pub stats: Map<String, Value>,
    /// Remarks for the reader (e.g. soundness caveats).
    pub notes: Vec<String>,
    /// With `--witness`: per race (same order as `races`), a correct
    /// reordering prefix after which both events are enabled, or None when
    /// none was found (see [`crate::witness`]).
    pub witnesses: Option<Vec<Option<Vec<EventId>>>>,
    /// The deadlocks of a deadlock report (relation [`Relation::Deadlock`]).
    pub deadlocks: Vec<Deadlock>,
    /// For a recorded program's trace that carries call stacks: what the
    /// text report prints about each race it shows, ThreadSanitizer's
    /// fields ([`tsan::Detail`]), by the race's `(first, second)` events.
    pub details: Details,
    /// With a suppressions file: each rule that dropped races (or
    /// deadlocks), as written (`race:foo`), and how many, in the file's
    /// order ([`crate::suppress`]). None without a file.
    pub suppressed: Option<Vec<(String, u64)>>,
    /// With witnesses, for the HTML report: the witness of each race it
    /// shows as runs of one thread ([`crate::witness::runs`]), by the
    /// race's `(first, second)` events; the page draws them as lanes.
    pub timelines: std::collections::BTreeMap<(EventId, EventId), Vec<tsan::WitnessRun>>,
    /// Where pushed races go instead of `races`, when not collected.
    kept: Option<Kept>,
}

/// An empty report standing for none: what `std::mem::take` leaves in an
/// engine that hands its report on.
impl Default for Report {
    fn default() -> Report {
        Report::new(Relation::Po, Engine::Stream, None, 0)
    }
}

/// Races kept elsewhere than [`Report::races`].
#[derive(Debug)]
enum Kept {
    /// In a temporary file ([`Keep::Spill`]).
    Spilled(spill::Spill),
    /// Only their counts ([`Keep::Count`]).
    Counted(Box<Counter>),
}

impl Clone for Report {
    /// A copy of a collected report. (A spilled report's races live in its
    /// temporary file, which is not copied: cloning one is a bug.)
    fn clone(&self) -> Report {
        assert!(
            self.kept.is_none(),
            "a spilled or counted report cannot be cloned"
        );
        Report {
            relation: self.relation,
            engine: self.engine,
            window: self.window,
            max_distance: self.max_distance,
            events: self.events,
            races: self.races.clone(),
            stats: self.stats.clone(),
            notes: self.notes.clone(),
            witnesses: self.witnesses.clone(),
            deadlocks: self.deadlocks.clone(),
            details: self.details.clone(),
            suppressed: self.suppressed.clone(),
            timelines: self.timelines.clone(),
            kept: None,
        }
    }
}

/// Counts over every race of a report, gathered in one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Racy events (one witness each).
    pub racy_events: u64,
    /// Distinct racy variables.
    pub racy_variables: u64,
    /// Distinct unordered location pairs of the witnesses.
    pub location_pairs: u64,
}

impl Report {
    /// The witness of race `r` (a race of this collected report), when
    /// witnesses were attached: `Some(None)` when none was found.
    pub(crate) fn witness_of(&self, r: &Race) -> Option<Option<&[EventId]>> {
        let ws = self.witnesses.as_ref()?;
        let i = self
            .races
            .binary_search_by_key(&r.second.id, |x| x.second.id)
            .ok()?;
        Some(ws.get(i)?.as_deref())
    }

    /// An empty report for `relation` computed by `engine`.
    pub fn new(relation: Relation, engine: Engine, window: Option<u64>, events: u64) -> Report {
        Report {
            relation,
            engine,
            window,
            max_distance: None,
            events,
            races: Vec::new(),
            stats: Map::new(),
            notes: Vec::new(),
            witnesses: None,
            kept: None,
            deadlocks: Vec::new(),
            details: Default::default(),
            suppressed: None,
            timelines: Default::default(),
        }
    }

    /// How many races (or deadlocks) the suppressions dropped.
    pub fn suppressed_count(&self) -> u64 {
        self.suppressed
            .as_ref()
            .map_or(0, |v| v.iter().map(|(_, n)| n).sum())
    }

    /// The text line saying what was suppressed (`suppressed: 3 races
    /// (race:foo 2, called_from_lib:libz.so 1)`), when a suppressions file
    /// was given.
    pub(crate) fn suppressed_line(&self, what: &str) -> Option<String> {
        let fired = self.suppressed.as_ref()?;
        let mut line = format!(
            "suppressed: {}",
            text::plural(self.suppressed_count(), what)
        );
        if !fired.is_empty() {
            let by: Vec<String> = fired
                .iter()
                .map(|(rule, n)| format!("{} {n}", printable(rule)))
                .collect();
            line.push_str(&format!(" ({})", by.join(", ")));
        }
        Some(line)
    }

    /// Keep only the races `keep` accepts (collected or spilled, in order;
    /// their witnesses with them). A counted report keeps none to filter.
    pub(crate) fn retain_races(&mut self, mut keep: impl FnMut(&Race) -> bool) -> io::Result<()> {
        match &mut self.kept {
            Some(Kept::Spilled(s)) => {
                let mut fresh = spill::Spill::new()?;
                s.each(|r| {
                    if keep(r) {
                        fresh.push(r);
                    }
                    Ok(())
                })?;
                fresh.finish();
                *s = fresh;
            }
            Some(Kept::Counted(_)) => {
                return Err(io::Error::other(
                    "the races were only counted, not kept: they cannot be filtered",
                ));
            }
            None => {
                let mask: Vec<bool> = self.races.iter().map(&mut keep).collect();
                let mut m = mask.iter();
                self.races.retain(|_| *m.next().expect("one flag a race"));
                if let Some(w) = &mut self.witnesses {
                    let mut m = mask.iter();
                    w.retain(|_| *m.next().unwrap_or(&true));
                }
            }
        }
        Ok(())
    }

    /// From now on, write pushed races to a temporary file instead of
    /// collecting them (see the module docs). Call before the first push.
    pub(crate) fn spill_races(&mut self) -> io::Result<()> {
        debug_assert!(self.races.is_empty(), "spill before the first race");
        self.kept = Some(Kept::Spilled(spill::Spill::new()?));
        Ok(())
    }

    /// Keep the races as `keep` says (before the first race).
    pub(crate) fn keep_races(&mut self, keep: Keep) -> io::Result<()> {
        debug_assert!(self.races.is_empty(), "choose before the first race");
        match keep {
            Keep::Collect => {}
            Keep::Spill => self.spill_races()?,
            Keep::Count => self.kept = Some(Kept::Counted(Box::default())),
        }
        Ok(())
    }

    /// Whether the races are spilled rather than collected.
    pub fn is_spilled(&self) -> bool {
        matches!(self.kept, Some(Kept::Spilled(_)))
    }

    /// Record one race witness (see the module docs for the order).
    #[inline]
    pub fn push(&mut self, race: Race) {
        match &mut self.kept {
            Some(Kept::Spilled(s)) => s.push(&race),
            Some(Kept::Counted(c)) => c.add(&race),
            None => self.races.push(race),
        }
    }

    /// Number of races recorded (one per racy event once normalized).
    pub fn race_count(&self) -> u64 {
        match &self.kept {
            Some(Kept::Spilled(s)) => s.len(),
            Some(Kept::Counted(c)) => c.races,
            None => self.races.len() as u64,
        }
    }

    /// Call `f` on every race in order, collected or spilled.
    pub fn each_race(&self, f: impl FnMut(&Race) -> io::Result<()>) -> io::Result<()> {
        match &self.kept {
            Some(Kept::Spilled(s)) => s.each(f),
            Some(Kept::Counted(_)) => Err(io::Error::other(
                "the races were only counted (summary output), not kept",
            )),
            None => self.races.iter().try_for_each(f),
        }
    }

    /// Racy events, racy variables and location pairs, in one pass (or
    /// as counted, [`Keep::Count`]).
    pub fn tally(&self) -> io::Result<Tally> {
        if let Some(Kept::Counted(c)) = &self.kept {
            return Ok(c.tally());
        }
        let mut c = Counter::default();
        self.each_race(|r| {
            c.add(r);
            Ok(())
        })?;
        Ok(c.tally())
    }

    /// Sorted ids of the racy events (collected races).
    pub fn racy_events(&self) -> Vec<EventId> {
        let mut v: Vec<EventId> = self.races.iter().map(|r| r.second.id).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Distinct racy variables, sorted by id (collected races).
    pub fn racy_variables(&self) -> BTreeSet<u32> {
        let mut v: Vec<u32> = self.races.iter().map(|r| r.variable).collect();
        v.sort_unstable();
        v.dedup();
        v.into_iter().collect()
    }

    /// Distinct (first, second) location pairs, unordered, sorted (collected
    /// races). A sorted vector: reports can hold millions of races, and an
    /// unstable sort of plain pairs is several times cheaper than a tree.
    pub fn location_pairs(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self.races.iter().map(Race::location_pair).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The first race per variable: the witness with the smallest racy event
    /// (collected races).
    pub fn first_race_per_variable(&self) -> Vec<Race> {
        let mut seen = BTreeSet::new();
        let mut v: Vec<Race> = Vec::new();
        let mut sorted = self.races.clone();
        sorted.sort_by_key(|r| r.second.id);
        for r in sorted {
            if seen.insert(r.variable) {
                v.push(r);
            }
        }
        v
    }

    /// Sort witnesses by racy event (one per racy event); engines call this
    /// before returning. A spilled report is already in order: its file is
    /// flushed here.
    pub(crate) fn normalize(&mut self) {
        match &mut self.kept {
            Some(Kept::Spilled(s)) => return s.finish(),
            Some(Kept::Counted(_)) => return,
            None => {}
        }
        self.races.sort_by_key(|r| (r.second.id, r.first.id));
        self.races.dedup_by_key(|r| r.second.id);
    }

    /// Exit status following diff(1): 0 without races (or deadlocks), 1 with.
    pub fn exit_code(&self) -> i32 {
        if self.race_count() == 0 && self.deadlocks.is_empty() {
            0
        } else {
            1
        }
    }

    /// The report as the JSON object of the output contract.
    pub fn to_json(&self, names: &Names) -> Value {
        serde_json::to_value(format::json_view(self, names)).expect("report serializes")
    }

    /// Print in `format` to `out` (`layout` shapes the text report).
    pub fn write(
        &self,
        names: &Names,
        format: OutputFormat,
        layout: &Layout,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if let Some(Kept::Spilled(s)) = &self.kept {
            s.check()?;
        }
        if self.relation == Relation::Deadlock {
            return deadlock::write(self, names, format, out);
        }
        match format {
            OutputFormat::Json => format::write_json(self, names, out),
            OutputFormat::Jsonl => format::write_jsonl(self, names, out),
            OutputFormat::Csv => format::write_csv(self, names, out),
            OutputFormat::Sarif => sarif::write(self, names, out),
            OutputFormat::Html => html::write(self, names, layout, out),
            OutputFormat::Text => text::write(self, names, layout, out),
            OutputFormat::Summary => text::write_summary(self, names, out),
        }
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`, ...), so a name read
/// from a trace prints as one line and cannot drive the terminal.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn pair_set_counts_distinct_pairs_through_regrowth() {
        let mut set = PairSet::default();
        let mut want = std::collections::HashSet::new();
        let mut x = 7u64;
        for step in 0..60_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Locations grow with the steps: the bitset regrows, then (past
            // 16,384 locations) becomes a hash set.
            let range = 10 + step / 2;
            let (a, b) = (((x >> 33) % range) as u32, ((x >> 13) % range) as u32);
            let p = (a.min(b), a.max(b));
            set.insert(p);
            want.insert(p);
            if step % 9_999 == 0 {
                assert_eq!(set.len(), want.len() as u64, "step {step}");
            }
        }
        assert!(set.many.is_some());
        assert_eq!(set.len(), want.len() as u64);
    }

    use super::*;

    fn race(first: u32, second: u32, var: u32, loc: (u32, u32)) -> Race {
        let a = |id, loc, op| Access {
            id,
            thread: id % 2,
            op,
            loc,
        };
        Race {
            first: a(first, loc.0, Op::Write),
            second: a(second, loc.1, Op::Read),
            variable: var,
        }
    }

    #[test]
    fn spilled_and_collected_reports_read_back_the_same_races() {
        let races: Vec<Race> = (0..1000)
            .map(|i| race(2 * i, 2 * i + 1, i % 7, (i % 3, 5)))
            .collect();
        let mut collected = Report::new(Relation::Hb, Engine::Vc, None, 2000);
        let mut spilled = Report::new(Relation::Hb, Engine::Vc, None, 2000);
        spilled.spill_races().unwrap();
        for r in &races {
            collected.push(*r);
            spilled.push(*r);
        }
        collected.normalize();
        spilled.normalize();
        assert!(spilled.races.is_empty() && spilled.is_spilled());
        assert_eq!(spilled.race_count(), 1000);
        let mut back = Vec::new();
        spilled
            .each_race(|r| {
                back.push(*r);
                Ok(())
            })
            .unwrap();
        assert_eq!(back, races);
        assert_eq!(collected.tally().unwrap(), spilled.tally().unwrap());
        assert_eq!(
            collected.tally().unwrap(),
            Tally {
                racy_events: 1000,
                racy_variables: 7,
                location_pairs: 3
            }
        );
    }

    #[test]
    fn printable_escapes_control_characters_only() {
        assert_eq!(printable("f.java:7"), "f.java:7");
        assert_eq!(printable("a\nb\u{1b}[31m\r"), "a\\nb\\u{1b}[31m\\r");
        assert_eq!(printable("naïve"), "naïve");
    }
}
