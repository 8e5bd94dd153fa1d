//! What the text report says about a race of a recorded program beyond its
//! two events: ThreadSanitizer's fields ([`crate::report::tsan`]), read
//! from the trace and from what the recording carries beside it
//! ([`Recording`]): each access's size and address (from its cell and byte
//! mask), the mutexes held (acquire/release nesting per thread, and the read
//! side of rwlocks), where the memory is (global, heap block with its
//! allocation, stack or TLS of a thread), the threads' creation, and for a
//! race the observed run ordered, the happens-before path that ordered it
//! and the witness in source terms.
//!
//! The trace is read once more, streamed (memory: a few words per thread
//! and per shown race), unless a predicted race or a witness needs the
//! events themselves, in which case it is loaded.

use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::engine::sync::SyncPoints;
use crate::facts::Facts;
use crate::relation::Relation;
use crate::report::tsan::{AccessDetail, Detail, Location, MutexDetail, ThreadDetail, WitnessRun};
use crate::report::{Layout, Race, Report};
use crate::trace::recorded::{Recording, VarKind};
use crate::trace::{Event, EventId, Format, LoadError, Names, Op, ThreadId, Trace};

use super::query::hbpath::HbIndex;
use super::query::{Kind, Step};

/// Frames printed per stack.
const DEPTH: usize = crate::record::DEFAULT_STACK_DEPTH as usize;

/// Fill `report.details` for the races its text shows (the first of each
/// location pair, or with `layout.all` the first racy events, at most
/// `layout.max_reports`), when `path` is a recorded program's trace with
/// call stacks; nothing otherwise.
pub fn attach(
    report: &mut Report,
    path: &Path,
    format: Option<Format>,
    layout: &Layout,
) -> Result<(), LoadError> {
    if report.race_count() == 0 || !crate::trace::carries_stacks(path, format) {
        return Ok(());
    }
    let shown = crate::report::shown_races(report, layout)
        .map_err(|e| LoadError::new(&path.to_string_lossy(), 0, b"", e.to_string()))?;
    let mut g = Gatherer::new(shown.iter().flat_map(|r| [r.first.id, r.second.id]));
    let predicted = matches!(
        report.relation,
        Relation::Cp | Relation::Wcp | Relation::Shb | Relation::Syncp
    );
    if predicted || report.witnesses.is_some() {
        let (trace, rec) = crate::trace::load_recorded(path, format)?;
        for (i, ev) in trace.events.iter().enumerate() {
            g.see(i as EventId, ev);
        }
        let facts = Facts::new(&trace);
        let sync = SyncPoints::new(&trace, &facts, &[]);
        let hb = HbIndex::new(&trace, &facts, &sync);
        let ctx = Context {
            rec: &rec,
            names: &trace.names,
            g: &g,
        };
        for r in &shown {
            let mut d = ctx.detail(r);
            if predicted {
                d.ordering = ordering(&ctx, &trace, &hb, r, report.relation);
            }
            if let Some(w) = report.witness_of(r).flatten() {
                d.witness_runs = witness_runs(&ctx, &trace, w, r);
                d.witness = witness_steps(&d.witness_runs, w.is_empty());
            }
            report.details.insert((r.first.id, r.second.id), d);
        }
    } else {
        let (names, _, _, rec) =
            crate::trace::stream_recorded(path, format, true, |i, ev| g.see(i, ev))?;
        let ctx = Context {
            rec: &rec,
            names: &names,
            g: &g,
        };
        for r in &shown {
            let d = ctx.detail(r);
            report.details.insert((r.first.id, r.second.id), d);
        }
    }
    Ok(())
}

/// The state of a thread at a shown event.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    /// Locks held: (lock, acquire event), outermost first.
    held: Vec<(u32, EventId)>,
    /// The thread's latest volatile read and write of each variable it
    /// touched that way (rwlock read sides are resolved from these once
    /// the variables' kinds are known).
    volatiles: Vec<(u32, Option<EventId>, Option<EventId>)>,
}

