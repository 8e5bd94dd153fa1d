//! `cprace query`: dump a derived relation among synchronization events, dump
//! the CP paper's input facts, and explain why two events are (not) ordered.
//!
//! Each relation plugs in as a [`QueryEngine`]: a dump function (base edges,
//! if the relation has any, then the derived pairs, both streamed to a
//! [`DumpSink`]) and an explain function returning an [`Answer`] whose witness
//! chain is made of [`Step`]s a person can check against the trace. [`engine`]
//! maps a [`Relation`] to its engine; a new relation adds one match arm.

pub mod cp;
pub mod export;
pub mod hb;
pub mod hbpath;
pub mod wcp;

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::facts::CriticalSection;
use crate::relation::Relation;
use crate::report::printable;
use crate::trace::{EventId, Op, Trace};

/// A relation `cprace query` can dump and explain.
pub trait QueryEngine {
    /// Relation name (`hb`, `cp`, `wcp`).
    fn relation(&self) -> &'static str;
    /// The window K the relation was computed with (None: whole trace).
    fn window(&self) -> Option<u64>;
    /// Number of synchronization events (see [`is_sync_event`]).
    fn sync_events(&self) -> usize;
    /// Whether the relation has base edges to dump before its pairs.
    fn has_base_edges(&self) -> bool;
    /// Stream the base edges (sorted by `(from, to)`), then the derived pairs
    /// among synchronization events less than K apart (sorted by `(from, to)`).
    fn dump(&self, sink: &mut dyn DumpSink) -> io::Result<()>;
    /// Whether `e1` is ordered before `e2`, with a witness chain. Both must be
    /// valid event ids (see [`check_event`]).
    fn explain(&self, e1: EventId, e2: EventId) -> Answer;
}

/// The query engine of `relation` over `trace` with window `window`.
pub fn engine<'a>(
    trace: &'a Trace,
    relation: Relation,
    window: Option<u64>,
) -> crate::Result<Box<dyn QueryEngine + 'a>> {
    match relation {
        Relation::Hb => Ok(Box::new(hb::HbQuery::new(trace, window))),
        Relation::Cp => Ok(Box::new(cp::CpQuery::new(trace, window))),
        Relation::Wcp => Ok(Box::new(wcp::WcpQuery::new(trace, window))),
        Relation::Shb => Ok(Box::new(hb::HbQuery::shb(trace, window))),
        Relation::Po => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb (po is thread order only: \
             e1 is ordered before e2 exactly when both are events of one thread and e1 comes first)"
                .into(),
        )),
        Relation::Lockset => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb (lockset is a discipline check, not an order)".into(),
        )),
        Relation::Syncp => Err(crate::Error::Usage(
            "`cprace query` supports --relation hb, cp, wcp and shb; syncp is not an order between \
             events (a pair is a sync-preserving race when some reordering exhibits it), so there is \
             nothing to dump or explain: `cprace analyze --relation syncp --witness` gives each race \
             such a reordering (check it with `cprace verify`)"
                .into(),
        )),
    }
}

/// Synchronization events: acquires, releases, forks, joins and volatile
/// accesses (re-entrant acquires and releases are not: every analysis ignores
/// them). The dumps relate exactly these events.
pub fn is_sync_event(op: Op) -> bool {
    matches!(
        op,
        Op::Acquire | Op::Release | Op::Fork | Op::Join | Op::VolatileRead | Op::VolatileWrite
    )
}

/// A usage error unless `e` is an event id of `trace`.
pub fn check_event(trace: &Trace, e: u64) -> crate::Result<EventId> {
    if e < trace.len() as u64 {
        return Ok(e as EventId);
    }
    Err(crate::Error::Usage(if trace.is_empty() {
        format!("event {e} is not in the trace: it has no events")
    } else {
        format!(
            "event {e} is not in the trace: it has {} events (ids 0 to {})",
            trace.len(),
            trace.len() - 1
        )
    }))
}

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
                relation: engine.relation(),
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
            n.target(&f),
            n.loc(f.loc),
            n.thread(t.thread),
            t.op.as_str(),
            n.target(&t),
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
    from_target: &'a str,
    from_loc: &'a str,
    to_thread: &'a str,
    to_op: &'a str,
    to_target: &'a str,
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
pub fn clock_pairs(
    trace: &Trace,
    sync: &crate::race::cp::sync::SyncPoints,
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

/// One step of a witness chain: `from` is ordered before `to` because of `kind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Source event.
    pub from: EventId,
    /// Target event.
    pub to: EventId,
    /// Why.
    pub kind: Kind,
}

