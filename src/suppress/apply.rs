//! Suppressions applied to a report: the races (or deadlocks) a rule
//! matches are dropped, and the report says how many each rule dropped
//! ([`Report::suppressed`]).
//!
//! A race of a recorded program's trace with call stacks is matched as TSan
//! matches a race report (tsan_rtl_report.cpp's `OutputReport`), each string
//! against the rules of one type, the first rule in the file's order that
//! matches being credited:
//! 1. `called_from_lib:` against the object file (module path) of each
//!    access's innermost frame. TSan ignores the accesses its interceptors
//!    (memcpy, memset, strlen, ...) make for calls from a matching library,
//!    so such a race never reaches its report; cprace's trace does not say
//!    whether an access came from an interceptor or from instrumented code,
//!    so it drops every race one of whose accesses was made with the
//!    library's code innermost: the same for a library built without
//!    `-fsanitize=thread` (what the rule is for), more for an instrumented
//!    one. TSan also ignores such calls' synchronization; cprace keeps it.
//! 2. `race:` against every frame of each access's stack (later access
//!    first): its function, file and module; then `race_top:` against the
//!    top frame of that stack alone.
//! 3. The same against the creation stack of each thread of the race (TSan
//!    lists those threads in the report and matches their stacks with the
//!    report's type).
//! 4. `race:` against the racy global's name and module.
//!
//! `thread:`, `mutex:` and `signal:` rules match TSan's thread-leak,
//! mutex-misuse and signal reports, which cprace does not make: they never
//! match here (never an error, so a TSan file works unchanged).
//!
//! A trace without stacks (STD, CSV, RAPID, generated, or standard input)
//! gives only names: `race:` and `race_top:` match each access's location
//! text (`file:line` as the trace has it), `race:` the variable's name too.
//!
//! A deadlock report (`deadlock:`) is matched against every frame of the
//! stacks of the events it names (requests, acquisitions, joins) and the
//! creation stacks of its threads; without stacks against those events'
//! locations and the locks' names.

use std::io;

use crate::report::{Deadlock, Race, Report};
use crate::trace::recorded::{Frame, VarKind};
use crate::trace::{EventId, Names, Recording, ThreadId};

use super::{Kind, Suppressions};

/// Frames matched per stack.
const DEPTH: usize = crate::record::DEFAULT_STACK_DEPTH as usize;

/// Drop the races of `report` a rule matches and record the counts;
/// `rec` is what a recorded program's trace carries (with every event's
/// stack), None for a trace without stacks.
pub fn races(
    report: &mut Report,
    names: &Names,
    rec: Option<&Recording>,
    supp: &Suppressions,
) -> io::Result<()> {
    let mut counts = vec![0u64; supp.rules.len()];
    if supp.has(Kind::Race) || supp.has(Kind::RaceTop) || supp.has(Kind::CalledFromLib) {
        report.retain_races(|r| match race_rule(r, names, rec, supp) {
            Some(i) => {
                counts[i] += 1;
                false
            }
            None => true,
        })?;
    }
    report.suppressed = Some(fired(supp, &counts));
    Ok(())
}

/// Drop the deadlocks of `report` a `deadlock:` rule matches and record the
/// counts (`rec` as for [`races`]).
pub fn deadlocks(report: &mut Report, names: &Names, rec: Option<&Recording>, supp: &Suppressions) {
    let mut counts = vec![0u64; supp.rules.len()];
    if supp.has(Kind::Deadlock) {
        report
            .deadlocks
            .retain(|d| match deadlock_rule(d, names, rec, supp) {
                Some(i) => {
                    counts[i] += 1;
                    false
                }
                None => true,
            });
    }
    report.suppressed = Some(fired(supp, &counts));
}

/// The rules that fired, as written, with their counts, in the file's order.
fn fired(supp: &Suppressions, counts: &[u64]) -> Vec<(String, u64)> {
    supp.rules
        .iter()
        .zip(counts)
        .filter(|&(_, &n)| n > 0)
        .map(|(r, &n)| (r.text(), n))
        .collect()
}

/// The frames of stack `s` TSan would print: the runtime's own left out,
/// nothing below `main`.
fn frames(rec: &Recording, s: u32) -> Vec<&Frame> {
    let mut out = Vec::new();
    for f in rec.stack_frames(s, DEPTH) {
        let module = f.module.rsplit('/').next().unwrap_or(&f.module);
        if module.starts_with("libcprace_rt") {
            continue;
        }
        out.push(f);
        if f.lines.iter().any(|l| l.function == "main") {
            break;
        }
    }
    out
}

