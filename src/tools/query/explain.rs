//! The explanation of a pair: whether the relation orders it, and a witness
//! chain of steps a person can check against the trace, with what justifies
//! each base edge (or why the relation has none along an HB path).

use crate::facts::CriticalSection;
use crate::relation::Relation;
use crate::trace::EventId;

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
    /// Two atomic accesses of a variable by different threads, at least one
    /// a write and one relaxed, that HBv already orders (CP and WCP keep
    /// them; the latest source of its thread).
    Atomic,
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
            Kind::Atomic => "atomic",
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
    /// CP or WCP. For WCP the fields mean: `conflict` is the first
    /// access of `cs2` conflicting with one of `cs1` (rule (a) orders the
    /// release before that access, never before the acquire) and
    /// `cp_ordered` whether `cs1.acq` is WCP-before `cs2.rel` (rule (b)
    /// then orders the release before `cs2`'s release). Either may hold on
    /// the HB path of an unordered pair: the access / release they reach
    /// does not happen before the pair's second event.
    pub relation: Relation,
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
    /// The relation.
    pub relation: Relation,
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
    pub fn new(relation: Relation, window: Option<u64>, e1: EventId, e2: EventId) -> Answer {
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
}
