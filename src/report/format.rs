//! The machine formats of a report: JSON (one document), JSON Lines and CSV
//! (one row per racy event, streamed).

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::detail_json::DetailJson;
use super::{Details, Race, Report};
use crate::trace::{EventId, Names};

/// Output formats of `analyze`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OutputFormat {
    /// One report per location pair (ThreadSanitizer style) and a SUMMARY.
    Text,
    /// One JSON object with every racy event.
    Json,
    /// One JSON object per racy event and line, streamed.
    Jsonl,
    /// One CSV row per racy event, streamed.
    Csv,
    /// SARIF 2.1.0 for code-scanning tools: one result per location pair.
    Sarif,
    /// Only the SUMMARY line and the engine counters.
    Summary,
    /// One self-contained HTML page: an index of the location pairs, and
    /// per race its stacks with source, threads, locks and witness timeline.
    Html,
}

impl OutputFormat {
    /// Whether the format is written one race at a time (so `analyze` can
    /// spill races to disk instead of collecting them).
    pub fn streams(self) -> bool {
        !matches!(self, OutputFormat::Json | OutputFormat::Sarif)
    }

    /// The layout of the races this format shows one by one (with their
    /// details and witnesses), when the text's is `layout`: the text's own,
    /// every race for JSON and JSON Lines, the first race of each location
    /// pair for SARIF and HTML (for HTML at most `layout.max_reports`, by
    /// default [`HTML_MAX_REPORTS`]); None
    /// for CSV and the summary, which show no details.
    pub fn shown(self, layout: &Layout) -> Option<Layout> {
        match self {
            OutputFormat::Text => Some(*layout),
            OutputFormat::Json | OutputFormat::Jsonl => Some(Layout {
                all: true,
                max_reports: None,
            }),
            OutputFormat::Sarif => Some(Layout::default()),
            OutputFormat::Html => Some(Layout {
                all: false,
                max_reports: Some(layout.max_reports.unwrap_or(HTML_MAX_REPORTS)),
            }),
            OutputFormat::Csv | OutputFormat::Summary => None,
        }
    }
}

/// Location pairs the HTML report shows without `--max-reports`: a
/// browser draws an index of ten thousand rows at once, not of millions.
pub const HTML_MAX_REPORTS: u64 = 10_000;

/// How the text report is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// One block per racy event instead of one per location pair.
    pub all: bool,
    /// Print at most this many blocks (the SUMMARY still counts everything).
    pub max_reports: Option<u64>,
}

/// A borrowed, directly serializable view (no intermediate JSON tree, so
/// reports with millions of races print in constant extra memory).
pub(super) fn json_view<'a>(r: &'a Report, names: &'a Names) -> JsonReport<'a> {
    JsonReport {
        relation: r.relation.name(),
        engine: r.engine.name(),
        window: r.window,
        max_distance: r.max_distance,
        events: r.events,
        racy_events: r.racy_events(),
        races: JsonRaces {
            races: &r.races,
            witnesses: r.witnesses.as_deref(),
            details: &r.details,
            names,
        },
        racy_variables: r
            .racy_variables()
            .into_iter()
            .map(|v| names.var(v))
            .collect(),
        location_pairs: r.location_pairs().len(),
        stats: &r.stats,
        notes: &r.notes,
        suppressed: r.suppressed.as_ref().map(|_| r.suppressed_count()),
    }
}

pub(super) fn write_json(r: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    if r.is_spilled() {
        // One document: read the races back into a collected copy.
        let mut c = Report::new(r.relation, r.engine, r.window, r.events);
        r.each_race(|x| {
            c.races.push(*x);
            Ok(())
        })?;
        c.max_distance = r.max_distance;
        c.stats = r.stats.clone();
        c.notes = r.notes.clone();
        c.suppressed = r.suppressed.clone();
        c.witnesses = r.witnesses.clone();
        c.details = r.details.clone();
        return write_json(&c, names, out);
    }
    serde_json::to_writer_pretty(&mut *out, &json_view(r, names))?;
    writeln!(out)
}