impl Step {
    /// A step `from -> to`.
    pub fn new(from: EventId, to: EventId, kind: Kind) -> Step {
        Step { from, to, kind }
    }
}

/// The kinds of steps. The first five are HB's generating edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Program order: `from` precedes `to` in the same thread (a run of
    /// consecutive program-order edges collapsed into one step).
    Po,
    /// A release of a lock -> a later acquire of it by another thread. On the
    /// HB path of a pair CP does not order, `dropped` says why CP has no edge.
    ReleaseAcquire {
        /// Why no CP rule orders this release before this acquire.
        dropped: Option<Box<Dropped>>,
    },
    /// Fork -> the first event of the forked thread.
    Fork,
    /// The last event of a thread -> the join of it.
    Join,
    /// Volatile write -> a later volatile read of the variable by another
    /// thread; in CP's and WCP's HBv also volatile read or write -> a later
    /// volatile write.
    Volatile,
    /// SHB's reads-from edge: a data write -> a read (by another thread) that
    /// reads its value, i.e. the last earlier write to the variable.
    ReadsFrom,
    /// A base CP edge (composed with HB on both sides, rule (c)).
    Cp(CpEdge),
    /// A base WCP edge (composed with HB on both sides, rule (c)).
    Wcp(WcpEdge),
    /// The window rule (w): `from` happens before `to` (along `hb_path`) and
    /// they are `window` or more events apart.
    Window {
        /// K.
        window: u64,
        /// An HB path from `from` to `to`.
        hb_path: Vec<Step>,
    },
}

impl Kind {
    /// The `kind` name used in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Po => "po",
            Kind::ReleaseAcquire { .. } => "release-acquire",
            Kind::Fork => "fork",
            Kind::Join => "join",
            Kind::Volatile => "volatile",
            Kind::ReadsFrom => "reads-from",
            Kind::Cp(_) => "cp-edge",
            Kind::Wcp(_) => "wcp-edge",
            Kind::Window { .. } => "window",
        }
    }
}

/// A base CP edge `release -> acquire` (or a hard edge) with what justifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpEdge {
    /// Rule (a): the two critical sections hold conflicting accesses `first`
    /// (in `cs1`) and `second` (in `cs2`).
    RuleA {
        /// The earlier critical section (the edge leaves its release).
        cs1: CriticalSection,
        /// The later critical section (the edge enters its acquire).
        cs2: CriticalSection,
        /// Access inside `cs1`.
        first: EventId,
        /// Conflicting access inside `cs2`.
        second: EventId,
    },
    /// Rule (b): `cs1`'s acquire is CP-before `cs2`'s last event, as shown
    /// by justification number `justification` of the answer.
    RuleB {
        /// The earlier critical section.
        cs1: CriticalSection,
        /// The later critical section.
        cs2: CriticalSection,
        /// Index into [`Answer::justifications`].
        justification: usize,
    },
    /// Rule (b) through the window rule: `cs1`'s acquire happens before
    /// `cs2`'s last event (along `hb_path`) and they are K or more apart.
    Window {
        /// The earlier critical section.
        cs1: CriticalSection,
        /// The later critical section.
        cs2: CriticalSection,
        /// K.
        window: u64,
        /// HB path from `cs1.acq` to `cs2.end`.
        hb_path: Vec<Step>,
    },
    /// A hard edge: fork, join or volatile write -> read (`edge` is the HB
    /// step kind).
    Hard {
        /// [`Kind::Fork`], [`Kind::Join`] or [`Kind::Volatile`].
        edge: Box<Kind>,
    },
}

