//! Windowed CP over a stream: memory bounded by the window and the live
//! synchronization state, not by the trace.
//!
//! The engine keeps a *stretch* of the trace, from `base` to the latest event,
//! and every so often runs the whole-trace machinery ([`CpInput`], the
//! fixpoint) on it, then moves the race pass forward to a *frontier* `O`
//! before which every base edge is final, and drops what is `K` or more
//! events behind `O`. Why that gives exactly the whole-trace answers:
//!
//! - **What a verdict needs.** A pair `(x, y)` less than K apart is CP-ordered
//!   through a base edge `(r, a)` with `x <= r < a <= y`; pairs K or more apart
//!   are decided by HBv (rule (w)), whose clocks stream. So the race pass at
//!   `y` needs the final base edges into targets `<= y`, with sources less
//!   than K before them.
//! - **Which edges can still change.** Edges only grow. A section closed
//!   before the latest event gets a new edge only through rule (b), from a
//!   new base edge `(r, a)` with `a <=HBv end2 < r + K`, so `end2 - a < K`.
//!   New edges target the acquires of open sections that can still improve
//!   (not *saturated*, i.e. without the edge from their immediate predecessor
//!   on the lock, which dominates every other, and not *hopeless*, i.e. that
//!   predecessor released K or more events before the acquire, so no edge
//!   into them can matter), and, closing over that, the acquires of closed
//!   sections that can improve and end HBv-after and less than K after such
//!   a target. `O` is the earliest of those targets: every edge into an
//!   earlier target is final. An open section stops improving once it is K
//!   events older than its predecessor's acquire (the window rule then gives
//!   the predecessor's edge), so `O` trails the stream by a few windows.
//! - **What a derivation needs.** Every edge into a target `a >= O` that
//!   matters has its source after `O - K`; rule (b) for it relates a section
//!   ending after `O` to one released after `O - K`, through `CP(acq1, end2)`,
//!   which is rule (w) when `end2 - acq1 >= K` and otherwise uses base edges
//!   after `acq1 > O - K`. So the next stretch starts at `O - K` and carries:
//!   the HBv clocks from there on (computed once per event as it arrives,
//!   never by stepping a copy of the clocks again), the edges already
//!   derived with both ends after it
//!   (so that edges into earlier targets, derived from events now dropped,
//!   stay available), and the sections open there, replayed as acquires at
//!   the stretch's start with their real ids, clocks and a summary of the
//!   variables they accessed before it (rule (a) needs their contents, not
//!   their events).
//! - **Provisional ends.** A section still open is treated as ending at its
//!   thread's latest event. Everything derived that way holds at its real end
//!   too (more events can only add CP orderings and conflicts), so edges from
//!   a stretch are edges of the whole trace.
//!
//! `tests/it/cp_stream.rs` checks the answers against the whole-trace engine
//! on generated traces cut into stretches of a few dozen events.

use std::collections::VecDeque;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

use rustc_hash::FxHashMap;
use serde_json::json;

use super::Reporting;
use super::input::{CpInput, Rule, Stretch};
use super::races::{Incoming, PassOptions, RaceState};
use crate::engine::sync::{Carried, Clocks, NONE, Pinned, VolatileOrder};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::model::{Interner, intern};
use crate::trace::{Event, EventId, Op, Trace};

/// Entries of the table that merges an open section's repeated accesses
/// before they are sorted (see [`CpStream::advance_base`]).
const RECENT: usize = 1 << 10;

/// The streaming windowed CP engine (a [`crate::engine::detector::Detector`]).
pub struct CpStream {
    k: u64,
    /// Run the fixpoint after this many new events.
    every: usize,
    /// The stretch: the pinned acquires, then every event from
    /// `carried.base` on. Its names are placeholders (only their number
    /// matters to the inputs).
    stretch: Trace,
    carried: Carried,
    /// HBv clocks at the latest event: each event is stepped once, as it
    /// arrives, and the stretches read the clocks kept in `carried`.
    clocks: Clocks,
    /// Accesses of pinned sections before `carried.base`.
    summaries: Vec<(u32, u32, u8)>,
    /// Base edges `(target, source, rule)` derived so far with both ends at
    /// or after `carried.base`.
    edges: Vec<(EventId, EventId, Rule)>,
    /// The race pass, until its thread starts (at the first stretch).
    race: Option<RaceState>,
    /// The race pass runs on a thread of its own, a stretch behind the
    /// fixpoint: stretches go to it with what it needs.
    to_race: Option<SyncSender<Settled>>,
    race_thread: Option<JoinHandle<Report>>,
    first_only: bool,
    /// The race pass has passed (or been handed) every event before this one.
    frontier: EventId,
    /// Variables retired before the event whose id they go with, in order,
    /// until the carried clocks pass it.
    retired: VecDeque<(EventId, Vec<u32>)>,
    /// How many of `retired` the race pass was handed.
    retired_to_race: usize,
    /// Id of the next event.
    next: EventId,
    since_run: usize,
    /// The report (its races are pushed as the pass finds them).
    pub report: Report,
    started: Instant,
    acquires: u64,
    rounds: u64,
    /// Seconds building stretch inputs and in the fixpoint.
    seconds_input: f64,
    seconds_fixpoint: f64,
    runs: u64,
    peak_stretch: usize,
    edge_counts: [u64; 4],
}

