//! SARIF 2.1.0 output, so races show up in code-scanning tools: one result per
//! location pair (as the text report), the racy access as the location and
//! the earlier one as a related location. For a recorded program's trace
//! with call stacks a result carries ThreadSanitizer's fields too
//! ([`tsan::Detail`]): every stack as a SARIF `stack` (both accesses, the
//! allocation, the mutexes' acquires, the threads' creations), the
//! allocation, acquire and creation sites as related locations, and a
//! witness (`--witness`) as a code flow with one thread flow per thread,
//! its steps numbered across threads by `executionOrder`.
//! `tests/it/sarif.rs` validates the output against the published schema.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use super::text::{describe, groups, plural};
use super::tsan::{self, Detail, Location};
use super::{Access, Report};
use crate::relation::Relation;
use crate::trace::Names;
use crate::trace::recorded::StackEntry;

/// The rule id of races under `relation`, e.g. `race/cp`.
pub(crate) fn rule_id(relation: Relation) -> String {
    format!("race/{relation}")
}

fn rule(relation: Relation) -> Value {
    let what = match relation {
        Relation::Hb => "happens-before (Java memory model)",
        Relation::Cp => "causally-precedes (Smaragdakis, Evans, Sadowski, Yi, Flanagan; POPL 2012)",
        Relation::Wcp => "weak-causally-precedes (Kini, Mathur, Viswanathan; PLDI 2017)",
        Relation::Lockset => "Eraser's locking discipline (unsound: violations, not proven races)",
        Relation::Po => "thread order only (every conflicting cross-thread pair)",
        Relation::Shb | Relation::Syncp | Relation::Deadlock => relation.name(),
    };
    json!({
        "id": rule_id(relation),
        "name": format!("DataRace{}", relation.name().to_uppercase()),
        "shortDescription": {"text": format!("Data race predicted by {relation}")},
        "fullDescription": {"text": format!(
            "Two conflicting accesses (same variable, different threads, at least one a write) \
             that {what} leaves unordered.")},
        "defaultConfiguration": {"level": "warning"},
    })
}

/// `file:line` when `loc` reads as one (a line number after the last `:`).
pub(super) fn file_line(loc: &str) -> Option<(&str, u64)> {
    let (file, line) = loc.rsplit_once(':')?;
    let line: u64 = line.trim().parse().ok()?;
    (!file.is_empty() && line >= 1).then_some((file, line))
}

