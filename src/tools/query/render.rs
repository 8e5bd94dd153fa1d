//! The explanation of a pair, printed: readable text and JSON. Both print the
//! same reading of each step ([`Shown`]): the sentence the text gives it and
//! the details JSON gives it are made together, from one look at the step.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::explain::{Answer, CpEdge, Dropped, Kind, Step, WcpEdge};
use crate::facts::CriticalSection;
use crate::relation::Relation;
use crate::report::printable;
use crate::trace::{EventId, Op, Trace};

/// One step as both renderers print it.
struct Shown<'a> {
    /// The text's sentence for the step.
    sentence: String,
    /// The rule of a base CP or WCP edge (JSON's `rule`).
    rule: Option<&'static str>,
    /// JSON's `details`.
    details: Details<'a>,
}

/// What a step names, resolved against the trace, in the order JSON lists it.
#[derive(Default, Serialize)]
struct Details<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    child: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    variable: Option<std::borrow::Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lock: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cp_dropped: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wcp_dropped: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cs1: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cs2: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conflict: Option<[Value; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cp_pair: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wcp_pair: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    justification: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    distance: Option<EventId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hb_path: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edge: Option<&'static str>,
}

impl<'a> Details<'a> {
    /// Details naming the thread of a program-order step.
    fn of_thread(thread: &'a str) -> Details<'a> {
        Details {
            thread: Some(thread),
            ..Details::default()
        }
    }

    /// Details naming the thread a fork starts or a join ends.
    fn child(child: &'a str) -> Details<'a> {
        Details {
            child: Some(child),
            ..Details::default()
        }
    }

    /// Details naming the variable of a volatile or reads-from step.
    fn variable(variable: std::borrow::Cow<'a, str>) -> Details<'a> {
        Details {
            variable: Some(variable),
            ..Details::default()
        }
    }
}

/// A base edge's critical sections and lock, as both renderers name them.
fn sections<'a>(trace: &'a Trace, cs1: &CriticalSection, cs2: &CriticalSection) -> Details<'a> {
    Details {
        lock: Some(trace.names.lock(cs1.lock)),
        cs1: Some(cs_json(trace, cs1)),
        cs2: Some(cs_json(trace, cs2)),
        ..Details::default()
    }
}

/// Rule (a)'s details: the two sections and their conflicting accesses.
fn conflict<'a>(
    trace: &'a Trace,
    cs1: &CriticalSection,
    cs2: &CriticalSection,
    first: EventId,
    second: EventId,
) -> Details<'a> {
    Details {
        conflict: Some([event_json(trace, first), event_json(trace, second)]),
        ..sections(trace, cs1, cs2)
    }
}

/// A rule (b) edge of `relation` (CP or WCP): the sections hold events the
/// relation orders (`cs1`'s acquire before `cs2`'s end), shown by
/// justification number `justification`. Its sentence and details.
fn rule_b<'a>(
    trace: &'a Trace,
    relation: Relation,
    cs1: &CriticalSection,
    cs2: &CriticalSection,
    justification: usize,
) -> (String, Details<'a>) {
    let r = relation.name().to_uppercase();
    let sentence = format!(
        "{r} edge by rule (b): critical sections {} and {} on lock {} hold {r}-ordered events: #{} is {r}-before #{} (justification J{justification})",
        show_cs(trace, cs1),
        show_cs(trace, cs2),
        trace.names.lock(cs1.lock),
        cs1.acq,
        cs2.end
    );
    let pair = Some(json!({"from": cs1.acq, "to": cs2.end}));
    let mut details = sections(trace, cs1, cs2);
    if relation == Relation::Cp {
        details.cp_pair = pair;
    } else {
        details.wcp_pair = pair;
    }
    details.justification = Some(justification);
    (sentence, details)
}

