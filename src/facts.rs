//! The relations the CP paper's Datalog reads (Figure 10) and the derived
//! helpers every analysis needs: matching acquire/release pairs, critical
//! sections, locks held at each access, fork/join edges.

use rustc_hash::FxHashMap;

use crate::trace::{EventId, Op, ThreadId, Trace};

/// One critical section: every event of `thread` from `acq` to its matching
/// release, or to the thread's last event when the lock is never released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CriticalSection {
    /// Lock id.
    pub lock: u32,
    /// Owning thread.
    pub thread: ThreadId,
    /// The acquire event.
    pub acq: EventId,
    /// The matching release, if the trace has one.
    pub rel: Option<EventId>,
    /// Last event of the section: `rel`, or the thread's last event.
    pub end: EventId,
}

impl CriticalSection {
    /// Whether event `e` of thread `t` lies in this section (boundaries included).
    pub fn contains(&self, t: ThreadId, e: EventId) -> bool {
        t == self.thread && self.acq <= e && e <= self.end
    }
}

/// Derived facts over a trace.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Critical sections ordered by acquire event.
    pub critical_sections: Vec<CriticalSection>,
    /// Index into `critical_sections` by acquire event and by release event.
    pub cs_of_boundary: FxHashMap<EventId, u32>,
    /// First and last event of each thread (None for threads without events).
    pub thread_span: Vec<Option<(EventId, EventId)>>,
    /// Fork edges `(fork event, first event of the child)`.
    pub fork_edges: Vec<(EventId, EventId)>,
    /// Join edges `(last event of the child, join event)`.
    pub join_edges: Vec<(EventId, EventId)>,
}

impl Facts {
    /// Compute the facts of `trace` (one pass plus sorting).
    pub fn new(trace: &Trace) -> Facts {
        Self::build(trace, true)
    }

    /// [`Facts::new`] without `cs_of_boundary` (left empty, so
    /// [`Facts::cs_of`] finds nothing): the CP engine never asks, and
    /// streaming builds the facts of every stretch.
    pub(crate) fn without_boundary_index(trace: &Trace) -> Facts {
        Self::build(trace, false)
    }

    fn build(trace: &Trace, index: bool) -> Facts {
        let nt = trace.num_threads();
        let mut span: Vec<Option<(EventId, EventId)>> = vec![None; nt];
        let mut open: FxHashMap<(ThreadId, u32), u32> = FxHashMap::default();
        let mut css: Vec<CriticalSection> = Vec::new();
        let mut by_boundary = FxHashMap::default();
        for (i, ev) in trace.events.iter().enumerate() {
            let i = i as EventId;
            let s = &mut span[ev.thread as usize];
            *s = Some(s.map_or((i, i), |(f, _)| (f, i)));
            match ev.op {
                Op::Acquire => {
                    open.insert((ev.thread, ev.target), css.len() as u32);
                    if index {
                        by_boundary.insert(i, css.len() as u32);
                    }
                    css.push(CriticalSection {
                        lock: ev.target,
                        thread: ev.thread,
                        acq: i,
                        rel: None,
                        end: i,
                    });
                }
                Op::Release => {
                    if let Some(c) = open.remove(&(ev.thread, ev.target)) {
                        css[c as usize].rel = Some(i);
                        css[c as usize].end = i;
                        if index {
                            by_boundary.insert(i, c);
                        }
                    }
                }
                _ => {}
            }
        }
        for (_, c) in open {
            let cs = &mut css[c as usize];
            cs.end = span[cs.thread as usize].map_or(cs.acq, |(_, l)| l);
        }
        let mut fork_edges = Vec::new();
        let mut join_edges = Vec::new();
        for (i, ev) in trace.events.iter().enumerate() {
            match ev.op {
                Op::Fork => {
                    if let Some((first, _)) = span[ev.target as usize] {
                        fork_edges.push((i as EventId, first));
                    }
                }
                Op::Join => {
                    if let Some((_, last)) = span[ev.target as usize] {
                        join_edges.push((last, i as EventId));
                    }
                }
                _ => {}
            }
        }
        Facts {
            critical_sections: css,
            cs_of_boundary: by_boundary,
            thread_span: span,
            fork_edges,
            join_edges,
        }
    }

    /// Rename every event with `id` (a stretch's positions to ids in the
    /// whole trace; `id` must be increasing, so every order is kept).
    pub(crate) fn map_ids(&mut self, id: impl Fn(EventId) -> EventId) {
        for cs in &mut self.critical_sections {
            cs.acq = id(cs.acq);
            cs.rel = cs.rel.map(&id);
            cs.end = id(cs.end);
        }
        self.cs_of_boundary = self
            .cs_of_boundary
            .iter()
            .map(|(&e, &c)| (id(e), c))
            .collect();
        for s in self.thread_span.iter_mut().flatten() {
            *s = (id(s.0), id(s.1));
        }
        for e in self.fork_edges.iter_mut().chain(&mut self.join_edges) {
            *e = (id(e.0), id(e.1));
        }
    }

    /// The critical section an acquire or release event bounds.
    pub fn cs_of(&self, e: EventId) -> Option<&CriticalSection> {
        self.cs_of_boundary
            .get(&e)
            .map(|&c| &self.critical_sections[c as usize])
    }
}