/// A relative URI reference for `file`: unreserved characters and `/` kept,
/// everything else percent-encoded (a `:` too, so no part reads as a scheme).
fn uri(file: &str) -> String {
    let mut s = String::with_capacity(file.len());
    for b in file.replace('\\', "/").bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// A SARIF location for location id `loc`: physical when its text reads as
/// `file:line`, logical (the text) otherwise, message only when not empty.
pub(super) fn site_location(names: &Names, loc: u32, message: String) -> Value {
    let loc = names.loc(loc);
    let mut v = serde_json::Map::new();
    if let Some((file, line)) = file_line(loc) {
        v.insert(
            "physicalLocation".into(),
            json!({"artifactLocation": {"uri": uri(file)}, "region": {"startLine": line}}),
        );
    } else if !loc.is_empty() {
        v.insert(
            "logicalLocations".into(),
            json!([{"name": loc, "kind": "member"}]),
        );
    }
    if !message.is_empty() {
        v.insert("message".into(), json!({"text": message}));
    }
    Value::Object(v)
}

/// A SARIF location for access `a` (see [`site_location`]).
fn location(a: &Access, names: &Names, message: Option<String>) -> Value {
    site_location(names, a.loc, message.unwrap_or_default())
}

/// A URI for a source file a stack names: `file://` and the path for an
/// absolute path, a relative reference otherwise.
fn file_uri(file: &str) -> String {
    if file.starts_with('/') {
        format!("file://{}", uri(file))
    } else {
        uri(file)
    }
}

/// A SARIF location for stack entry `f`: its file, line and column, its
/// function as a logical location.
fn frame_location(f: &StackEntry, message: Option<String>) -> Value {
    let mut v = Map::new();
    if !f.file.is_empty() {
        let mut physical = json!({"artifactLocation": {"uri": file_uri(&f.file)}});
        if f.line > 0 {
            physical["region"] = json!({"startLine": f.line});
            if f.column > 0 {
                physical["region"]["startColumn"] = json!(f.column);
            }
        }
        v.insert("physicalLocation".into(), physical);
    }
    if !f.function.is_empty() {
        v.insert(
            "logicalLocations".into(),
            json!([{"name": f.function, "kind": "function"}]),
        );
    }
    if let Some(m) = message {
        v.insert("message".into(), json!({"text": m}));
    }
    Value::Object(v)
}

/// A SARIF `stack`: `frames` innermost first, each with its location (the
/// TSan line as message), object file and offset.
fn stack(message: String, frames: &[StackEntry]) -> Value {
    let frames: Vec<Value> = frames
        .iter()
        .enumerate()
        .map(|(k, f)| {
            json!({
                "location": frame_location(f, Some(f.tsan_line(k))),
                "module": f.module,
                "properties": {"offset": f.offset, "inlined": f.inlined},
            })
        })
        .collect();
    json!({"message": {"text": message}, "frames": frames})
}

/// Every stack of a race's details, as the text report prints them: the
/// racy access, the previous one, the allocation (and free), the mutexes'
/// acquires, the threads' creations.
fn stacks(d: &Detail) -> Vec<Value> {
    let mut out = vec![
        stack(
            tsan::access_header(&d.accesses[0], false),
            &d.accesses[0].frames,
        ),
        stack(
            tsan::access_header(&d.accesses[1], true),
            &d.accesses[1].frames,
        ),
    ];
    if let Some(l @ Location::Heap { frames, freed, .. }) = &d.location {
        out.push(stack(tsan::location_header(l), frames));
        if let Some((thread, frames)) = freed {
            out.push(stack(tsan::freed_header(thread), frames));
        }
    }
    for m in &d.mutexes {
        out.push(stack(tsan::mutex_header(m), &m.frames));
    }
    for t in &d.threads {
        if !t.frames.is_empty() {
            out.push(stack(tsan::thread_header(t), &t.frames));
        }
    }
    out
}

/// The sites of a race's details beyond the accesses, as related
/// locations: where the memory is (the allocation's innermost frame, a
/// global by name), where it was freed, each mutex's acquire and each
/// thread's creation.
fn detail_sites(d: &Detail) -> Vec<Value> {
    let site = |frames: &[StackEntry], message: String| match frames.first() {
        Some(f) => frame_location(f, Some(message)),
        None => json!({"message": {"text": message}}),
    };
    let mut out = Vec::new();
    match &d.location {
        Some(l @ Location::Heap { frames, freed, .. }) => {
            out.push(site(frames, tsan::location_header(l)));
            if let Some((thread, frames)) = freed {
                out.push(site(frames, tsan::freed_header(thread)));
            }
        }
        Some(l @ Location::Global { name, .. }) => out.push(json!({
            "logicalLocations": [{"name": name, "kind": "variable"}],
            "message": {"text": tsan::location_header(l)},
        })),
        Some(l) => out.push(json!({"message": {"text": tsan::location_header(l)}})),
        None => {}
    }
    for m in &d.mutexes {
        out.push(site(&m.frames, tsan::mutex_header(m)));
    }
    for t in &d.threads {
        out.push(site(&t.frames, tsan::thread_header(t)));
    }
    out
}

/// A witness as a SARIF code flow: one thread flow per thread, in order of
/// first appearance, holding its runs (each at the run's last event) and
/// finally the racy access; `executionOrder` numbers the steps across
/// threads from 1, the two accesses last (both enabled, either may run
/// first), marked essential and with their stacks.
fn code_flow(d: &Detail, names: &Names) -> Option<Value> {
    if d.witness_runs.is_empty() {
        return None;
    }
    let n = d.witness_runs.len();
    let mut flows: indexmap::IndexMap<&str, (&str, Vec<Value>)> = indexmap::IndexMap::new();
    for (k, run) in d.witness_runs.iter().enumerate() {
        let location = match &run.top {
            Some(f) => frame_location(f, Some(run.text.clone())),
            None => site_location(names, run.loc, run.text.clone()),
        };
        let mut step = json!({"location": location, "executionOrder": k + 1});
        if k + 2 >= n {
            // The accesses: the earlier (accesses[1]), then the racy one.
            let a = &d.accesses[n - 1 - k];
            step["importance"] = json!("essential");
            step["stack"] = stack(tsan::access_header(a, k + 2 == n), &a.frames);
        }
        flows
            .entry(&run.thread_id)
            .or_insert((&run.thread, Vec::new()))
            .1
            .push(step);
    }
    let thread_flows: Vec<Value> = flows
        .into_iter()
        .map(|(id, (who, locations))| {
            json!({"id": id, "message": {"text": who}, "locations": locations})
        })
        .collect();
    Some(json!({
        "message": {"text": "A correct reordering of the observed run (a witness) after which \
            both accesses are enabled: the threads' steps in executionOrder, then the two \
            accesses, either of which may run first."},
        "threadFlows": thread_flows,
    }))
}

/// The SARIF log of `report`.
pub(crate) fn to_sarif(report: &Report, names: &Names) -> io::Result<Value> {
    let mut results = Vec::new();
    for g in groups(report)? {
        let r = &g.first;
        let text = format!(
            "Data race on `{}` ({}): {}; {}. {} with these locations (kinds: {}).",
            names.var(r.variable),
            r.kind(),
            describe(&r.second, names, ""),
            describe(&r.first, names, "previous "),
            plural(g.count, "racy event"),
            g.kinds().join(", ")
        );
        let mut result = json!({
            "ruleId": rule_id(report.relation),
            "level": "warning",
            "message": {"text": text},
        });
        let detail = report.details.get(&(r.first.id, r.second.id));
        // A recorded access's innermost frame names its file and function.
        let top = |slot: usize| detail.and_then(|d| d.accesses[slot].frames.first());
        let previous = describe(&r.first, names, "previous ");
        let mut related = match top(1) {
            Some(f) => frame_location(f, Some(previous)),
            None => location(&r.first, names, Some(previous)),
        };
        related["id"] = json!(1);
        let mut related = vec![related];
        let primary = match top(0) {
            Some(f) => frame_location(f, None),
            None => location(&r.second, names, None),
        };
        if primary.as_object().is_some_and(|m| !m.is_empty()) {
            result["locations"] = json!([primary]);
        }
        if let Some(d) = detail {
            related.extend(detail_sites(d));
            for (i, l) in related.iter_mut().enumerate() {
                l["id"] = json!(i + 1);
            }
            result["stacks"] = json!(stacks(d));
            if let Some(flow) = code_flow(d, names) {
                result["codeFlows"] = json!([flow]);
            }
        }
        result["relatedLocations"] = json!(related);
        result["properties"] = json!({
            "variable": names.var(r.variable),
            "first": r.first.id,
            "second": r.second.id,
            "firstThread": names.thread(r.first.thread),
            "secondThread": names.thread(r.second.thread),
            "racyEvents": g.count,
            "kinds": g.kinds(),
            "threads": g.threads.iter().map(|&t| names.thread(t)).collect::<Vec<_>>(),
        });
        if let Some((at, function)) = detail.and_then(|d| d.accesses[0].top.as_ref()) {
            result["properties"]["summary"] = json!(format!("data race {at} in {function}"));
        }
        results.push(result);
    }
    Ok(json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cprace",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": [rule(report.relation)],
            }},
            "results": results,
            "properties": {
                "relation": report.relation.name(),
                "engine": report.engine.name(),
                "window": report.window,
                "max_distance": report.max_distance,
                "events": report.events,
                "notes": report.notes,
            },
        }],
    }))
}

/// Write the SARIF log of `report`.
pub(crate) fn write(report: &Report, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_sarif(report, names)?)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_read_as_file_and_line_only_when_they_are() {
        assert_eq!(file_line("a/F.java:7"), Some(("a/F.java", 7)));
        assert_eq!(file_line("C:\\x\\F.java:12"), Some(("C:\\x\\F.java", 12)));
        assert_eq!(file_line("F.java"), None);
        assert_eq!(file_line("F.java:0"), None);
        assert_eq!(file_line(":3"), None);
        assert_eq!(uri("a b/F.java"), "a%20b/F.java");
        assert_eq!(uri("C:\\x"), "C%3A/x");
    }
}