impl CpEdge {
    /// The rule name used in dumps and JSON: `a`, `b`, `window`, `hard`.
    pub fn rule(&self) -> &'static str {
        match self {
            CpEdge::RuleA { .. } => "a",
            CpEdge::RuleB { .. } => "b",
            CpEdge::Window { .. } => "window",
            CpEdge::Hard { .. } => "hard",
        }
    }
}

/// A base WCP edge with what justifies it (Definition 3 of wcp-2017). Unlike
/// CP's, rule (a) edges end at the conflicting access and rule (b) edges at
/// the later release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WcpEdge {
    /// Rule (a): release `cs1.rel` -> access `second` (the step's target)
    /// inside `cs2`, a later critical section on the same lock, because
    /// `cs1` holds `first`, which conflicts with `second`.
    RuleA {
        /// The critical section the edge leaves from its release.
        cs1: CriticalSection,
        /// The critical section (same lock, another thread) holding the target.
        cs2: CriticalSection,
        /// Access inside `cs1`.
        first: EventId,
        /// The target: an access inside `cs2` conflicting with `first`.
        second: EventId,
    },
    /// Rule (b): release of `cs1` -> release of `cs2` (same lock), because
    /// the sections hold WCP-ordered events: `cs1.acq` is WCP-before
    /// `cs2.rel`, as shown by justification number `justification`.
    RuleB {
        /// The earlier critical section.
        cs1: CriticalSection,
        /// The later critical section.
        cs2: CriticalSection,
        /// Index into [`Answer::justifications`].
        justification: usize,
    },
    /// A hard edge: fork, join or volatile write -> read (`edge` is the HB
    /// step kind).
    Hard {
        /// [`Kind::Fork`], [`Kind::Join`] or [`Kind::Volatile`].
        edge: Box<Kind>,
    },
}

impl WcpEdge {
    /// The rule name used in dumps and JSON: `a`, `b`, `hard`.
    pub fn rule(&self) -> &'static str {
        match self {
            WcpEdge::RuleA { .. } => "a",
            WcpEdge::RuleB { .. } => "b",
            WcpEdge::Hard { .. } => "hard",
        }
    }
}

/// Why the relation has no edge along a release -> acquire step of an HB path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The critical section the release ends.
    pub cs1: CriticalSection,
    /// The critical section the acquire starts.
    pub cs2: CriticalSection,
    /// Conflicting accesses found in the two sections (rule (a)); None.
    pub conflict: Option<(EventId, EventId)>,
    /// Whether `cs1.acq` is CP-before `cs2.end` (rule (b)); false.
    pub cp_ordered: bool,
    /// `cp` or `wcp`. For `wcp` the fields mean: `conflict` is the first
    /// access of `cs2` conflicting with one of `cs1` (rule (a) orders the
    /// release before that access, never before the acquire) and
    /// `cp_ordered` whether `cs1.acq` is WCP-before `cs2.rel` (rule (b)
    /// then orders the release before `cs2`'s release). Either may hold on
    /// the HB path of an unordered pair: the access / release they reach
    /// does not happen before the pair's second event.
    pub relation: &'static str,
}

/// The CP-ordered pair a rule (b) edge rests on, with its own chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Justification {
    /// The acquire of the earlier critical section.
    pub from: EventId,
    /// The last event of the later critical section.
    pub to: EventId,
    /// A witness chain from `from` to `to`.
    pub chain: Vec<Step>,
}

/// The answer to `query --pair E1,E2`.
#[derive(Clone, Debug)]
pub struct Answer {
    /// Relation name.
    pub relation: &'static str,
    /// Window K.
    pub window: Option<u64>,
    /// E1.
    pub from: EventId,
    /// E2.
    pub to: EventId,
    /// Whether E1 is ordered before E2.
    pub ordered: bool,
    /// Whether E1 happens before E2 (reflexively).
    pub hb_ordered: bool,
    /// Ordered: a witness chain from E1 to E2. Not ordered but HB-ordered:
    /// the HB path the relation does not keep. Otherwise empty.
    pub chain: Vec<Step>,
    /// Chains of the CP- (WCP-) ordered pairs that rule (b) steps rest on.
    pub justifications: Vec<Justification>,
    /// The verdict and reasoning in words.
    pub explanation: String,
}

