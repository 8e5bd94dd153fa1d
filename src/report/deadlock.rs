//! Deadlock findings and how they print: ThreadSanitizer's lock-order
//! inversion layout for text, one object (or row) per deadlock for JSON,
//! JSON Lines and CSV, one SARIF result per deadlock.
//!
//! A deadlock is a cycle of links. Link `i`'s thread requests lock
//! `locks[i]` (its next event), which the holder of link `i + 1` holds; the
//! holder of a link is its requesting thread itself, or a thread that holds
//! the lock while it waits to join the requesting thread (through a chain of
//! joins: [`Holder::joins`]).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::text::plural;
use super::{Report, printable};
use crate::trace::{EventId, Names, ThreadId};

/// What kind of deadlock report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeadlockKind {
    /// It happened: the trace ends with the threads of the cycle blocked in
    /// their `req` events.
    Actual,
    /// A sync-preserving deadlock: a correct reordering of a prefix of the
    /// trace (its witness) reaches it.
    Predicted,
    /// A cycle in the lock-order graph (a potential deadlock).
    Inversion,
}

impl DeadlockKind {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadlockKind::Actual => "actual",
            DeadlockKind::Predicted => "predicted",
            DeadlockKind::Inversion => "inversion",
        }
    }
}

/// An event a report points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    /// Event id.
    pub id: EventId,
    /// Its thread.
    pub thread: ThreadId,
    /// Its location id.
    pub loc: u32,
}

/// Who holds the lock a link's thread is waited for with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holding thread.
    pub thread: ThreadId,
    /// The lock it holds (the previous link's requested lock).
    pub lock: u32,
    /// Where it acquired that lock.
    pub acquire: Site,
    /// The joins the holder (first) and the threads after it wait in, down
    /// to the requesting thread; empty when the holder is the requesting
    /// thread.
    pub joins: Vec<Site>,
}

/// One link of a deadlock cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockLink {
    /// The requesting thread.
    pub thread: ThreadId,
    /// The lock it requests.
    pub lock: u32,
    /// The request: an acquire, or a blocked request (`req`).
    pub request: Site,
    /// Who holds the previous link's lock.
    pub holder: Holder,
}

/// One deadlock report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// Actual, predicted or a lock-order inversion.
    pub kind: DeadlockKind,
    /// The cycle, link `i` requesting what link `i + 1`'s holder holds.
    pub links: Vec<DeadlockLink>,
    /// With `--witness`: a correct reordering prefix (event ids) after which
    /// the cycle's threads are blocked. None otherwise (and for inversions).
    pub witness: Option<Vec<EventId>>,
    /// `--all` only: why the default filters drop this inversion.
    pub filtered: Option<String>,
    /// For a recorded program's trace that carries call stacks: the frames
    /// of each event the report names (requests, acquires, joins),
    /// innermost first, as ThreadSanitizer prints them.
    pub stacks: BTreeMap<EventId, Vec<String>>,
}

impl Deadlock {
    /// Every thread of the cycle (requesting threads and the threads waiting
    /// in joins), in link order, each once.
    pub fn threads(&self) -> Vec<ThreadId> {
        let mut v: Vec<ThreadId> = Vec::new();
        for l in &self.links {
            for t in l.holder.joins.iter().map(|j| j.thread).chain([l.thread]) {
                if !v.contains(&t) {
                    v.push(t);
                }
            }
        }
        v
    }

    /// The requested locks, in link order.
    pub fn locks(&self) -> Vec<u32> {
        self.links.iter().map(|l| l.lock).collect()
    }

    /// The requests' event ids, in link order.
    pub fn events(&self) -> Vec<EventId> {
        self.links.iter().map(|l| l.request.id).collect()
    }

    /// Every event the report names: requests, the acquires held, joins.
    pub fn sites(&self) -> Vec<EventId> {
        let mut v = Vec::new();
        for l in &self.links {
            v.push(l.request.id);
            v.push(l.holder.acquire.id);
            v.extend(l.holder.joins.iter().map(|j| j.id));
        }
        v
    }

    /// Rotate the cycle to start at its earliest request.
    pub(crate) fn start_at_earliest(&mut self) {
        if let Some(i) = (0..self.links.len()).min_by_key(|&i| self.links[i].request.id) {
            self.links.rotate_left(i);
        }
    }