/// A thread's latest volatile read and write of one variable.
type LastVolatile = (Option<EventId>, Option<EventId>);

/// One pass over the events, keeping what the shown races need.
#[derive(Default)]
struct Gatherer {
    wanted: FxHashSet<EventId>,
    /// The shown events and their neighbours in their thread.
    events: FxHashMap<EventId, Event>,
    /// Shown event -> the previous and next event of its thread.
    prev: FxHashMap<EventId, EventId>,
    next: FxHashMap<EventId, EventId>,
    at: FxHashMap<EventId, Snapshot>,
    /// Per thread: its latest event, shown events waiting for their next,
    /// locks held, latest volatile read and write per variable.
    last: Vec<Option<(EventId, Event)>>,
    waiting: Vec<Vec<EventId>>,
    held: Vec<Vec<(u32, EventId)>>,
    volatiles: Vec<FxHashMap<u32, LastVolatile>>,
    /// The first join of each thread.
    joined: FxHashMap<ThreadId, EventId>,
}

impl Gatherer {
    fn new(wanted: impl Iterator<Item = EventId>) -> Gatherer {
        Gatherer {
            wanted: wanted.collect(),
            ..Gatherer::default()
        }
    }

    fn see(&mut self, id: EventId, ev: &Event) {
        let t = ev.thread as usize;
        if self.last.len() <= t {
            self.last.resize(t + 1, None);
            self.waiting.resize(t + 1, Vec::new());
            self.held.resize(t + 1, Vec::new());
            self.volatiles.resize(t + 1, FxHashMap::default());
        }
        for w in std::mem::take(&mut self.waiting[t]) {
            self.next.insert(w, id);
            self.events.insert(id, *ev);
        }
        match ev.op {
            Op::Acquire => self.held[t].push((ev.target, id)),
            Op::Release => {
                if let Some(i) = self.held[t].iter().rposition(|&(l, _)| l == ev.target) {
                    self.held[t].remove(i);
                }
            }
            Op::VolatileRead => self.volatiles[t].entry(ev.target).or_default().0 = Some(id),
            Op::VolatileWrite => self.volatiles[t].entry(ev.target).or_default().1 = Some(id),
            Op::Join => {
                self.joined.entry(ev.target).or_insert(id);
            }
            _ => {}
        }
        if self.wanted.contains(&id) {
            self.events.insert(id, *ev);
            if let Some((p, pev)) = self.last[t] {
                self.prev.insert(id, p);
                self.events.insert(p, pev);
            }
            self.waiting[t].push(id);
            let volatiles = self.volatiles[t]
                .iter()
                .map(|(&v, &(r, w))| (v, r, w))
                .collect();
            self.at.insert(
                id,
                Snapshot {
                    held: self.held[t].clone(),
                    volatiles,
                },
            );
        }
        self.last[t] = Some((id, *ev));
    }
}

/// Whether `mask` (a run of bytes) could be one whole naturally aligned
/// access: 1, 2, 4 or 8 bytes at a multiple of its size.
fn possibly_whole(mask: u8) -> bool {
    let size = mask.count_ones();
    size.is_power_of_two() && mask.trailing_zeros().is_multiple_of(size)
}

/// What the details are built from.
struct Context<'a> {
    rec: &'a Recording,
    names: &'a Names,
    g: &'a Gatherer,
}