impl Answer {
    /// A bare answer for `e1`, `e2`.
    pub fn new(relation: &'static str, window: Option<u64>, e1: EventId, e2: EventId) -> Answer {
        Answer {
            relation,
            window,
            from: e1,
            to: e2,
            ordered: false,
            hb_ordered: false,
            chain: Vec::new(),
            justifications: Vec::new(),
            explanation: String::new(),
        }
    }

    /// The answer as JSON: `{"ordered": .., "chain": [..], ..}`.
    pub fn to_json(&self, trace: &Trace) -> Value {
        json!({
            "relation": self.relation,
            "window": self.window,
            "from": self.from,
            "to": self.to,
            "ordered": self.ordered,
            "hb_ordered": self.hb_ordered,
            "from_event": event_json(trace, self.from),
            "to_event": event_json(trace, self.to),
            "chain": chain_json(trace, &self.chain),
            "justifications": self.justifications.iter().enumerate().map(|(i, j)| json!({
                "id": i,
                "from": j.from,
                "to": j.to,
                "chain": chain_json(trace, &j.chain),
            })).collect::<Vec<_>>(),
            "explanation": self.explanation,
        })
    }

    /// The answer as readable text: verdict, numbered chain, justifications.
    pub fn write_text(&self, trace: &Trace, out: &mut dyn Write) -> io::Result<()> {
        let window = self
            .window
            .map_or(String::new(), |k| format!(", window {k}"));
        writeln!(
            out,
            "{}{window}: event {} is {}ordered before event {}",
            self.relation,
            self.from,
            if self.ordered { "" } else { "NOT " },
            self.to
        )?;
        for e in [self.from, self.to] {
            writeln!(out, "  {}", long_event(trace, e))?;
        }
        if !self.chain.is_empty() {
            writeln!(
                out,
                "{}",
                if self.ordered {
                    "witness chain:"
                } else {
                    "HB path (not kept by this relation):"
                }
            )?;
            write_chain(trace, &self.chain, "  ", out)?;
        }
        for (i, j) in self.justifications.iter().enumerate() {
            writeln!(
                out,
                "justification J{i}: {} is {}-before {}:",
                show(trace, j.from),
                self.relation.to_uppercase(),
                show(trace, j.to)
            )?;
            write_chain(trace, &j.chain, "  ", out)?;
        }
        writeln!(out, "{}", self.explanation)
    }
}

/// `#3 T1 rel(l)`.
pub fn show(trace: &Trace, e: EventId) -> String {
    let ev = trace.events[e as usize];
    // Names are escaped: text output never carries a trace's control characters.
    format!(
        "#{e} {} {}({})",
        printable(trace.names.thread(ev.thread)),
        ev.op.as_str(),
        printable(trace.names.target(&ev))
    )
}

fn long_event(trace: &Trace, e: EventId) -> String {
    let ev = trace.events[e as usize];
    let loc = trace.names.loc(ev.loc);
    format!(
        "event {e}: thread {}, {}({}){}",
        printable(trace.names.thread(ev.thread)),
        ev.op.as_str(),
        printable(trace.names.target(&ev)),
        if loc.is_empty() {
            String::new()
        } else {
            format!(" at {}", printable(loc))
        }
    )
}

/// `#1..#3 of T1` (or `#1..#9 of T1, never released`).
fn show_cs(trace: &Trace, cs: &CriticalSection) -> String {
    format!(
        "#{}..#{} of {}{}",
        cs.acq,
        cs.end,
        printable(trace.names.thread(cs.thread)),
        if cs.rel.is_none() {
            ", never released"
        } else {
            ""
        }
    )
}

