//! Dumps of a derived relation: its base edges, then its pairs among
//! synchronization events, streamed as CSV or JSON.

use std::io::{self, Write};

use super::{QueryEngine, is_sync_event};
use crate::trace::{EventId, Trace};

/// Receives a dump.
pub trait DumpSink {
    /// A base edge `from -> to` and the rule that produced it.
    fn base_edge(&mut self, from: EventId, to: EventId, rule: &str) -> io::Result<()>;
    /// A derived pair: `from` is ordered before `to`.
    fn pair(&mut self, from: EventId, to: EventId) -> io::Result<()>;
}

/// Output formats of the dumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// One CSV table.
    Csv,
    /// One JSON object.
    Json,
}

/// Dump `engine`'s relation to `out`, streaming.
pub fn write_dump(
    trace: &Trace,
    engine: &dyn QueryEngine,
    format: DumpFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        DumpFormat::Csv => {
            let mut sink = CsvDump {
                trace,
                relation: engine.relation().name(),
                w: csv::Writer::from_writer(out),
            };
            sink.w.write_record(CSV_COLUMNS)?;
            engine.dump(&mut sink)?;
            sink.w.flush()
        }
        DumpFormat::Json => {
            write!(
                out,
                "{{\"relation\":\"{}\",\"window\":{},\"events\":{},\"sync_events\":{}",
                engine.relation(),
                engine
                    .window()
                    .map_or("null".to_string(), |k| k.to_string()),
                trace.len(),
                engine.sync_events()
            )?;
            let mut sink = JsonDump {
                trace,
                out,
                state: if engine.has_base_edges() {
                    JsonState::Start
                } else {
                    JsonState::NoBase
                },
            };
            if sink.state == JsonState::Start {
                sink.out.write_all(b",\n\"base_edges\":[")?;
                sink.state = JsonState::Base(true);
            }
            engine.dump(&mut sink)?;
            sink.open_pairs()?;
            sink.out.write_all(b"\n]}\n")
        }
    }
}

/// Columns of the CSV dump.
pub const CSV_COLUMNS: [&str; 13] = [
    "relation",
    "kind",
    "rule",
    "from",
    "to",
    "from_thread",
    "from_op",
    "from_target",
    "from_loc",
    "to_thread",
    "to_op",
    "to_target",
    "to_loc",
];

struct CsvDump<'a, W: Write> {
    trace: &'a Trace,
    relation: &'static str,
    w: csv::Writer<W>,
}

impl<W: Write> CsvDump<'_, W> {
    fn row(&mut self, kind: &str, rule: &str, from: EventId, to: EventId) -> io::Result<()> {
        let (f, t) = (
            self.trace.events[from as usize],
            self.trace.events[to as usize],
        );
        let n = &self.trace.names;
        self.w.write_record([
            self.relation,
            kind,
            rule,
            &from.to_string(),
            &to.to_string(),
            n.thread(f.thread),
            f.op.as_str(),
            &n.target(&f),
            n.loc(f.loc),
            n.thread(t.thread),
            t.op.as_str(),
            &n.target(&t),
            n.loc(t.loc),
        ])?;
        Ok(())
    }
}

impl<W: Write> DumpSink for CsvDump<'_, W> {
    fn base_edge(&mut self, from: EventId, to: EventId, rule: &str) -> io::Result<()> {
        self.row("base", rule, from, to)
    }
    fn pair(&mut self, from: EventId, to: EventId) -> io::Result<()> {
        self.row("pair", "", from, to)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum JsonState {
    /// Before anything; the relation has base edges.
    Start,
    /// The relation has no base edges and no pair was written yet.
    NoBase,
    /// Inside `base_edges`; true while it is empty.
    Base(bool),
    /// Inside `pairs`; true while it is empty.
    Pairs(bool),
}

struct JsonDump<'a, 'w> {
    trace: &'a Trace,
    out: &'w mut dyn Write,
    state: JsonState,
}

/// One JSON row of a dump.
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    from: EventId,
    to: EventId,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    from_thread: &'a str,
    from_op: &'a str,
    from_target: std::borrow::Cow<'a, str>,
    from_loc: &'a str,
    to_thread: &'a str,
    to_op: &'a str,
    to_target: std::borrow::Cow<'a, str>,
    to_loc: &'a str,
}