/// Step `s` read once: its sentence, rule and details.
fn shown<'a>(trace: &'a Trace, s: &Step) -> Shown<'a> {
    let n = &trace.names;
    let ev = |e: EventId| trace.events[e as usize];
    let plain = |sentence: String, details: Details<'a>| Shown {
        sentence,
        rule: None,
        details,
    };
    let edge = |rule: &'static str, sentence: String, details: Details<'a>| Shown {
        sentence,
        rule: Some(rule),
        details,
    };
    // A hard edge reads as the HB step it is, named in `edge`.
    let hard = |relation: &str, kind: &Kind| {
        let inner = shown(trace, &Step::new(s.from, s.to, kind.clone()));
        let sentence = format!("hard {relation} edge: {}", inner.sentence);
        let details = Details {
            edge: Some(kind.name()),
            ..inner.details
        };
        (sentence, details)
    };
    match &s.kind {
        Kind::Po => {
            let thread = n.thread(ev(s.from).thread);
            plain(
                format!("program order in {thread}"),
                Details::of_thread(thread),
            )
        }
        Kind::ReleaseAcquire { dropped } => {
            let lock = n.lock(ev(s.to).target);
            let mut details = Details {
                lock: Some(lock),
                ..Details::default()
            };
            match dropped.as_deref() {
                Some(d) if d.relation == Relation::Wcp => {
                    details.wcp_dropped = Some(json!({
                        "cs1": cs_json(trace, &d.cs1),
                        "cs2": cs_json(trace, &d.cs2),
                        "conflicting_accesses": d.conflict.map(|(a, b)| [a, b]),
                        "wcp_ordered_events": d.cp_ordered,
                        "reason": "WCP has no release -> acquire edges: rule (a) orders the release only before the accesses of the second section conflicting with the first (`conflicting_accesses` names the earliest, if any), rule (b) only before the second section's release (when the first section's acquire is WCP-before it: `wcp_ordered_events`), and neither of those happens before the pair's second event",
                    }));
                }
                Some(d) => {
                    details.cp_dropped = Some(json!({
                        "cs1": cs_json(trace, &d.cs1),
                        "cs2": cs_json(trace, &d.cs2),
                        "conflicting_accesses": d.conflict.map(|(a, b)| [a, b]),
                        "cp_ordered_events": d.cp_ordered,
                        "reason": "no rule produces a CP edge here: the critical sections hold no conflicting accesses (rule (a)) and the acquire of the first is not CP-before the end of the second (rule (b))",
                    }));
                }
                None => {}
            }
            plain(format!("release -> acquire of lock {lock}"), details)
        }
        Kind::Fork => {
            let child = n.thread(ev(s.to).thread);
            plain(
                format!("fork of {child} -> its first event"),
                Details::child(child),
            )
        }
        Kind::Join => {
            let child = n.thread(ev(s.from).thread);
            plain(
                format!("last event of {child} -> join"),
                Details::child(child),
            )
        }
        Kind::Atomic => {
            let op = |e: EventId| match ev(e).op {
                Op::AtomicWrite => "relaxed write",
                Op::AtomicRead => "relaxed read",
                Op::VolatileWrite => "volatile write",
                _ => "volatile read",
            };
            let variable = n.var(ev(s.to).target);
            plain(
                format!(
                    "atomic {} -> {} of {variable} by another thread, already happens-before ordered",
                    op(s.from),
                    op(s.to)
                ),
                Details::variable(variable),
            )
        }
        Kind::Volatile => {
            let op = |e: EventId| {
                if ev(e).op == Op::VolatileWrite {
                    "write"
                } else {
                    "read"
                }
            };
            let variable = n.var(ev(s.to).target);
            plain(
                format!(
                    "volatile {} -> {} of {variable} by another thread",
                    op(s.from),
                    op(s.to)
                ),
                Details::variable(variable),
            )
        }
        Kind::ReadsFrom => {
            let variable = n.var(ev(s.to).target);
            plain(
                format!(
                    "reads-from: {}'s read of {variable} reads this write's value",
                    n.thread(ev(s.to).thread)
                ),
                Details::variable(variable),
            )
        }
        Kind::Window { window, hb_path } => plain(
            format!(
                "window rule (w): HB-ordered and {} >= {window} events apart",
                s.to - s.from
            ),
            Details {
                window: Some(*window),
                distance: Some(s.to - s.from),
                hb_path: Some(chain_json(trace, hb_path)),
                ..Details::default()
            },
        ),
        Kind::Cp(e) => match e {
            CpEdge::RuleA {
                cs1,
                cs2,
                first,
                second,
            } => edge(
                e.rule(),
                format!(
                    "CP edge by rule (a): critical sections {} and {} on lock {} hold conflicting accesses {} and {}",
                    show_cs(trace, cs1),
                    show_cs(trace, cs2),
                    n.lock(cs1.lock),
                    show(trace, *first),
                    show(trace, *second)
                ),
                conflict(trace, cs1, cs2, *first, *second),
            ),
            CpEdge::RuleB {
                cs1,
                cs2,
                justification,
            } => {
                let (sentence, details) = rule_b(trace, Relation::Cp, cs1, cs2, *justification);
                edge(e.rule(), sentence, details)
            }
            CpEdge::Window {
                cs1,
                cs2,
                window,
                hb_path,
            } => edge(
                e.rule(),
                format!(
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
                Details {
                    cp_pair: Some(json!({"from": cs1.acq, "to": cs2.end})),
                    window: Some(*window),
                    distance: Some(cs2.end - cs1.acq),
                    hb_path: Some(chain_json(trace, hb_path)),
                    ..sections(trace, cs1, cs2)
                },
            ),
            CpEdge::Hard { edge: kind } => {
                let (sentence, details) = hard("CP", kind);
                edge(e.rule(), sentence, details)
            }
        },
        Kind::Wcp(e) => match e {
            WcpEdge::RuleA {
                cs1,
                cs2,
                first,
                second,
            } => edge(
                e.rule(),
                format!(
                    "WCP edge by rule (a): critical section {} on lock {} holds {}, which conflicts with {} inside the later critical section {}",
                    show_cs(trace, cs1),
                    n.lock(cs1.lock),
                    show(trace, *first),
                    show(trace, *second),
                    show_cs(trace, cs2)
                ),
                conflict(trace, cs1, cs2, *first, *second),
            ),
            WcpEdge::RuleB {
                cs1,
                cs2,
                justification,
            } => {
                let (sentence, details) = rule_b(trace, Relation::Wcp, cs1, cs2, *justification);
                edge(e.rule(), sentence, details)
            }
            WcpEdge::Hard { edge: kind } => {
                let (sentence, details) = hard("WCP", kind);
                edge(e.rule(), sentence, details)
            }
        },
    }
}