    /// The cycle of locks as the lock-order graph has it: each link's held
    /// lock, then its requested lock, and so on around.
    pub fn lock_cycle(&self) -> Vec<u32> {
        self.links.iter().map(|l| l.holder.lock).collect()
    }
}

const SEPARATOR: &str = "==================";

fn at(names: &Names, s: &Site) -> String {
    let loc = names.loc(s.loc);
    if loc.is_empty() {
        format!("event {}", s.id)
    } else {
        format!("event {} at {}", s.id, printable(loc))
    }
}

fn lock(names: &Names, l: u32) -> String {
    format!("`{}`", printable(names.lock(l)))
}

fn thread(names: &Names, t: ThreadId) -> String {
    printable(names.thread(t)).into_owned()
}

/// The headline of a deadlock's text block.
fn headline(d: &Deadlock) -> String {
    let n = d.links.len() as u64;
    match d.kind {
        DeadlockKind::Actual => format!(
            "deadlock: the trace ends with {} blocked in a cycle",
            plural(d.threads().len() as u64, "thread")
        ),
        DeadlockKind::Predicted => format!(
            "predicted deadlock (sync-preserving; {}, {})",
            plural(d.threads().len() as u64, "thread"),
            plural(n, "lock")
        ),
        DeadlockKind::Inversion => "lock-order inversion (potential deadlock)".into(),
    }
}

/// A site's line, then its call stack when the trace has one.
fn write_site(d: &Deadlock, names: &Names, s: &Site, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "    {}", at(names, s))?;
    for f in d.stacks.get(&s.id).into_iter().flatten() {
        writeln!(out, "      {}", printable(f))?;
    }
    Ok(())
}

/// One text block, in ThreadSanitizer's lock-order-inversion layout.
fn write_block(d: &Deadlock, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{SEPARATOR}")?;
    writeln!(out, "WARNING: {}", headline(d))?;
    let cycle: Vec<String> = d
        .lock_cycle()
        .iter()
        .chain(d.lock_cycle().first())
        .map(|&l| lock(names, l))
        .collect();
    writeln!(out, "  Cycle in lock order graph: {}", cycle.join(" => "))?;
    for l in &d.links {
        writeln!(out)?;
        let verb = match d.kind {
            DeadlockKind::Actual => "requested (and never granted)",
            DeadlockKind::Predicted => "requested",
            DeadlockKind::Inversion => "acquired",
        };
        let h = &l.holder;
        if h.joins.is_empty() {
            writeln!(
                out,
                "  Lock {} {verb} here while holding lock {} in thread {}:",
                lock(names, l.lock),
                lock(names, h.lock),
                thread(names, l.thread)
            )?;
            write_site(d, names, &l.request, out)?;
            writeln!(
                out,
                "  Lock {} previously acquired by the same thread here:",
                lock(names, h.lock)
            )?;
            write_site(d, names, &h.acquire, out)?;
        } else {
            writeln!(
                out,
                "  Lock {} {verb} here in thread {}:",
                lock(names, l.lock),
                thread(names, l.thread)
            )?;
            write_site(d, names, &l.request, out)?;
            writeln!(
                out,
                "  while thread {} holds lock {}, acquired here:",
                thread(names, h.thread),
                lock(names, h.lock)
            )?;
            write_site(d, names, &h.acquire, out)?;
            for j in &h.joins {
                writeln!(
                    out,
                    "  and thread {} waits to join here:",
                    thread(names, j.thread)
                )?;
                write_site(d, names, j, out)?;
            }
        }
    }
    if let Some(why) = &d.filtered {
        writeln!(out)?;
        writeln!(out, "  Not a deadlock in any reordering: {why}.")?;
    }
    if let Some(w) = &d.witness {
        writeln!(out)?;
        writeln!(out, "  Witness: {}", crate::report::text::compact(Some(w)))?;
    }
    writeln!(out, "{SEPARATOR}")
}

/// How many deadlocks of each kind, as the SUMMARY says it.
fn summary_line(r: &Report) -> String {
    let count = |k| r.deadlocks.iter().filter(|d| d.kind == k).count() as u64;
    format!(
        "SUMMARY: {}, {}, {} ({})",
        plural(count(DeadlockKind::Actual), "actual deadlock"),
        plural(count(DeadlockKind::Predicted), "predicted deadlock"),
        plural(count(DeadlockKind::Inversion), "lock-order inversion"),
        plural(r.events, "event")
    )
}