/// The CP paper's input relations (Figure 10) plus the critical-section helpers
/// of Figure 11, as plain tuples. Quadratic helpers are only for small traces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Relations {
    /// `TraceNext[e1] = e2`.
    pub trace_next: Vec<(u32, u32)>,
    /// `ThreadForEvent[e] = t`.
    pub thread_for_event: Vec<(u32, u32)>,
    /// `AcqEvent[e] = m`.
    pub acq_event: Vec<(u32, u32)>,
    /// `RelEvent[e] = m`.
    pub rel_event: Vec<(u32, u32)>,
    /// `ReadEvent[e] = x`.
    pub read_event: Vec<(u32, u32)>,
    /// `WriteEvent[e] = x`.
    pub write_event: Vec<(u32, u32)>,
    /// `VolatileReadEvent[e] = x`.
    pub volatile_read_event: Vec<(u32, u32)>,
    /// `VolatileWriteEvent[e] = x`.
    pub volatile_write_event: Vec<(u32, u32)>,
    /// `AtomicReadEvent[e] = x`: a relaxed atomic read (`ar`).
    pub atomic_read_event: Vec<(u32, u32)>,
    /// `AtomicWriteEvent[e] = x`: a relaxed atomic write (`aw`).
    pub atomic_write_event: Vec<(u32, u32)>,
    /// `ForkEvent[e] = child thread`.
    pub fork_event: Vec<(u32, u32)>,
    /// `JoinEvent[e] = child thread`.
    pub join_event: Vec<(u32, u32)>,
    /// `MatchingCriticalSecBoundary[eRel] = eAcq`.
    pub matching: Vec<(u32, u32)>,
    /// `CriticalSecEnd[eAcq] = last event of the section` (the release, or the
    /// thread's last event when never released).
    pub cs_end: Vec<(u32, u32)>,
    /// `InSameCriticalSec(e, eAcq)`.
    pub in_cs: Vec<(u32, u32)>,
    /// Hard edges from fork (`fork -> child's first event`) and join
    /// (`child's last event -> join`).
    pub fork_join_edge: Vec<(u32, u32)>,
}

impl Relations {
    /// Build every relation for `trace`.
    pub fn new(trace: &Trace, facts: &Facts) -> Relations {
        let mut r = Relations::default();
        let n = trace.len() as u32;
        for (i, ev) in trace.events.iter().enumerate() {
            let i = i as u32;
            if i + 1 < n {
                r.trace_next.push((i, i + 1));
            }
            r.thread_for_event.push((i, ev.thread));
            let rel = match ev.op {
                Op::Acquire => &mut r.acq_event,
                Op::Release => &mut r.rel_event,
                Op::Read => &mut r.read_event,
                Op::Write => &mut r.write_event,
                Op::VolatileRead => &mut r.volatile_read_event,
                Op::VolatileWrite => &mut r.volatile_write_event,
                Op::Fork => &mut r.fork_event,
                Op::Join => &mut r.join_event,
                Op::AtomicRead => &mut r.atomic_read_event,
                Op::AtomicWrite => &mut r.atomic_write_event,
                Op::ReentrantAcquire | Op::ReentrantRelease | Op::Request => continue,
            };
            rel.push((i, ev.target));
        }
        for cs in &facts.critical_sections {
            if let Some(rel) = cs.rel {
                r.matching.push((rel, cs.acq));
            }
            r.cs_end.push((cs.acq, cs.end));
            for e in cs.acq..=cs.end {
                if trace.events[e as usize].thread == cs.thread {
                    r.in_cs.push((e, cs.acq));
                }
            }
        }
        r.fork_join_edge.extend(facts.fork_edges.iter().copied());
        r.fork_join_edge.extend(facts.join_edges.iter().copied());
        r
    }
}

/// Feed pair relations into a crepe runtime, one fact type each: every
/// generated program has its own types, so the reference engines name the
/// fields and types and this writes the loops.
/// `feed!(runtime, relations; field => Fact, ...)`.
macro_rules! feed {
    ($rt:expr, $rel:expr; $($field:ident => $fact:ident),* $(,)?) => {
        $( $rt.extend($rel.$field.iter().map(|&(a, b)| $fact(a, b))); )*
    };
}
pub(crate) use feed;

/// [`feed!`] of the inputs `rules/cp.dl` and `rules/wcp.dl` share: events
/// by kind and critical sections (the fact types of the calling program).
macro_rules! feed_sections {
    ($rt:expr, $rel:expr) => {
        $crate::facts::feed!($rt, $rel;
            thread_for_event => ThreadForEvent,
            acq_event => AcqEvent,
            rel_event => RelEvent,
            read_event => ReadEvent,
            write_event => WriteEvent,
            volatile_read_event => VolatileReadEvent,
            volatile_write_event => VolatileWriteEvent,
            atomic_read_event => AtomicReadEvent,
            atomic_write_event => AtomicWriteEvent,
            matching => MatchingCriticalSecBoundary,
            in_cs => InSameCriticalSec,
        )
    };
}
pub(crate) use feed_sections;
