//! SARIF 2.1.0 output, so races show up in code-scanning tools: one result per
//! location pair (as the text report), the racy access as the location and
//! the earlier one as a related location. `tests/it/sarif.rs` validates the
//! output against the published schema.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::text::{describe, groups, plural};
use super::{Access, Report};
use crate::relation::Relation;
use crate::trace::Names;

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
fn file_line(loc: &str) -> Option<(&str, u64)> {
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
        let mut related = location(
            &r.first,
            names,
            Some(describe(&r.first, names, "previous ")),
        );
        related["id"] = json!(1);
        result["relatedLocations"] = json!([related]);
        let primary = location(&r.second, names, None);
        if primary.as_object().is_some_and(|m| !m.is_empty()) {
            result["locations"] = json!([primary]);
        }
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
