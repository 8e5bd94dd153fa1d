//! The text report: one block per location pair (or per racy event with
//! `--all`), ThreadSanitizer style, then a plain-text SUMMARY.

use std::collections::BTreeSet;
use std::io::{self, Write};

use indexmap::IndexMap;
use serde_json::Value;

use super::{Access, Layout, Race, Report, Tally, printable, tsan};
use crate::trace::{EventId, Names, ThreadId};

const SEPARATOR: &str = "==================";

/// The races of one location pair: its first occurrence and what followed.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The witness of the pair's first racy event.
    pub first: Race,
    /// Racy events with this pair.
    pub count: u64,
    /// Bit set of kinds: 1 write-write, 2 write-read, 4 read-write.
    kinds: u8,
    /// Threads of either access.
    pub threads: BTreeSet<ThreadId>,
    /// Whether some race of the group is on another variable than `first`'s.
    pub other_variables: bool,
}

impl Group {
    /// The kinds seen, in a fixed order.
    pub(crate) fn kinds(&self) -> Vec<&'static str> {
        [(1, "write-write"), (2, "write-read"), (4, "read-write")]
            .into_iter()
            .filter(|(b, _)| self.kinds & b != 0)
            .map(|(_, k)| k)
            .collect()
    }
}

fn kind_bit(r: &Race) -> u8 {
    match r.kind() {
        "write-write" => 1,
        "write-read" => 2,
        _ => 4,
    }
}

/// Group the races of `report` by unordered location pair, in order of first
/// occurrence. Races whose two accesses both lack a location are grouped by
/// variable instead (a trace without locations still reads per variable).
/// Memory: one entry per group, whatever the number of races.
pub(crate) fn groups(report: &Report) -> io::Result<Vec<Group>> {
    let mut map: IndexMap<(u32, u32, u32), Group, rustc_hash::FxBuildHasher> = IndexMap::default();
    report.each_race(|r| {
        let (a, b) = r.location_pair();
        let key = if b == 0 {
            (0, 0, r.variable)
        } else {
            (a, b, u32::MAX)
        };
        let g = map.entry(key).or_insert_with(|| Group {
            first: *r,
            count: 0,
            kinds: 0,
            threads: BTreeSet::new(),
            other_variables: false,
        });
        g.count += 1;
        g.kinds |= kind_bit(r);
        g.threads.insert(r.first.thread);
        g.threads.insert(r.second.thread);
        g.other_variables |= r.variable != g.first.variable;
        Ok(())
    })?;
    Ok(map.into_values().collect())
}

/// `n thing` or `n things`.
pub(crate) fn plural(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// One side of a race, e.g. `previous write by thread T1 (event 3) at a.java:1`.
pub(crate) fn describe(a: &Access, names: &Names, prefix: &str) -> String {
    let what = match (a.op.is_atomic(), a.op.is_write()) {
        (false, true) => "write",
        (false, false) => "read",
        (true, true) => "atomic write",
        (true, false) => "atomic read",
    };
    let loc = names.loc(a.loc);
    let at = if loc.is_empty() {
        String::new()
    } else {
        format!(" at {}", printable(loc))
    };
    format!(
        "{prefix}{what} by thread {} (event {}){at}",
        printable(names.thread(a.thread)),
        a.id
    )
}

fn write_block(
    out: &mut dyn Write,
    r: &Race,
    names: &Names,
    details: &super::Details,
    group: Option<&Group>,
    witness: Option<Option<&[EventId]>>,
) -> io::Result<()> {
    let detail = details.get(&(r.first.id, r.second.id));
    writeln!(out, "{SEPARATOR}")?;
    writeln!(
        out,
        "WARNING: data race on `{}` ({})",
        printable(&names.var(r.variable)),
        r.kind()
    )?;
    match detail {
        Some(d) => tsan::write_detail(out, d)?,
        None => {
            writeln!(out, "  {}", describe(&r.second, names, ""))?;
            writeln!(out, "  {}", describe(&r.first, names, "previous "))?;
        }
    }
    if let Some(w) = witness {
        writeln!(out, "  witness: {}", compact(w))?;
        for step in detail.into_iter().flat_map(|d| &d.witness) {
            writeln!(out, "    {}", printable(step))?;
        }
    }
    if let Some(g) = group {
        let threads: Vec<String> = g
            .threads
            .iter()
            .take(8)
            .map(|&t| printable(names.thread(t)).into_owned())
            .collect();
        let more = if g.threads.len() > 8 { ", ..." } else { "" };
        let vars = if g.other_variables {
            "; also on other variables"
        } else {
            ""
        };
        writeln!(
            out,
            "  {} with these locations (first shown); kinds: {}; threads: {}{more}{vars}",
            plural(g.count, "racy event"),
            g.kinds().join(", "),
            threads.join(", ")
        )?;
    }
    if let Some(d) = detail {
        tsan::write_summary(out, d)?;
    }
    writeln!(out, "{SEPARATOR}")
}

/// The grouped (or, with `layout.all`, per-event) report and the SUMMARY.
pub(crate) fn write(
    report: &Report,
    names: &Names,
    layout: &Layout,
    out: &mut dyn Write,
) -> io::Result<()> {
    let max = layout.max_reports.unwrap_or(u64::MAX);
    let (shown, total, what) = if layout.all {
        let mut shown = 0u64;
        report.each_race(|r| {
            if shown < max {
                shown += 1;
                write_block(out, r, names, &report.details, None, report.witness_of(r))?;
            }
            Ok(())
        })?;
        (shown, report.race_count(), "racy event")
    } else {
        let groups = groups(report)?;
        for g in groups
            .iter()
            .take(usize::try_from(max).unwrap_or(usize::MAX))
        {
            write_block(
                out,
                &g.first,
                names,
                &report.details,
                Some(g),
                report.witness_of(&g.first),
            )?;
        }
        let total = groups.len() as u64;
        (total.min(max), total, "report")
    };
    if shown < total {
        let hint = if layout.all {
            ""
        } else {
            "; --all prints one report per racy event"
        };
        writeln!(
            out,
            "{} not shown (--max-reports {max}{hint})",
            plural(total - shown, &format!("more {what}"))
        )?;
    }
    write_summary(report, names, out)
}

/// The SUMMARY line and the engine counters, as plain text.
pub(crate) fn write_summary(
    report: &Report,
    _names: &Names,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "{}", summary_line(report, &report.tally()?))?;
    if let Some(line) = report.suppressed_line("race") {
        writeln!(out, "{line}")?;
    }
    for (k, v) in &report.stats {
        writeln!(out, "  {k}: {}", plain(v))?;
    }
    Ok(())
}

