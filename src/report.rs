//! The one result type every engine fills, and the one place that prints it.

use std::collections::BTreeSet;
use std::io::Write;

use serde_json::{Map, Value};

use crate::trace::{Event, EventId, Names, Op, ThreadId};

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
}

/// Output formats of `analyze`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// ThreadSanitizer-style warnings and a summary line.
    Text,
    /// One JSON object.
    Json,
    /// One CSV row per race witness.
    Csv,
    /// Only the summary line, notes and engine counters (no per-race lines).
    Summary,
}

/// What an engine found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Relation name (`hb`, `cp`, `wcp`, `lockset`, ...).
    pub relation: String,
    /// Engine name.
    pub engine: String,
    /// Window K, or None for the whole trace.
    pub window: Option<u64>,
    /// Events in the trace.
    pub events: u64,
    /// One witness per racy event, ordered by the racy (second) event.
    pub races: Vec<Race>,
    /// Engine-specific counters, printed under `stats`.
    pub stats: Map<String, Value>,
    /// Remarks for the reader (e.g. soundness caveats).
    pub notes: Vec<String>,
    /// With `--witness`: per race (same order as `races`), a correct
    /// reordering prefix after which both events are enabled, or None when
    /// none was found (see [`crate::witness`]).
    pub witnesses: Option<Vec<Option<Vec<EventId>>>>,
}

impl Report {
    /// An empty report for `relation` computed by `engine`.
    pub fn new(relation: &str, engine: &str, window: Option<u64>, events: u64) -> Report {
        Report {
            relation: relation.into(),
            engine: engine.into(),
            window,
            events,
            ..Report::default()
        }
    }

    /// Sorted ids of the racy events.
    pub fn racy_events(&self) -> Vec<EventId> {
        let mut v: Vec<EventId> = self.races.iter().map(|r| r.second.id).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Distinct racy variables, sorted by id.
    pub fn racy_variables(&self) -> BTreeSet<u32> {
        let mut v: Vec<u32> = self.races.iter().map(|r| r.variable).collect();
        v.sort_unstable();
        v.dedup();
        v.into_iter().collect()
    }

    /// Distinct (first, second) location pairs, unordered, sorted. (A sorted
    /// vector: reports can hold millions of races, and an unstable sort of
    /// plain pairs is several times cheaper than building a tree.)
    pub fn location_pairs(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self
            .races
            .iter()
            .map(|r| (r.first.loc.min(r.second.loc), r.first.loc.max(r.second.loc)))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The first race per variable: the witness with the smallest racy event.
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

    /// Sort witnesses by racy event; engines call this before returning.
    pub fn normalize(&mut self) {
        self.races.sort_by_key(|r| (r.second.id, r.first.id));
        self.races.dedup_by_key(|r| r.second.id);
    }

    /// Exit status following diff(1): 0 without races, 1 with.
    pub fn exit_code(&self) -> i32 {
        if self.races.is_empty() { 0 } else { 1 }
    }

    /// The report as the JSON object of the output contract.
    pub fn to_json(&self, names: &Names) -> Value {
        serde_json::to_value(self.json_view(names)).expect("report serializes")
    }

    /// A borrowed, directly serializable view (no intermediate JSON tree, so
    /// reports with millions of races print in constant extra memory).
    fn json_view<'a>(&'a self, names: &'a Names) -> JsonReport<'a> {
        JsonReport {
            relation: &self.relation,
            engine: &self.engine,
            window: self.window,
            events: self.events,
            racy_events: self.racy_events(),
            races: JsonRaces {
                races: &self.races,
                witnesses: self.witnesses.as_deref(),
                names,
            },
            racy_variables: self
                .racy_variables()
                .into_iter()
                .map(|v| names.var(v))
                .collect(),
            location_pairs: self.location_pairs().len(),
            stats: &self.stats,
            notes: &self.notes,
        }
    }

    /// Print in `format` to `out`.
    pub fn write(
        &self,
        names: &Names,
        format: OutputFormat,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        match format {
            OutputFormat::Json => {
                serde_json::to_writer_pretty(&mut *out, &self.json_view(names))?;
                writeln!(out)
            }
            OutputFormat::Csv => self.write_csv(names, out),
            OutputFormat::Text => self.write_text(names, out, true),
            OutputFormat::Summary => self.write_text(names, out, false),
        }
    }

    fn write_csv(&self, names: &Names, out: &mut impl Write) -> std::io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "first",
            "second",
            "variable",
            "kind",
            "first_thread",
            "first_op",
            "first_loc",
            "second_thread",
            "second_op",
            "second_loc",
        ])?;
        for r in &self.races {
            w.write_record([
                r.first.id.to_string().as_str(),
                &r.second.id.to_string(),
                names.var(r.variable),
                r.kind(),
                names.thread(r.first.thread),
                r.first.op.as_str(),
                names.loc(r.first.loc),
                names.thread(r.second.thread),
                r.second.op.as_str(),
                names.loc(r.second.loc),
            ])?;
        }
        w.flush()
    }

    fn write_text(&self, names: &Names, out: &mut impl Write, races: bool) -> std::io::Result<()> {
        for (i, r) in self.races.iter().enumerate().filter(|_| races) {
            writeln!(
                out,
                "WARNING: data race on `{}` ({})",
                names.var(r.variable),
                r.kind()
            )?;
            writeln!(out, "  {}", describe(&r.second, names, ""))?;
            writeln!(out, "  {}", describe(&r.first, names, "previous "))?;
            if let Some(w) = &self.witnesses {
                writeln!(
                    out,
                    "  witness: {}",
                    crate::witness::compact(w[i].as_deref())
                )?;
            }
            writeln!(out)?;
        }
        for n in &self.notes {
            writeln!(out, "note: {n}")?;
        }
        let window = self.window.map_or("none".to_string(), |k| k.to_string());
        writeln!(
            out,
            "SUMMARY: {} racy events, {} racy variables, {} location pairs ({} {}, window {window}, {} events)",
            self.racy_events().len(),
            self.racy_variables().len(),
            self.location_pairs().len(),
            self.relation,
            self.engine,
            self.events
        )?;
        for (k, v) in &self.stats {
            writeln!(out, "  {k}: {v}")?;
        }
        Ok(())
    }
}