/// The first rule of `kind` matching any frame of `stack` (function, file,
/// then module, innermost first), then for races `race_top:` on its top.
fn match_stack(supp: &Suppressions, kind: Kind, stack: &[&Frame]) -> Option<usize> {
    let frame = |kind: Kind, f: &Frame| {
        f.lines
            .iter()
            .find_map(|l| {
                supp.find(kind, &l.function)
                    .or_else(|| supp.find(kind, &l.file))
            })
            .or_else(|| supp.find(kind, &f.module))
    };
    stack
        .iter()
        .find_map(|f| frame(kind, f))
        .or_else(|| match (kind, stack.first()) {
            (Kind::Race, Some(top)) => {
                let l = top.lines.first();
                l.and_then(|l| {
                    supp.find(Kind::RaceTop, &l.function)
                        .or_else(|| supp.find(Kind::RaceTop, &l.file))
                })
                .or_else(|| supp.find(Kind::RaceTop, &top.module))
            }
            _ => None,
        })
}

fn event_stack(rec: &Recording, e: EventId) -> Vec<&Frame> {
    let s = rec.event_stacks.get(e as usize).copied().unwrap_or(0);
    frames(rec, s)
}

/// The creation stacks of `threads` (the main thread has none).
fn creation_stacks<'a>(rec: &'a Recording, threads: &[ThreadId]) -> Vec<Vec<&'a Frame>> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for &t in threads {
        if seen.contains(&t) {
            continue;
        }
        seen.push(t);
        if let Some(info) = rec.threads.get(t as usize)
            && info.create_stack != 0
        {
            out.push(frames(rec, info.create_stack));
        }
    }
    out
}

/// The rule suppressing race `r`, if any (see the module docs).
fn race_rule(
    r: &Race,
    names: &Names,
    rec: Option<&Recording>,
    supp: &Suppressions,
) -> Option<usize> {
    let accesses = [r.second, r.first];
    let Some(rec) = rec else {
        return accesses
            .iter()
            .find_map(|a| {
                let loc = names.loc(a.loc);
                supp.find(Kind::Race, loc)
                    .or_else(|| supp.find(Kind::RaceTop, loc))
            })
            .or_else(|| supp.find(Kind::Race, &names.var(r.variable)));
    };
    let stacks: Vec<Vec<&Frame>> = accesses.iter().map(|a| event_stack(rec, a.id)).collect();
    let lib = stacks
        .iter()
        .filter_map(|s| s.first())
        .find_map(|top| supp.find(Kind::CalledFromLib, &top.module));
    if lib.is_some() {
        return lib;
    }
    let threads = creation_stacks(rec, &[r.second.thread, r.first.thread]);
    if let Some(i) = stacks
        .iter()
        .chain(&threads)
        .find_map(|s| match_stack(supp, Kind::Race, s))
    {
        return Some(i);
    }
    let info = rec.vars.get(r.variable as usize)?;
    if info.kind != VarKind::Cell {
        return None;
    }
    let g = rec.global_at(info.addr)?;
    supp.find(Kind::Race, &g.name)
        .or_else(|| supp.find(Kind::Race, &g.module))
}

/// The rule suppressing deadlock `d`, if any (see the module docs).
fn deadlock_rule(
    d: &Deadlock,
    names: &Names,
    rec: Option<&Recording>,
    supp: &Suppressions,
) -> Option<usize> {
    let sites = d.sites();
    if let Some(rec) = rec.filter(|rec| !rec.event_stacks.is_empty()) {
        let mut stacks: Vec<Vec<&Frame>> = sites.iter().map(|&e| event_stack(rec, e)).collect();
        stacks.extend(creation_stacks(rec, &d.threads()));
        return stacks
            .iter()
            .find_map(|s| match_stack(supp, Kind::Deadlock, s));
    }
    let locs = d.links.iter().flat_map(|l| {
        [l.request.loc, l.holder.acquire.loc]
            .into_iter()
            .chain(l.holder.joins.iter().map(|j| j.loc))
    });
    locs.map(|loc| names.loc(loc))
        .chain(d.locks().into_iter().map(|l| names.lock(l)))
        .find_map(|s| supp.find(Kind::Deadlock, s))
}