fn write_chain(trace: &Trace, chain: &[Step], indent: &str, out: &mut dyn Write) -> io::Result<()> {
    for (i, s) in chain.iter().enumerate() {
        writeln!(
            out,
            "{indent}{}. {} -> {}: {}",
            i + 1,
            show(trace, s.from),
            show(trace, s.to),
            step_text(trace, s)
        )?;
        let sub = format!("{indent}     ");
        match &s.kind {
            Kind::ReleaseAcquire { dropped: Some(d) } if d.relation == "wcp" => {
                writeln!(out, "{sub}{}", wcp_dropped_text(trace, d))?;
            }
            Kind::ReleaseAcquire { dropped: Some(d) } => {
                writeln!(
                    out,
                    "{sub}no CP edge: critical sections {} and {} on lock {} hold {} (rule (a)) and {} (rule (b))",
                    show_cs(trace, &d.cs1),
                    show_cs(trace, &d.cs2),
                    printable(trace.names.lock(d.cs1.lock)),
                    match d.conflict {
                        None => "no conflicting accesses".to_string(),
                        Some((a, b)) => format!(
                            "conflicting accesses {} and {}",
                            show(trace, a),
                            show(trace, b)
                        ),
                    },
                    if d.cp_ordered {
                        format!("#{} is CP-before #{}", d.cs1.acq, d.cs2.end)
                    } else {
                        format!(
                            "no CP-ordered events: #{} is not CP-before #{}",
                            d.cs1.acq, d.cs2.end
                        )
                    }
                )?;
            }
            Kind::Window { hb_path, .. } | Kind::Cp(CpEdge::Window { hb_path, .. }) => {
                writeln!(out, "{sub}HB path:")?;
                write_chain(trace, hb_path, &format!("{sub}  "), out)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `x`, `y` are conflicting volatile accesses of different threads
/// (same variable, at least one a write): a hard CP/WCP edge when `x` is first.
pub fn volatile_conflict(x: &crate::trace::Event, y: &crate::trace::Event) -> bool {
    let vol = |op: Op| matches!(op, Op::VolatileRead | Op::VolatileWrite);
    vol(x.op)
        && vol(y.op)
        && x.target == y.target
        && x.thread != y.thread
        && (x.op == Op::VolatileWrite || y.op == Op::VolatileWrite)
}

fn step_text(trace: &Trace, s: &Step) -> String {
    let n = &trace.names;
    let ev = |e: EventId| trace.events[e as usize];
    match &s.kind {
        Kind::Po => format!("program order in {}", n.thread(ev(s.from).thread)),
        Kind::ReleaseAcquire { .. } => {
            format!("release -> acquire of lock {}", n.lock(ev(s.to).target))
        }
        Kind::Fork => format!("fork of {} -> its first event", n.thread(ev(s.to).thread)),
        Kind::Join => format!("last event of {} -> join", n.thread(ev(s.from).thread)),
        Kind::Volatile => {
            let op = |e: EventId| {
                if ev(e).op == Op::VolatileWrite {
                    "write"
                } else {
                    "read"
                }
            };
            format!(
                "volatile {} -> {} of {} by another thread",
                op(s.from),
                op(s.to),
                n.var(ev(s.to).target)
            )
        }
        Kind::ReadsFrom => format!(
            "reads-from: {}'s read of {} reads this write's value",
            n.thread(ev(s.to).thread),
            n.var(ev(s.to).target)
        ),
        Kind::Window { window, .. } => format!(
            "window rule (w): HB-ordered and {} >= {window} events apart",
            s.to - s.from
        ),
        Kind::Cp(edge) => match edge {
            CpEdge::RuleA {
                cs1,
                cs2,
                first,
                second,
            } => format!(
                "CP edge by rule (a): critical sections {} and {} on lock {} hold conflicting accesses {} and {}",
                show_cs(trace, cs1),
                show_cs(trace, cs2),
                n.lock(cs1.lock),
                show(trace, *first),
                show(trace, *second)
            ),
            CpEdge::RuleB {
                cs1,
                cs2,
                justification,
            } => format!(
                "CP edge by rule (b): critical sections {} and {} on lock {} hold CP-ordered events: #{} is CP-before #{} (justification J{justification})",
                show_cs(trace, cs1),
                show_cs(trace, cs2),
                n.lock(cs1.lock),
                cs1.acq,
                cs2.end
            ),
            CpEdge::Window {
                cs1, cs2, window, ..
            } => format!(
                "CP edge by rule (b) through the window rule: critical sections {} and {} on lock {}; #{} happens before #{} and they are {} >= {window} events apart, so #{} is CP-before #{} (rule (w))",
                show_cs(trace, cs1),
                show_cs(trace, cs2),
                n.lock(cs1.lock),
                cs1.acq,
                cs2.end,
                cs2.end - cs1.acq,
                cs1.acq,
                cs2.end
            ),
            CpEdge::Hard { edge } => format!(
                "hard CP edge: {}",
                step_text(trace, &Step::new(s.from, s.to, (**edge).clone()))
            ),
        },
        Kind::Wcp(edge) => match edge {
            WcpEdge::RuleA {
                cs1,
                cs2,
                first,
                second,
            } => format!(
                "WCP edge by rule (a): critical section {} on lock {} holds {}, which conflicts with {} inside the later critical section {}",
                show_cs(trace, cs1),
                n.lock(cs1.lock),
                show(trace, *first),
                show(trace, *second),
                show_cs(trace, cs2)
            ),
            WcpEdge::RuleB {
                cs1,
                cs2,
                justification,
            } => format!(
                "WCP edge by rule (b): critical sections {} and {} on lock {} hold WCP-ordered events: #{} is WCP-before #{} (justification J{justification})",
                show_cs(trace, cs1),
                show_cs(trace, cs2),
                n.lock(cs1.lock),
                cs1.acq,
                cs2.end
            ),
            WcpEdge::Hard { edge } => format!(
                "hard WCP edge: {}",
                step_text(trace, &Step::new(s.from, s.to, (**edge).clone()))
            ),
        },
    }
}

/// The explanation of a pair that HB orders but `relation` (`CP`, `WCP`)
/// does not: no base edge `(u, v)` (named `edge`) lies between them, and then
/// either the HB path `path` is program order only, or `steps` says why its
/// release -> acquire steps are no edges (it gets the subject of that
/// sentence, e.g. "Each of the 2 release -> acquire steps on the path").
pub fn hb_only_text(
    trace: &Trace,
    relation: &str,
    (u, v): (&str, &str),
    (e1, e2): (EventId, EventId),
    path: &[Step],
    steps: impl FnOnce(&str) -> String,
) -> String {
    let (x, y) = (show(trace, e1), show(trace, e2));
    let mut s = format!(
        "not ordered by {relation}: {x} happens before {y} (the HB path above), but no base {relation} \
         edge ({u}, {v}) has {x} <=HB {u} and {v} <=HB {y}, so rule (c) cannot order them."
    );
    let same_thread = trace.events[e1 as usize].thread == trace.events[e2 as usize].thread;
    let syncs = path
        .iter()
        .filter(|s| matches!(s.kind, Kind::ReleaseAcquire { .. }))
        .count();
    if same_thread && syncs == 0 {
        s += &format!(
            " The path is program order only, which {relation} does not contain (races are checked \
             against {relation} together with thread order, so events of one thread never race)."
        );
    } else if syncs == 1 {
        s += &steps("The release -> acquire step on the path");
    } else {
        s += &steps(&format!(
            "Each of the {syncs} release -> acquire steps on the path"
        ));
    }
    s
}

/// Why a release -> acquire step of an HB path is no WCP edge (reaching the
/// pair's second event).
fn wcp_dropped_text(trace: &Trace, d: &Dropped) -> String {
    let rule_a = match d.conflict {
        None => format!(
            "no access of {} conflicts with one of {}, so rule (a) orders #{} before none of them",
            show_cs(trace, &d.cs2),
            show_cs(trace, &d.cs1),
            d.cs1.end
        ),
        Some((a, b)) => format!(
            "rule (a) orders #{} only before {} (conflicting with {}) and later events, not before the acquire, and {} does not happen before the pair's second event",
            d.cs1.end,
            show(trace, b),
            show(trace, a),
            show(trace, b)
        ),
    };
    let rule_b = match d.cs2.rel {
        Some(rel) if d.cp_ordered => format!(
            "#{} is WCP-before #{rel}, so rule (b) orders #{} before that release, which does not happen before the pair's second event",
            d.cs1.acq, d.cs1.end
        ),
        Some(rel) => format!(
            "#{} is not WCP-before #{rel}, so rule (b) does not apply",
            d.cs1.acq
        ),
        None => "the second section is never released, so rule (b) does not apply".to_string(),
    };
    format!(
        "no WCP edge: critical sections {} and {} on lock {}: {rule_a}; {rule_b}",
        show_cs(trace, &d.cs1),
        show_cs(trace, &d.cs2),
        printable(trace.names.lock(d.cs1.lock))
    )
}

/// `{"id", "thread", "op", "target", "loc"}` of event `e`.
pub fn event_json(trace: &Trace, e: EventId) -> Value {
    let ev = trace.events[e as usize];
    json!({
        "id": e,
        "thread": trace.names.thread(ev.thread),
        "op": ev.op.as_str(),
        "target": trace.names.target(&ev),
        "loc": trace.names.loc(ev.loc),
    })
}

fn cs_json(trace: &Trace, cs: &CriticalSection) -> Value {
    json!({
        "lock": trace.names.lock(cs.lock),
        "thread": trace.names.thread(cs.thread),
        "acq": cs.acq,
        "rel": cs.rel,
        "end": cs.end,
    })
}

fn chain_json(trace: &Trace, chain: &[Step]) -> Vec<Value> {
    chain.iter().map(|s| step_json(trace, s)).collect()
}

fn step_json(trace: &Trace, s: &Step) -> Value {
    let n = &trace.names;
    let ev = |e: EventId| trace.events[e as usize];
    let mut v = json!({
        "from": s.from,
        "to": s.to,
        "kind": s.kind.name(),
    });
    let details = match &s.kind {
        Kind::Po => json!({"thread": n.thread(ev(s.from).thread)}),
        Kind::ReleaseAcquire { dropped } => {
            let mut d = json!({"lock": n.lock(ev(s.to).target)});
            if let Some(dr) = dropped.as_ref().filter(|d| d.relation == "wcp") {
                d["wcp_dropped"] = json!({
                    "cs1": cs_json(trace, &dr.cs1),
                    "cs2": cs_json(trace, &dr.cs2),
                    "conflicting_accesses": dr.conflict.map(|(a, b)| [a, b]),
                    "wcp_ordered_events": dr.cp_ordered,
                    "reason": "WCP has no release -> acquire edges: rule (a) orders the release only before the accesses of the second section conflicting with the first (`conflicting_accesses` names the earliest, if any), rule (b) only before the second section's release (when the first section's acquire is WCP-before it: `wcp_ordered_events`), and neither of those happens before the pair's second event",
                });
            } else if let Some(dr) = dropped {
                d["cp_dropped"] = json!({
                    "cs1": cs_json(trace, &dr.cs1),
                    "cs2": cs_json(trace, &dr.cs2),
                    "conflicting_accesses": dr.conflict.map(|(a, b)| [a, b]),
                    "cp_ordered_events": dr.cp_ordered,
                    "reason": "no rule produces a CP edge here: the critical sections hold no conflicting accesses (rule (a)) and the acquire of the first is not CP-before the end of the second (rule (b))",
                });
            }
            d
        }
        Kind::Fork => json!({"child": n.thread(ev(s.to).thread)}),
        Kind::Join => json!({"child": n.thread(ev(s.from).thread)}),
        Kind::Volatile | Kind::ReadsFrom => json!({"variable": n.var(ev(s.to).target)}),
        Kind::Window { window, hb_path } => json!({
            "window": window,
            "distance": s.to - s.from,
            "hb_path": chain_json(trace, hb_path),
        }),
        Kind::Cp(edge) => {
            v["rule"] = json!(edge.rule());
            match edge {
                CpEdge::RuleA {
                    cs1,
                    cs2,
                    first,
                    second,
                } => json!({
                    "lock": n.lock(cs1.lock),
                    "cs1": cs_json(trace, cs1),
                    "cs2": cs_json(trace, cs2),
                    "conflict": [event_json(trace, *first), event_json(trace, *second)],
                }),
                CpEdge::RuleB {
                    cs1,
                    cs2,
                    justification,
                } => json!({
                    "lock": n.lock(cs1.lock),
                    "cs1": cs_json(trace, cs1),
                    "cs2": cs_json(trace, cs2),
                    "cp_pair": {"from": cs1.acq, "to": cs2.end},
                    "justification": justification,
                }),
                CpEdge::Window {
                    cs1,
                    cs2,
                    window,
                    hb_path,
                } => json!({
                    "lock": n.lock(cs1.lock),
                    "cs1": cs_json(trace, cs1),
                    "cs2": cs_json(trace, cs2),
                    "cp_pair": {"from": cs1.acq, "to": cs2.end},
                    "window": window,
                    "distance": cs2.end - cs1.acq,
                    "hb_path": chain_json(trace, hb_path),
                }),
                CpEdge::Hard { edge } => {
                    let inner = step_json(trace, &Step::new(s.from, s.to, (**edge).clone()));
                    let mut d = inner["details"].clone();
                    d["edge"] = json!(edge.name());
                    d
                }
            }
        }
        Kind::Wcp(edge) => {
            v["rule"] = json!(edge.rule());
            match edge {
                WcpEdge::RuleA {
                    cs1,
                    cs2,
                    first,
                    second,
                } => json!({
                    "lock": n.lock(cs1.lock),
                    "cs1": cs_json(trace, cs1),
                    "cs2": cs_json(trace, cs2),
                    "conflict": [event_json(trace, *first), event_json(trace, *second)],
                }),
                WcpEdge::RuleB {
                    cs1,
                    cs2,
                    justification,
                } => json!({
                    "lock": n.lock(cs1.lock),
                    "cs1": cs_json(trace, cs1),
                    "cs2": cs_json(trace, cs2),
                    "wcp_pair": {"from": cs1.acq, "to": cs2.end},
                    "justification": justification,
                }),
                WcpEdge::Hard { edge } => {
                    let inner = step_json(trace, &Step::new(s.from, s.to, (**edge).clone()));
                    let mut d = inner["details"].clone();
                    d["edge"] = json!(edge.name());
                    d
                }
            }
        }
    };
    v["from_event"] = event_json(trace, s.from);
    v["to_event"] = event_json(trace, s.to);
    v["details"] = details;
    v
}

/// What `cprace query` was asked.
#[derive(Clone, Debug)]
pub enum Request {
    /// Dump the relation.
    Dump(DumpFormat),
    /// Explain one pair; `json` selects JSON over text.
    Pair {
        /// E1 as given.
        from: u64,
        /// E2 as given.
        to: u64,
        /// JSON output.
        json: bool,
    },
}

/// Run a relation query on a loaded trace, writing to `out`.
pub fn run(
    trace: &Trace,
    relation: Relation,
    window: Option<u64>,
    request: &Request,
    out: &mut dyn Write,
) -> crate::Result<()> {
    match *request {
        Request::Pair { from, to, json } => {
            // Check the events before computing anything.
            let (e1, e2) = (check_event(trace, from)?, check_event(trace, to)?);
            let answer = engine(trace, relation, window)?.explain(e1, e2);
            if json {
                serde_json::to_writer_pretty(&mut *out, &answer.to_json(trace))
                    .map_err(io::Error::from)?;
                writeln!(out)?;
            } else {
                answer.write_text(trace, out)?;
            }
        }
        Request::Dump(format) => {
            let engine = engine(trace, relation, window)?;
            write_dump(trace, engine.as_ref(), format, out)?;
        }
    }
    Ok(())
}