impl CpStream {
    /// A stream analysed under window `k`, reporting as `opts` says.
    pub fn new(k: u64, opts: PassOptions) -> CpStream {
        let every = usize::try_from(k.saturating_mul(2))
            .unwrap_or(usize::MAX)
            .max(1 << 18);
        Self::with_runs_every(k, opts, every)
    }

    /// [`CpStream::new`] running the fixpoint every `every` events (tests cut
    /// traces into tiny stretches with it).
    pub fn with_runs_every(k: u64, opts: PassOptions, every: usize) -> CpStream {
        let mut report = Report::new(Relation::Cp, Engine::Datalog, Some(k), 0);
        report.max_distance = opts.max_distance;
        CpStream {
            k,
            every: every.max(1),
            stretch: Trace::default(),
            carried: Carried::default(),
            clocks: Clocks::empty(true, VolatileOrder::Conflicting),
            summaries: Vec::new(),
            edges: Vec::new(),
            race: Some(RaceState::new(opts, Some(k))),
            to_race: None,
            race_thread: None,
            first_only: opts.first_only,
            frontier: 0,
            retired: VecDeque::new(),
            retired_to_race: 0,
            next: 0,
            since_run: 0,
            report,
            started: Instant::now(),
            acquires: 0,
            rounds: 0,
            seconds_input: 0.0,
            seconds_fixpoint: 0.0,
            runs: 0,
            peak_stretch: 0,
            edge_counts: [0; 4],
        }
    }

    /// Feed the next event (`id` counts from 0).
    pub fn event(&mut self, id: EventId, ev: &Event) {
        debug_assert_eq!(id, self.next);
        let names = &mut self.stretch.names;
        let grow = |table: &mut Interner, n: u32| {
            while table.len() <= n as usize {
                let next = table.len().to_string();
                intern(table, &next);
            }
        };
        grow(&mut names.threads, ev.thread);
        match ev.op {
            Op::Fork | Op::Join => grow(&mut names.threads, ev.target),
            Op::Acquire | Op::Release => grow(&mut names.locks, ev.target),
            _ => {}
        }
        self.acquires += u64::from(ev.op == Op::Acquire);
        self.carried.step(&mut self.clocks, id, ev);
        self.stretch.events.push(*ev);
        self.next = id + 1;
        self.since_run += 1;
        if self.since_run >= self.every {
            self.run(false);
        }
    }

    /// Variables `vars` are retired: no event from the next one on touches
    /// them. The clocks, at the latest event, forget them now; the race
    /// pass once it has passed this point, not before: it may still be
    /// behind their last accesses.
    pub fn retire(&mut self, vars: &[u32]) {
        self.clocks.retire(vars);
        if !vars.is_empty() {
            self.retired.push_back((self.next, vars.to_vec()));
        }
    }