fn describe(a: &Access, names: &Names, prefix: &str) -> String {
    let what = if a.op.is_write() { "write" } else { "read" };
    let loc = names.loc(a.loc);
    let at = if loc.is_empty() {
        String::new()
    } else {
        format!(" at {loc}")
    };
    format!(
        "{prefix}{what} by thread {} (event {}){at}",
        names.thread(a.thread),
        a.id
    )
}

#[derive(serde::Serialize)]
struct JsonReport<'a> {
    relation: &'a str,
    engine: &'a str,
    window: Option<u64>,
    events: u64,
    racy_events: Vec<EventId>,
    races: JsonRaces<'a>,
    racy_variables: Vec<&'a str>,
    location_pairs: usize,
    stats: &'a Map<String, Value>,
    notes: &'a [String],
}

struct JsonRaces<'a> {
    races: &'a [Race],
    witnesses: Option<&'a [Option<Vec<EventId>>]>,
    names: &'a Names,
}

impl serde::Serialize for JsonRaces<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.races.iter().enumerate().map(|(i, r)| {
            let mut j = JsonRace::new(r, self.names);
            j.witness = self.witnesses.map(|w| w[i].as_deref());
            j
        }))
    }
}

/// One race witness in JSON.
#[derive(serde::Serialize)]
struct JsonRace<'a> {
    first: EventId,
    second: EventId,
    variable: &'a str,
    first_loc: &'a str,
    second_loc: &'a str,
    kind: &'static str,
    first_thread: &'a str,
    second_thread: &'a str,
    /// Only with `--witness`: the witness array, or null when none was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<Option<&'a [EventId]>>,
}

impl<'a> JsonRace<'a> {
    fn new(r: &Race, names: &'a Names) -> JsonRace<'a> {
        JsonRace {
            first: r.first.id,
            second: r.second.id,
            variable: names.var(r.variable),
            first_loc: names.loc(r.first.loc),
            second_loc: names.loc(r.second.loc),
            kind: r.kind(),
            first_thread: names.thread(r.first.thread),
            second_thread: names.thread(r.second.thread),
            witness: None,
        }
    }
}