impl JsonDump<'_, '_> {
    fn open_pairs(&mut self) -> io::Result<()> {
        match self.state {
            JsonState::Pairs(_) => return Ok(()),
            JsonState::Base(_) => self.out.write_all(b"\n],\n\"pairs\":[")?,
            JsonState::Start | JsonState::NoBase => self.out.write_all(b",\n\"pairs\":[")?,
        }
        self.state = JsonState::Pairs(true);
        Ok(())
    }

    fn row(&mut self, from: EventId, to: EventId, rule: Option<&str>) -> io::Result<()> {
        let first = match &mut self.state {
            JsonState::Base(first) | JsonState::Pairs(first) => std::mem::replace(first, false),
            _ => true,
        };
        self.out.write_all(if first { b"\n" } else { b",\n" })?;
        let (f, t) = (
            self.trace.events[from as usize],
            self.trace.events[to as usize],
        );
        let n = &self.trace.names;
        let row = JsonRow {
            from,
            to,
            rule,
            from_thread: n.thread(f.thread),
            from_op: f.op.as_str(),
            from_target: n.target(&f),
            from_loc: n.loc(f.loc),
            to_thread: n.thread(t.thread),
            to_op: t.op.as_str(),
            to_target: n.target(&t),
            to_loc: n.loc(t.loc),
        };
        serde_json::to_writer(&mut *self.out, &row).map_err(io::Error::other)
    }
}

impl DumpSink for JsonDump<'_, '_> {
    fn base_edge(&mut self, from: EventId, to: EventId, rule: &str) -> io::Result<()> {
        if !matches!(self.state, JsonState::Base(_)) {
            return Err(io::Error::other("base edges must precede pairs"));
        }
        self.row(from, to, Some(rule))
    }
    fn pair(&mut self, from: EventId, to: EventId) -> io::Result<()> {
        self.open_pairs()?;
        self.row(from, to, None)
    }
}

/// Enumerate, sorted by `(from, to)`, the pairs `(x, y)` of synchronization
/// events with `x` before `y`, less than `window` apart, and
/// `clock(y)[thread(x)] >= local(x)`, where `clocks` holds one clock per sync
/// slot that never decreases along a thread. This
/// is how HB and CP pairs come out of their vector clocks.
pub(crate) fn clock_pairs(
    trace: &Trace,
    sync: &crate::engine::sync::SyncPoints,
    clocks: &[crate::engine::clock::VectorClock],
    window: Option<u64>,
    mut emit: impl FnMut(EventId, EventId) -> io::Result<()>,
) -> io::Result<()> {
    let nt = sync.nthreads;
    let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); nt];
    for s in 0..sync.len() {
        if is_sync_event(trace.events[sync.event(s as u32) as usize].op) {
            per_thread[sync.thread[s] as usize].push(s as u32);
        }
    }
    let mut ys: Vec<EventId> = Vec::new();
    for x in 0..sync.len() as u32 {
        let ex = sync.event(x);
        if !is_sync_event(trace.events[ex as usize].op) {
            continue;
        }
        let (tx, lx) = (sync.thread[x as usize] as usize, sync.local[x as usize]);
        ys.clear();
        for list in &per_thread {
            let lo = list.partition_point(|&y| sync.event(y) <= ex);
            let hi = match window {
                Some(k) => list
                    .partition_point(|&y| (sync.event(y) as u64) < (ex as u64).saturating_add(k)),
                None => list.len(),
            };
            if lo >= hi {
                continue;
            }
            let from =
                lo + list[lo..hi].partition_point(|&y| clocks[y as usize].get(tx as u32) < lx);
            ys.extend(list[from..hi].iter().map(|&y| sync.event(y)));
        }
        ys.sort_unstable();
        for &y in &ys {
            emit(ex, y)?;
        }
    }
    Ok(())
}