    /// Analyse what is left and return the report.
    pub fn finish(mut self) -> Report {
        self.run(true);
        drop(self.to_race.take());
        let mut report = match self.race_thread.take() {
            Some(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            None => self.report,
        };
        report.events = u64::from(self.next);
        report.stats.insert(
            "base_edges".into(),
            super::base_edge_stats(self.edge_counts),
        );
        report
            .stats
            .insert("critical_sections".into(), json!(self.acquires));
        report
            .stats
            .insert("fixpoint_rounds".into(), json!(self.rounds));
        report.stats.insert(
            "stream".into(),
            json!({"stretches": self.runs, "peak_stretch_events": self.peak_stretch}),
        );
        report.stats.insert(
            "seconds".into(),
            json!({
                "inputs": self.seconds_input,
                "fixpoint": self.seconds_fixpoint,
                "total": self.started.elapsed().as_secs_f64(),
            }),
        );
        if report.race_count() > 0 {
            let reporting = if self.first_only {
                Reporting::FirstRace
            } else {
                Reporting::All
            };
            report.notes.push(reporting.note().into());
        }
        report.normalize();
        report
    }

    /// Run the fixpoint on the stretch, move the race pass to the frontier
    /// (the end, when `last`) and drop what is no longer needed.
    fn run(&mut self, last: bool) {
        self.since_run = 0;
        self.runs += 1;
        self.peak_stretch = self.peak_stretch.max(self.stretch.events.len());
        let t0 = Instant::now();
        let input = CpInput::stretch(
            &self.stretch,
            self.k,
            &Stretch {
                carried: &self.carried,
                summaries: &self.summaries,
                edges: &self.edges,
            },
        );
        let t1 = Instant::now();
        let fp = input.fixpoint();
        self.seconds_input += (t1 - t0).as_secs_f64();
        self.seconds_fixpoint += t1.elapsed().as_secs_f64();
        self.rounds += fp.rounds;
        let end = self.next;
        let o = if last {
            end
        } else {
            self.settled(&input, &fp.base).clamp(self.frontier, end)
        };
        let sync = &input.sync;
        for &(a, _, rule) in &fp.base {
            let e = sync.event(a);
            if e >= self.frontier && e < o {
                self.edge_counts[rule as usize] += 1;
            }
        }
        let pairs: Vec<(u32, u32)> = fp.base.iter().map(|&(a, r, _)| (a, r)).collect();
        let incoming = Incoming::new(&input, &pairs);
        let at = |e: EventId| self.carried.index(e);
        let range = at(self.frontier)..at(o);
        let first = self.frontier;
        self.frontier = o;
        let retired = self
            .retired
            .iter()
            .skip(self.retired_to_race)
            .take_while(|(at, _)| *at <= o)
            .flat_map(|(_, vars)| vars.iter().copied())
            .collect::<Vec<u32>>();
        self.retired_to_race = self.retired.partition_point(|(at, _)| *at <= o);
        // The race pass gets the stretch's events themselves, not a copy
        // (copying them was 3 % of zstd's cp): the next stretch is a new
        // vector.
        let events = if last {
            std::mem::take(&mut self.stretch.events)
        } else {
            let keep = o.saturating_sub(u32::try_from(self.k).unwrap_or(u32::MAX));
            self.advance_base(&input, &fp.base, keep.max(self.carried.base))
        };
        self.race_tx()
            .send(Settled {
                input,
                incoming,
                events,
                range,
                first,
                retired,
            })
            .expect("the race pass runs until the stream ends");
    }

    /// The channel to the race pass, starting its thread the first time.
    fn race_tx(&mut self) -> &SyncSender<Settled> {
        if self.to_race.is_none() {
            let (tx, rx) = sync_channel::<Settled>(1);
            let mut race = self.race.take().expect("started once");
            let mut report = std::mem::take(&mut self.report);
            self.race_thread = Some(std::thread::spawn(move || {
                for s in rx {
                    let events = &s.events[s.range];
                    race.advance(events, s.first, &s.input, &s.incoming, None, &mut |r| {
                        report.push(r)
                    });
                    race.retire(&s.retired);
                }
                report
            }));
            self.to_race = Some(tx);
        }
        self.to_race.as_ref().expect("just set")
    }

    /// The frontier: the earliest acquire that may still receive a base edge
    /// that matters (see the module docs), or the end.
    fn settled(&self, input: &CpInput, base: &[(u32, u32, Rule)]) -> EventId {
        let sync = &input.sync;
        let has = |a: u32, r: u32| base.binary_search_by(|e| (e.0, e.1).cmp(&(a, r))).is_ok();
        let mut targets: Vec<u32> = Vec::new();
        let mut closed: Vec<u32> = Vec::new();
        for (c, s) in input.sections.iter().enumerate() {
            // No predecessor in the stretch: it released K or more before
            // the frontier, so before this acquire by K or more (hopeless).
            if s.pos == 0 {
                continue;
            }
            let list = &input.by_lock[s.lock as usize];
            let pred = &input.sections[list[s.pos as usize - 1] as usize];
            if pred.rel != NONE && (!input.within(pred.rel, s.acq) || has(s.acq, pred.rel)) {
                continue;
            }
            if s.rel == NONE {
                targets.push(s.acq);
            } else {
                closed.push(c as u32);
            }
        }
        loop {
            let Some(min) = targets.iter().map(|&a| sync.event(a)).min() else {
                return self.next;
            };
            let mut found = Vec::new();
            closed.retain(|&c| {
                let s = &input.sections[c as usize];
                let end = sync.event(s.end);
                let hit = end >= min
                    && targets.iter().any(|&a| {
                        let e = sync.event(a);
                        e <= end && u64::from(end - e) < self.k && sync.hb_leq(a, s.end)
                    });
                if hit {
                    found.push(s.acq);
                }
                !hit
            });
            if found.is_empty() {
                return min;
            }
            targets.extend(found);
        }
    }

    /// Start the stretch at `keep`: HBv clocks there, sections open there
    /// pinned with their access summaries, edges with both ends from there.
    /// Returns the events of the stretch before.
    fn advance_base(
        &mut self,
        input: &CpInput,
        base: &[(u32, u32, Rule)],
        keep: EventId,
    ) -> Vec<Event> {
        let old = &self.carried;
        let sync = &input.sync;
        let p = old.pinned.len();
        let dropped = (keep - old.base) as usize;
        // Sections open at `keep`, in acquire order (sections are sorted by
        // acquire, and pinned sections come first).
        let mut pinned = Vec::new();
        let mut pinned_events = Vec::new();
        let mut renumber: FxHashMap<u32, u32> = FxHashMap::default();
        let mut open_of_thread: FxHashMap<u32, Vec<(EventId, u32)>> = FxHashMap::default();
        for (c, s) in input.sections.iter().enumerate() {
            let acq = sync.event(s.acq);
            if acq < keep && (s.rel == NONE || sync.event(s.rel) >= keep) {
                let n = pinned.len() as u32;
                if c < p {
                    renumber.insert(c as u32, n);
                }
                open_of_thread.entry(s.thread).or_default().push((acq, n));
                pinned_events.push(self.stretch.events[old.index(acq)]);
                pinned.push(Pinned {
                    id: acq,
                    local: sync.local[s.acq as usize],
                    clock: sync.clock(s.acq).clone(),
                });
            }
        }
        // Sorted, as `self.summaries` is: `renumber` keeps the order.
        let summaries: Vec<(u32, u32, u8)> = self
            .summaries
            .iter()
            .filter_map(|&(c, v, w)| renumber.get(&c).map(|&n| (n, v, w)))
            .collect();
        // The accesses of open sections in the dropped events, most of them
        // repeats (a section open for long runs through whole buffers):
        // merged as they come when the same section and variable was among
        // the latest ones, so that far fewer are sorted.
        let mut fresh: Vec<(u32, u32, u8)> = Vec::new();
        let mut recent = [(NONE, NONE, 0usize); RECENT];
        if !open_of_thread.is_empty() {
            for (i, ev) in self.stretch.events[p..p + dropped].iter().enumerate() {
                if !ev.op.is_memory() {
                    continue;
                }
                let id = old.base + i as EventId;
                let Some(open) = open_of_thread.get(&ev.thread) else {
                    continue;
                };
                let kind = super::input::access_kind(ev.op);
                for &(acq, n) in open {
                    if acq > id {
                        continue;
                    }
                    let h = (ev.target ^ n.wrapping_mul(0x9e37_79b9)) as usize % RECENT;
                    match recent[h] {
                        (m, x, at) if m == n && x == ev.target => fresh[at].2 |= kind,
                        _ => {
                            recent[h] = (n, ev.target, fresh.len());
                            fresh.push((n, ev.target, kind));
                        }
                    }
                }
            }
        }
        super::input::merge_accesses(&mut fresh);
        let summaries = super::input::merge_sorted_accesses(summaries, fresh);
        self.edges = base
            .iter()
            .map(|&(a, r, rule)| (sync.event(a), sync.event(r), rule))
            .filter(|&(a, r, _)| a >= keep && r >= keep)
            .collect();
        self.carried
            .advance(&self.stretch.events[p..p + dropped], keep);
        self.carried.pinned = pinned;
        let rest = &self.stretch.events[p + dropped..];
        pinned_events.extend_from_slice(rest);
        let before = std::mem::replace(&mut self.stretch.events, pinned_events);
        self.summaries = summaries;
        // Variables retired by `keep` are behind every stretch to come, and
        // the race pass was handed them (`keep` is before the frontier).
        while self.retired.front().is_some_and(|(at, _)| *at <= keep) {
            debug_assert!(self.retired_to_race > 0);
            self.retired.pop_front();
            self.retired_to_race -= 1;
        }
        before
    }
}

/// What the race pass needs to pass a stretch's settled events: the
/// stretch's inputs (HBv clocks of its points) and final base edges, and the
/// events from `first` on.
struct Settled {
    input: CpInput,
    incoming: Incoming,
    /// The stretch's events; those of `range` are the ones to pass.
    events: Vec<Event>,
    range: std::ops::Range<usize>,
    first: EventId,
    /// Variables retired by the end of `events`, to forget after them.
    retired: Vec<u32>,
}

impl crate::engine::detector::Detector for CpStream {
    fn event(&mut self, id: EventId, ev: &Event) {
        CpStream::event(self, id, ev)
    }
    fn finish(self) -> Report {
        CpStream::finish(self)
    }
    fn report_mut(&mut self) -> &mut Report {
        &mut self.report
    }
    fn retire(&mut self, vars: &[u32]) {
        CpStream::retire(self, vars)
    }
    /// A stretch (up to 2^20 events: 16 MB): the parser fills the next one
    /// while the fixpoint runs.
    fn lookahead(&self) -> usize {
        self.every.min(1 << 20)
    }
}