impl Context<'_> {
    fn is_main(&self, t: ThreadId) -> bool {
        self.rec
            .threads
            .get(t as usize)
            .is_none_or(|i| i.parent.is_none() && i.tid == 0)
            && t == 0
    }

    /// Thread `t` as TSan names it, with cprace's name for the main thread.
    fn who(&self, t: ThreadId) -> String {
        let name = self.names.thread(t);
        if self.is_main(t) {
            format!("main thread {name}")
        } else {
            format!("thread {name}")
        }
    }

    fn stack_of(&self, e: EventId) -> u32 {
        self.rec.event_stacks.get(e as usize).copied().unwrap_or(0)
    }

    /// The memory cell of event `e`'s variable, if it is one.
    fn cell(&self, ev: &Event) -> Option<u64> {
        let v = self.rec.vars.get(ev.target as usize)?;
        (v.kind == VarKind::Cell).then_some(v.addr)
    }

    /// Address and size of access `e`; an access the recorder split over
    /// two cells (the neighbouring event of its thread, same op and stack,
    /// on the next cell, the bytes running on) reads as one, unless both
    /// halves could each be a whole aligned access (a loop over an array
    /// gives the same events, and the trace does not keep access sizes).
    fn memory(&self, e: EventId) -> Option<(u64, u64)> {
        let ev = self.g.events.get(&e)?;
        let cell = self.cell(ev)?;
        let mask = ev.bytes();
        let mut addr = cell + u64::from(mask.trailing_zeros());
        let mut size = u64::from(mask.count_ones());
        let joins = |lo: EventId, hi: EventId| -> bool {
            let (Some(a), Some(b)) = (self.g.events.get(&lo), self.g.events.get(&hi)) else {
                return false;
            };
            hi == lo + 1
                && a.thread == b.thread
                && a.op == b.op
                && self.stack_of(lo) == self.stack_of(hi)
                && self
                    .cell(a)
                    .zip(self.cell(b))
                    .is_some_and(|(x, y)| y == x + 8)
                && a.bytes() & 0x80 != 0
                && b.bytes() & 1 != 0
                && !(possibly_whole(a.bytes()) && possibly_whole(b.bytes()))
        };
        if let Some(&n) = self.g.next.get(&e)
            && joins(e, n)
        {
            size += u64::from(self.g.events[&n].bytes().count_ones());
        } else if let Some(&p) = self.g.prev.get(&e)
            && joins(p, e)
        {
            let pb = self.g.events[&p].bytes();
            addr -= u64::from(pb.count_ones());
            size += u64::from(pb.count_ones());
        }
        Some((addr, size))
    }

    /// The innermost frame of stack `s` outside the runtime, as
    /// (`file:line`, function).
    fn top(&self, s: u32) -> Option<(String, String)> {
        let f = self.rec.stack_frames(s, DEPTH).into_iter().find(|f| {
            !f.module
                .rsplit('/')
                .next()
                .unwrap_or("")
                .starts_with("libcprace_rt")
        })?;
        let l = f.lines.first()?;
        let at = match l.line {
            0 => l.file.clone(),
            n => format!("{}:{n}", l.file),
        };
        Some((at, l.function.clone()))
    }

    /// The mutexes held at shown event `e`: (lock address, cprace's name,
    /// write side, acquire event), outermost first.
    fn held(&self, e: EventId) -> Vec<(u64, Option<String>, bool, EventId)> {
        let Some(snap) = self.g.at.get(&e) else {
            return Vec::new();
        };
        // A global's name (cprace may add `@address` to keep names unique).
        let named = |n: &str, addr: u64| {
            let n = n.strip_suffix(&format!("@{addr:#x}")).unwrap_or(n);
            (!n.starts_with("0x")).then(|| n.to_string())
        };
        let mut out: Vec<(u64, Option<String>, bool, EventId)> = snap
            .held
            .iter()
            .map(|&(l, acq)| {
                let addr = self.rec.locks.get(l as usize).copied().unwrap_or(0);
                (addr, named(self.names.lock(l), addr), true, acq)
            })
            .collect();
        // A reader holds an rwlock from its read of `L.w` to its write of
        // its own `L.r.Tt`.
        for &(v, read, _) in &snap.volatiles {
            let (Some(info), Some(got)) = (self.rec.vars.get(v as usize), read) else {
                continue;
            };
            if info.kind != VarKind::RwWriter {
                continue;
            }
            let released = snap.volatiles.iter().any(|&(w, _, wrote)| {
                self.rec
                    .vars
                    .get(w as usize)
                    .is_some_and(|i| i.kind == VarKind::RwReader && i.addr == info.addr)
                    && wrote.is_some_and(|x| x > got)
            });
            if !released {
                let name = self.names.var(v);
                let name = name.strip_suffix(".w").unwrap_or(&name);
                out.push((info.addr, named(name, info.addr), false, got));
            }
        }
        out.sort_by_key(|m| m.3);
        out
    }

    fn detail(&self, r: &Race) -> Detail {
        let mut d = Detail::default();
        let mut ids: Vec<u64> = Vec::new();
        for (slot, a) in [r.second, r.first].iter().enumerate() {
            let mut mutexes = Vec::new();
            for (addr, name, write, acq) in self.held(a.id) {
                let id = match ids.iter().position(|&x| x == addr) {
                    Some(i) => i,
                    None => {
                        ids.push(addr);
                        ids.len() - 1
                    }
                };
                mutexes.push((write, id));
                d.mutexes.push(MutexDetail {
                    id,
                    addr,
                    name,
                    write,
                    thread: self.who(a.thread),
                    event: acq,
                    frames: self.rec.stack_of(acq, DEPTH),
                });
            }
            d.accesses[slot] = AccessDetail {
                event: a.id,
                write: a.op.is_write(),
                atomic: a.op.is_atomic(),
                memory: self.memory(a.id),
                thread: self.who(a.thread),
                mutexes,
                frames: self.rec.stack_of(a.id, DEPTH),
                top: self.top(self.stack_of(a.id)),
            };
        }
        d.mutexes.sort_by_key(|m| (m.id, m.event));
        let (location, owner) = self.location(r).unzip();
        d.location = location;
        let mut threads = vec![r.second.thread, r.first.thread];
        threads.extend(owner.flatten());
        let mut seen = FxHashSet::default();
        for t in threads {
            if self.is_main(t) || !seen.insert(t) {
                continue;
            }
            let info = self
                .rec
                .threads
                .get(t as usize)
                .cloned()
                .unwrap_or_default();
            d.threads.push(ThreadDetail {
                id: self.names.thread(t).to_string(),
                name: info.name.clone(),
                finished: self.g.joined.get(&t).is_some_and(|&j| j < r.second.id),
                os_tid: info.os_tid,
                parent: info.parent.map(|p| self.who(p)),
                frames: self.rec.stack(info.create_stack, DEPTH),
            });
        }
        d
    }

    /// Where the memory of race `r` is, and the thread that location names.
    fn location(&self, r: &Race) -> Option<(Location, Option<ThreadId>)> {
        let (addr, _) = self.memory(r.second.id)?;
        if let Some(g) = self.rec.global_at(addr) {
            let loc = Location::Global {
                name: g.name.clone(),
                size: g.size,
                addr: g.addr,
                module: g.module.clone(),
                offset: g.offset,
            };
            return Some((loc, None));
        }
        if let Some(b) = self.rec.block_at(addr, r.second.id) {
            let freed = self
                .rec
                .freed_before(addr, r.second.id)
                .map(|f| (self.who(f.thread), self.rec.stack(f.stack, DEPTH)));
            let loc = Location::Heap {
                size: b.size,
                addr: b.addr,
                thread: self.who(b.thread),
                frames: self.rec.stack(b.stack, DEPTH),
                freed,
            };
            return Some((loc, Some(b.thread)));
        }
        // TLS first: glibc places a thread's static TLS inside the mapping
        // its stack range covers.
        let within = |(lo, hi): (u64, u64)| lo < hi && addr >= lo && addr < hi;
        let threads = || (0..).zip(self.rec.threads.iter());
        if let Some((t, _)) = threads().find(|(_, i)| within(i.tls)) {
            return Some((
                Location::Tls {
                    thread: self.who(t),
                },
                Some(t),
            ));
        }
        let (t, _) = threads().find(|(_, i)| within(i.stack))?;
        Some((
            Location::Stack {
                thread: self.who(t),
            },
            Some(t),
        ))
    }

    /// `file:line in function` of event `e` (its location when the stack
    /// names no function).
    fn site(&self, trace: &Trace, e: EventId) -> String {
        let loc = trace.names.loc(trace.events[e as usize].loc);
        match self.top(self.stack_of(e)) {
            Some((_, f)) if !f.is_empty() => format!("{loc} in {f}"),
            _ => loc.to_string(),
        }
    }
}