/// The text report: one block per deadlock, then the SUMMARY and counters.
pub(crate) fn write_text(r: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    for d in &r.deadlocks {
        write_block(d, names, out)?;
    }
    write_summary(r, out)
}

/// The SUMMARY line and the counters only.
pub(crate) fn write_summary(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", summary_line(r))?;
    if let Some(line) = r.suppressed_line("deadlock") {
        writeln!(out, "{line}")?;
    }
    for (k, v) in &r.stats {
        writeln!(out, "  {k}: {v}")?;
    }
    Ok(())
}

fn site_json(d: &Deadlock, names: &Names, s: &Site) -> Value {
    let mut v = json!({"thread": names.thread(s.thread), "event": s.id, "loc": names.loc(s.loc)});
    if let Some(f) = d.stacks.get(&s.id) {
        v["stack"] = json!(f);
    }
    v
}

/// One deadlock as the JSON object of the output contract.
pub fn to_json(d: &Deadlock, names: &Names) -> Value {
    let links: Vec<Value> = d
        .links
        .iter()
        .map(|l| {
            let mut link = json!({
                "thread": names.thread(l.thread),
                "lock": names.lock(l.lock),
                "event": l.request.id,
                "loc": names.loc(l.request.loc),
                "holder": {
                    "thread": names.thread(l.holder.thread),
                    "lock": names.lock(l.holder.lock),
                    "acquire": l.holder.acquire.id,
                    "loc": names.loc(l.holder.acquire.loc),
                    "joins": l.holder.joins.iter().map(|j| site_json(d, names, j)).collect::<Vec<_>>(),
                },
            });
            if let Some(f) = d.stacks.get(&l.request.id) {
                link["stack"] = json!(f);
            }
            if let Some(f) = d.stacks.get(&l.holder.acquire.id) {
                link["holder"]["stack"] = json!(f);
            }
            link
        })
        .collect();
    let mut v = json!({
        "kind": d.kind.as_str(),
        "threads": d.threads().iter().map(|&t| names.thread(t)).collect::<Vec<_>>(),
        "locks": d.locks().iter().map(|&l| names.lock(l)).collect::<Vec<_>>(),
        "events": d.events(),
        "witness": d.witness,
        "links": links,
    });
    if let Some(why) = &d.filtered {
        v["filtered"] = json!(why);
    }
    v
}

/// The whole report as one JSON document.
pub(crate) fn report_json(r: &Report, names: &Names) -> Value {
    let count = |k| r.deadlocks.iter().filter(|d| d.kind == k).count();
    let mut v = json!({
        "relation": r.relation.name(),
        "engine": r.engine.name(),
        "window": r.window,
        "events": r.events,
        "actual": count(DeadlockKind::Actual),
        "predicted": count(DeadlockKind::Predicted),
        "inversions": count(DeadlockKind::Inversion),
        "deadlocks": r.deadlocks.iter().map(|d| to_json(d, names)).collect::<Vec<_>>(),
        "stats": r.stats,
        "notes": r.notes,
    });
    if r.suppressed.is_some() {
        v["suppressed"] = json!(r.suppressed_count());
    }
    v
}

/// CSV columns, one row per deadlock (lists separated by spaces).
pub const CSV_HEADER: [&str; 10] = [
    "kind",
    "threads",
    "locks",
    "events",
    "locations",
    "held_acquires",
    "held_locations",
    "joins",
    "witness",
    "filtered",
];

fn write_csv(r: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_HEADER)?;
    let join = |v: Vec<String>| v.join(" ");
    for d in &r.deadlocks {
        let ls = &d.links;
        w.write_record([
            d.kind.as_str().to_string(),
            join(
                d.threads()
                    .iter()
                    .map(|&t| names.thread(t).to_string())
                    .collect(),
            ),
            join(
                d.locks()
                    .iter()
                    .map(|&l| names.lock(l).to_string())
                    .collect(),
            ),
            join(d.events().iter().map(|e| e.to_string()).collect()),
            join(
                ls.iter()
                    .map(|l| names.loc(l.request.loc).to_string())
                    .collect(),
            ),
            join(ls.iter().map(|l| l.holder.acquire.id.to_string()).collect()),
            join(
                ls.iter()
                    .map(|l| names.loc(l.holder.acquire.loc).to_string())
                    .collect(),
            ),
            join(
                ls.iter()
                    .flat_map(|l| &l.holder.joins)
                    .map(|j| j.id.to_string())
                    .collect(),
            ),
            d.witness.as_ref().map_or(String::new(), |w| {
                join(w.iter().map(|e| e.to_string()).collect())
            }),
            d.filtered.clone().unwrap_or_default(),
        ])
        .map_err(io::Error::from)?;
    }
    w.flush()
}