pub(super) fn write_jsonl(r: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    r.each_race(|race| {
        let row = JsonlRow {
            relation: r.relation.name(),
            engine: r.engine.name(),
            window: r.window,
            max_distance: r.max_distance,
            race: JsonRace::new(race, names, &r.details),
        };
        serde_json::to_writer(&mut *out, &row)?;
        writeln!(out)
    })
}

/// CSV columns: the race, then its provenance, so files of several runs can
/// be concatenated (the window is a number, empty for none).
pub(crate) const CSV_HEADER: [&str; 14] = [
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
    "relation",
    "engine",
    "window",
    "max_distance",
];

pub(super) fn write_csv(r: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_HEADER)?;
    let window = r.window.map_or(String::new(), |k| k.to_string());
    let distance = r.max_distance.map_or(String::new(), |d| d.to_string());
    r.each_race(|race| {
        w.write_record([
            race.first.id.to_string().as_str(),
            &race.second.id.to_string(),
            &names.var(race.variable),
            race.kind(),
            names.thread(race.first.thread),
            race.first.op.as_str(),
            names.loc(race.first.loc),
            names.thread(race.second.thread),
            race.second.op.as_str(),
            names.loc(race.second.loc),
            r.relation.name(),
            r.engine.name(),
            &window,
            &distance,
        ])
        .map_err(io::Error::from)
    })?;
    w.flush()
}

#[derive(serde::Serialize)]
pub(super) struct JsonReport<'a> {
    relation: &'a str,
    engine: &'a str,
    window: Option<u64>,
    max_distance: Option<u64>,
    events: u64,
    racy_events: Vec<EventId>,
    races: JsonRaces<'a>,
    racy_variables: Vec<std::borrow::Cow<'a, str>>,
    location_pairs: usize,
    stats: &'a Map<String, Value>,
    notes: &'a [String],
    /// With a suppressions file: how many races it dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    suppressed: Option<u64>,
}

struct JsonRaces<'a> {
    races: &'a [Race],
    witnesses: Option<&'a [Option<Vec<EventId>>]>,
    details: &'a Details,
    names: &'a Names,
}

impl serde::Serialize for JsonRaces<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.races.iter().enumerate().map(|(i, r)| {
            let mut j = JsonRace::new(r, self.names, self.details);
            j.witness = self.witnesses.map(|w| w.get(i).and_then(|x| x.as_deref()));
            j
        }))
    }
}

/// One JSON Lines row: provenance, then the race.
#[derive(serde::Serialize)]
struct JsonlRow<'a> {
    relation: &'a str,
    engine: &'a str,
    window: Option<u64>,
    max_distance: Option<u64>,
    #[serde(flatten)]
    race: JsonRace<'a>,
}

/// One race witness in JSON.
#[derive(serde::Serialize)]
struct JsonRace<'a> {
    first: EventId,
    second: EventId,
    variable: std::borrow::Cow<'a, str>,
    first_loc: &'a str,
    second_loc: &'a str,
    kind: &'static str,
    first_thread: &'a str,
    second_thread: &'a str,
    first_op: &'static str,
    second_op: &'static str,
    /// Only with `--witness`: the witness array, or null when none was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<Option<&'a [EventId]>>,
    /// Only for a recorded program's trace with call stacks: what the text
    /// report prints about the race (ThreadSanitizer's fields).
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<DetailJson<'a>>,
}

impl<'a> JsonRace<'a> {
    fn new(r: &Race, names: &'a Names, details: &'a Details) -> JsonRace<'a> {
        JsonRace {
            first: r.first.id,
            second: r.second.id,
            variable: names.var(r.variable),
            first_loc: names.loc(r.first.loc),
            second_loc: names.loc(r.second.loc),
            kind: r.kind(),
            first_thread: names.thread(r.first.thread),
            second_thread: names.thread(r.second.thread),
            first_op: r.first.op.as_str(),
            second_op: r.second.op.as_str(),
            witness: None,
            details: details.get(&(r.first.id, r.second.id)).map(DetailJson::new),
        }
    }
}
