//! Witness reorderings for reported races (`analyze --witness`) and their
//! independent check (`cprace verify`).
//!
//! For a race (e1, e2) the witness is the sync-preserving closure of the two
//! events' thread predecessors ([`closure`]), in trace order, when it holds
//! neither event: a correct reordering prefix after which both are enabled.
//! For `shb` and `syncp` every race has one (their soundness theorems; the
//! tests check it); for `hb`, `cp` and `wcp` races it is tried and may be
//! missing. [`verify`] checks a witness against the trace alone.

pub mod closure;
pub mod verify;

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::report::Report;
use crate::trace::{EventId, Trace};

pub use closure::{Closure, TraceIndex};

/// Fill `report.witnesses` (one per race) and add notes saying what was found.
pub fn attach(report: &mut Report, trace: &Trace) {
    let idx = TraceIndex::new(trace);
    let ws: Vec<Option<Vec<EventId>>> = report
        .races
        .iter()
        .map(|r| closure::witness(&idx, trace.num_locks(), r.first.id, r.second.id))
        .collect();
    let missing = ws.iter().filter(|w| w.is_none()).count();
    let total = ws.len();
    if total > 0 {
        report.notes.push(format!(
            "witnesses: {} of {total} races have a sync-preserving witness reordering (check them with `cprace verify`)",
            total - missing
        ));
    }
    if let Some(i) = ws.iter().position(|w| w.is_none()) {
        let r = &report.races[i];
        let theorem = match report.relation.as_str() {
            "hb" | "cp" | "wcp" if i == 0 => format!(
                "; it is the first race, so by the {} soundness theorem the trace has a predictable race there \
                 (through a reordering that changes the order of some lock's critical sections) or a predictable deadlock",
                report.relation.to_uppercase()
            ),
            "hb" | "cp" | "wcp" => {
                "; a race after the first one may be a consequence of an earlier race".to_string()
            }
            _ => "; this relation promises one for every race, so this is a bug in its engine"
                .to_string(),
        };
        report.notes.push(format!(
            "the first race without a witness is ({}, {}){theorem}",
            r.first.id, r.second.id
        ));
    }
    report.witnesses = Some(ws);
}

/// A witness printed compactly: runs of consecutive ids as `a-b`.
pub fn compact(w: Option<&[EventId]>) -> String {
    let Some(w) = w else {
        return "none found".into();
    };
    if w.is_empty() {
        return "[] (both events are enabled at the start)".into();
    }
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
    format!("[{}] ({} events)", parts.join(" "), w.len())
}

/// `--witness-out DIR`: one STD file per race with a witness,
/// `race-E1-E2.std`, holding the witness events then e1 and e2.
pub fn write_dir(report: &Report, trace: &Trace, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let Some(ws) = &report.witnesses else {
        return Ok(0);
    };
    let mut written = 0;
    for (r, w) in report.races.iter().zip(ws) {
        let Some(w) = w else { continue };
        let mut t = Trace {
            events: Vec::with_capacity(w.len() + 2),
            names: trace.names.clone(),
            stats: Default::default(),
        };
        t.events.extend(
            w.iter()
                .chain([&r.first.id, &r.second.id])
                .map(|&e| trace.events[e as usize]),
        );
        let path = dir.join(format!("race-{}-{}.std", r.first.id, r.second.id));
        let mut buf = Vec::new();
        crate::trace::std_format::write(&t, &mut buf)?;
        // Write to a temporary file and rename, so an existing file is only
        // replaced by a complete one.
        let tmp = dir.join(format!(".race-{}-{}.std.tmp", r.first.id, r.second.id));
        std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&buf))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .with_context(|| format!("cannot write {}", path.display()))?;
        written += 1;
    }
    Ok(written)
}