/// The SARIF log: one result per deadlock, rule `deadlock/KIND`, the first
/// request as location, the other requests and the held acquires related.
fn to_sarif(r: &Report, names: &Names) -> Value {
    let rule = |k: DeadlockKind| {
        let (name, text) = match k {
            DeadlockKind::Actual => (
                "Deadlock",
                "The trace ends with threads blocked in a cycle, each requesting a lock another holds.",
            ),
            DeadlockKind::Predicted => (
                "PredictedDeadlock",
                "A correct reordering of the observed execution that keeps every lock's critical sections in order reaches a deadlock (sync-preserving deadlock prediction).",
            ),
            DeadlockKind::Inversion => (
                "LockOrderInversion",
                "A cycle in the lock-order graph: a potential deadlock, as ThreadSanitizer reports it.",
            ),
        };
        json!({
            "id": format!("deadlock/{}", k.as_str()),
            "name": name,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": if k == DeadlockKind::Inversion { "warning" } else { "error" }},
        })
    };
    let mut results = Vec::new();
    for d in &r.deadlocks {
        let mut related = Vec::new();
        for (i, l) in d.links.iter().enumerate() {
            if i > 0 {
                related.push(super::sarif::site_location(
                    names,
                    l.request.loc,
                    format!(
                        "thread {} requests lock {}",
                        thread(names, l.thread),
                        lock(names, l.lock)
                    ),
                ));
            }
            related.push(super::sarif::site_location(
                names,
                l.holder.acquire.loc,
                format!(
                    "thread {} acquired lock {}",
                    thread(names, l.holder.thread),
                    lock(names, l.holder.lock)
                ),
            ));
        }
        for (i, x) in related.iter_mut().enumerate() {
            x["id"] = json!(i + 1);
        }
        let first = &d.links[0];
        let mut result = json!({
            "ruleId": format!("deadlock/{}", d.kind.as_str()),
            "level": if d.kind == DeadlockKind::Inversion { "warning" } else { "error" },
            "message": {"text": format!(
                "{}: threads {} requesting locks {}.",
                headline(d),
                d.threads().iter().map(|&t| thread(names, t)).collect::<Vec<_>>().join(", "),
                d.locks().iter().map(|&l| lock(names, l)).collect::<Vec<_>>().join(", ")
            )},
            "relatedLocations": related,
            "properties": to_json(d, names),
        });
        let primary = super::sarif::site_location(names, first.request.loc, String::new());
        if primary.get("physicalLocation").is_some() || primary.get("logicalLocations").is_some() {
            let mut p = primary;
            if let Some(m) = p.as_object_mut() {
                m.remove("message");
            }
            result["locations"] = json!([p]);
        }
        results.push(result);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cprace",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": [
                    rule(DeadlockKind::Actual),
                    rule(DeadlockKind::Predicted),
                    rule(DeadlockKind::Inversion),
                ],
            }},
            "results": results,
            "properties": {
                "relation": r.relation.name(),
                "engine": r.engine.name(),
                "window": r.window,
                "events": r.events,
                "notes": r.notes,
            },
        }],
    })
}

/// Print a deadlock report in `format`.
pub fn write(
    r: &Report,
    names: &Names,
    format: super::OutputFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    use super::OutputFormat as F;
    match format {
        F::Text => write_text(r, names, out),
        F::Summary => write_summary(r, out),
        F::Json => {
            serde_json::to_writer_pretty(&mut *out, &report_json(r, names))?;
            writeln!(out)
        }
        F::Jsonl => {
            for d in &r.deadlocks {
                serde_json::to_writer(&mut *out, &to_json(d, names))?;
                writeln!(out)?;
            }
            Ok(())
        }
        F::Csv => write_csv(r, names, out),
        F::Sarif => {
            serde_json::to_writer_pretty(&mut *out, &to_sarif(r, names))?;
            writeln!(out)
        }
        F::Html => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the HTML report is written for races, not deadlocks",
        )),
    }
}