/// For a race of a predictive relation: whether the observed run showed it
/// (happens-before leaves the accesses unordered), or what ordered them.
fn ordering(ctx: &Context, trace: &Trace, hb: &HbIndex, r: &Race, rel: Relation) -> Vec<String> {
    let (e1, e2) = (r.first.id, r.second.id);
    let Some(path) = hb.path(trace, e1, e2) else {
        return vec![format!(
            "Observed: happens-before leaves the accesses unordered in this run \
             (`--relation hb` reports event {e2} too)."
        )];
    };
    let mut out = vec![format!(
        "Predicted (not observed unordered in this run): happens-before ordered the accesses \
         in the observed run, and {} predicts a correct reordering of it in which they race. \
         What ordered them:",
        rel.name()
    )];
    let who = |e: EventId| ctx.who(trace.events[e as usize].thread);
    let site = |e: EventId| ctx.site(trace, e);
    let steps: Vec<&Step> = path.iter().filter(|s| s.kind != Kind::Po).collect();
    for (n, s) in steps.iter().enumerate() {
        let (a, b) = (s.from, s.to);
        let target = |e: EventId| {
            let ev = &trace.events[e as usize];
            let name = trace.names.target(ev);
            // Lock names may carry `@address` to stay unique.
            name.split_once("@0x")
                .map_or(&*name, |(n, _)| n)
                .to_string()
        };
        let line = match &s.kind {
            Kind::ReleaseAcquire { .. } => format!(
                "{} releases mutex `{}` at {} (event {a}), then {} acquires it at {} (event {b})",
                who(a),
                target(a),
                site(a),
                who(b),
                site(b)
            ),
            Kind::Fork => format!("{} creates {} at {} (event {a})", who(a), who(b), site(a)),
            Kind::Join => format!(
                "{} ends (event {a}), then {} joins it at {} (event {b})",
                who(a),
                who(b),
                site(b)
            ),
            Kind::Volatile => format!(
                "{} publishes `{}` at {} (event {a}), then {} reads it at {} (event {b}) \
                 (a release/acquire atomic, semaphore, barrier or once)",
                who(a),
                target(a),
                site(a),
                who(b),
                site(b)
            ),
            Kind::ReadsFrom => format!(
                "{} reads at {} (event {b}) the value {} wrote at {} (event {a})",
                who(b),
                site(b),
                who(a),
                site(a)
            ),
            k => format!("{} edge from event {a} to event {b}", k.name()),
        };
        out.push(format!("  {}. {line}", n + 1));
    }
    out
}

/// A witness (a correct reordering's prefix) as runs of one thread: which
/// thread runs to which `file:line`, in order, then the two accesses, each
/// alone (earlier first; either may run first).
fn witness_runs(ctx: &Context, trace: &Trace, w: &[EventId], r: &Race) -> Vec<WitnessRun> {
    let names = crate::witness::RunNames {
        who: &|t| ctx.who(t),
        site: &|e| ctx.site(trace, e),
        top: &|e| ctx.rec.stack_of(e, DEPTH).into_iter().next(),
    };
    crate::witness::runs(trace, w, r, &names)
}

/// The witness's runs as the text report's lines: the runs, then one line
/// for the two accesses, both enabled.
fn witness_steps(runs: &[WitnessRun], empty: bool) -> Vec<String> {
    let n = runs.len().saturating_sub(2);
    let mut out: Vec<String> = runs[..n].iter().map(|r| r.text.clone()).collect();
    if let [a, b] = &runs[n..] {
        out.push(format!(
            "then {} and {} are both enabled: either may run first",
            a.text, b.text
        ));
    }
    if empty {
        out.insert(
            0,
            "both accesses are enabled at the start of the run".into(),
        );
    }
    out
}