/// A step in JSON: its events, kind, rule and details.
fn step_json(trace: &Trace, s: &Step) -> Value {
    let Shown { rule, details, .. } = shown(trace, s);
    let mut v = json!({
        "from": s.from,
        "to": s.to,
        "kind": s.kind.name(),
    });
    if let Some(rule) = rule {
        v["rule"] = json!(rule);
    }
    v["from_event"] = event_json(trace, s.from);
    v["to_event"] = event_json(trace, s.to);
    v["details"] = serde_json::to_value(details).expect("details are plain data");
    v
}

fn chain_json(trace: &Trace, chain: &[Step]) -> Vec<Value> {
    chain.iter().map(|s| step_json(trace, s)).collect()
}

impl Answer {
    /// The answer as JSON: `{"ordered": .., "chain": [..], ..}`.
    pub fn to_json(&self, trace: &Trace) -> Value {
        json!({
            "relation": self.relation.name(),
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
    pub(crate) fn write_text(&self, trace: &Trace, out: &mut dyn Write) -> io::Result<()> {
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
                self.relation.name().to_uppercase(),
                show(trace, j.to)
            )?;
            write_chain(trace, &j.chain, "  ", out)?;
        }
        writeln!(out, "{}", self.explanation)
    }
}

/// `#3 T1 rel(l)`.
pub(crate) fn show(trace: &Trace, e: EventId) -> String {
    let ev = trace.events[e as usize];
    // Names are escaped: text output never carries a trace's control characters.
    format!(
        "#{e} {} {}({})",
        printable(trace.names.thread(ev.thread)),
        ev.op.as_str(),
        printable(&trace.names.target(&ev))
    )
}

fn long_event(trace: &Trace, e: EventId) -> String {
    let ev = trace.events[e as usize];
    let loc = trace.names.loc(ev.loc);
    format!(
        "event {e}: thread {}, {}({}){}",
        printable(trace.names.thread(ev.thread)),
        ev.op.as_str(),
        printable(&trace.names.target(&ev)),
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
            shown(trace, s).sentence
        )?;
        let sub = format!("{indent}     ");
        match &s.kind {
            Kind::ReleaseAcquire { dropped: Some(d) } if d.relation == Relation::Wcp => {
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

/// The explanation of a pair that HB orders but `relation` (`CP`, `WCP`)
/// does not: no base edge `(u, v)` (named `edge`) lies between them, and then
/// either the HB path `path` is program order only, or `steps` says why its
/// release -> acquire steps are no edges (it gets the subject of that
/// sentence, e.g. "Each of the 2 release -> acquire steps on the path").
pub(crate) fn hb_only_text(
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
pub(crate) fn event_json(trace: &Trace, e: EventId) -> Value {
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