/// The `SUMMARY: ...` line of a report whose counts are `tally`.
pub(crate) fn summary_line(report: &Report, tally: &Tally) -> String {
    let mut window = report.window.map_or("none".to_string(), |k| k.to_string());
    if let Some(d) = report.max_distance {
        window.push_str(&format!(", max distance {d}"));
    }
    format!(
        "SUMMARY: {}, {}, {} ({} {}, window {window}, {})",
        plural(tally.racy_events, "racy event"),
        plural(tally.racy_variables, "racy variable"),
        plural(tally.location_pairs, "location pair"),
        report.relation,
        report.engine,
        plural(report.events, "event")
    )
}

/// A JSON value as plain text: `total 5, rule_a 2` for objects, numbers with
/// at most three decimals.
fn plain(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k} {}", plain(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(a) => a.iter().map(plain).collect::<Vec<_>>().join(", "),
        Value::Number(n) if n.is_f64() => {
            // Three significant digits (timings span microseconds to minutes).
            let x = n.as_f64().unwrap_or(0.0);
            let digits = if x == 0.0 || x.abs() >= 1.0 {
                3
            } else {
                (2 - x.abs().log10().floor() as i32).clamp(3, 12) as usize
            };
            let s = format!("{x:.digits$}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        Value::String(s) => printable(s).into_owned(),
        other => other.to_string(),
    }
}

/// A witness printed compactly: runs of consecutive ids as `a-b`.
pub(crate) fn compact(w: Option<&[EventId]>) -> String {
    let Some(w) = w else {
        return "none found".into();
    };
    if w.is_empty() {
        return "[] (both events are enabled at the start)".into();
    }
    let n = w.len();
    format!(
        "[{}] ({n} event{})",
        ranges(w),
        if n == 1 { "" } else { "s" }
    )
}

/// Event ids with runs of consecutive ids as `a-b`: `3-7 9`.
pub(crate) fn ranges(w: &[EventId]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < w.len() {
        let mut j = i;
        while j + 1 < w.len() && w[j + 1] == w[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            w[i].to_string()
        } else {
            format!("{}-{}", w[i], w[j])
        });
        i = j + 1;
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_json_syntax() {
        let v = serde_json::json!({"total": 0.12345, "rule_a": 2, "x": 1.5, "t": 0.000123456});
        assert_eq!(plain(&v), "total 0.123, rule_a 2, x 1.5, t 0.000123");
        assert_eq!(plural(1, "racy variable"), "1 racy variable");
        assert_eq!(plural(0, "racy variable"), "0 racy variables");
    }
}
