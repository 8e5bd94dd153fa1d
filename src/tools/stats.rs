//! `cprace stats`: counts over a trace, computed while streaming it.

use serde_json::{Value, json};

use crate::trace::{Event, EventId, LoadStats, Names, Op};

/// Event counts by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Events of each [`Op`], indexed by `op as usize` (one increment per
    /// event instead of a branch per kind).
    by_op: [u64; OPS],
    /// Data reads and writes made while their thread held at least one lock.
    accesses_under_locks: u64,
    /// Data reads whose value another thread wrote (the last earlier write
    /// to the variable is another thread's): the reads-from edges schedulable
    /// HB adds to HB.
    reads_from_other_threads: u64,
    /// Locks each thread holds right now (re-entrant acquires not counted).
    held: Vec<u32>,
    /// Per variable, the thread of its last data write.
    last_writer: Vec<u32>,
}

/// Number of [`Op`] kinds.
const OPS: usize = Op::Request as usize + 1;

/// No write yet, in [`Counts::last_writer`].
const NO_WRITER: u32 = u32::MAX;

impl Counts {
    /// Count one event.
    #[inline]
    pub fn add(&mut self, _id: EventId, ev: &Event) {
        self.by_op[ev.op as usize] += 1;
        let t = ev.thread as usize;
        if self.held.len() <= t {
            self.held.resize(t + 1, 0);
        }
        let held = &mut self.held[t];
        match ev.op {
            Op::Read => {
                self.accesses_under_locks += u64::from(*held > 0);
                let w = self.last_writer.get(ev.target as usize).copied();
                self.reads_from_other_threads +=
                    u64::from(w.is_some_and(|w| w != NO_WRITER && w != ev.thread));
            }
            Op::Write => {
                self.accesses_under_locks += u64::from(*held > 0);
                let x = ev.target as usize;
                if self.last_writer.len() <= x {
                    self.last_writer.resize(x + 1, NO_WRITER);
                }
                self.last_writer[x] = ev.thread;
            }
            Op::Acquire => *held += 1,
            Op::Release => *held = held.saturating_sub(1),
            _ => {}
        }
    }

    /// Events of kind `op`.
    fn of(&self, op: Op) -> u64 {
        self.by_op[op as usize]
    }

    /// All events.
    pub fn events(&self) -> u64 {
        self.by_op.iter().sum()
    }
}

/// The stats of a trace as a JSON object (also the source of the text form).
pub fn to_json(c: &Counts, names: &Names, load: &LoadStats) -> Value {
    json!({
        "events": c.events(),
        "threads": names.threads.len(),
        "locks": names.locks.len(),
        "variables": names.vars.len(),
        "locations": names.locs.len() - 1,
        "acquires": c.of(Op::Acquire),
        "releases": c.of(Op::Release),
        "reads": c.of(Op::Read),
        "writes": c.of(Op::Write),
        "forks": c.of(Op::Fork),
        "joins": c.of(Op::Join),
        "volatile_accesses": c.of(Op::VolatileRead) + c.of(Op::VolatileWrite),
        "accesses_under_locks": c.accesses_under_locks,
        "reads_from_other_threads": c.reads_from_other_threads,
        "max_nesting_depth": load.max_nesting,
        "reentrant_acquires_filtered": load.reentrant_acquires,
        "out_of_nesting_releases": load.out_of_nesting_releases,
        "unreleased_at_end": load.unreleased_at_end,
    })
}

/// Text form: one `key: value` line each, with warnings for unusual lock use.
pub fn to_text(v: &Value) -> String {
    let mut s = String::new();
    if let Value::Object(m) = v {
        for (k, val) in m {
            s.push_str(&format!("{k}: {val}\n"));
        }
        let count = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        let n = count("out_of_nesting_releases");
        if n > 0 {
            s.push_str(&format!("warning: {n} release{} out of nesting order (legal for java.util.concurrent locks); every analysis pairs each release with its own acquire\n", if n == 1 { " is" } else { "s are" }));
        }
        let n = count("unreleased_at_end");
        if n > 0 {
            s.push_str(&format!("note: {n} critical section{} still open at the end of the trace; each extends to its thread's last event\n", if n == 1 { " is" } else { "s are" }));
        }
        let n = count("reentrant_acquires_filtered");
        if n > 0 {
            let (what, verb) = if n == 1 {
                (
                    "re-entrant acquire (of a lock already held) and its release",
                    "is",
                )
            } else {
                (
                    "re-entrant acquires (of locks already held) and their releases",
                    "are",
                )
            };
            s.push_str(&format!(
                "note: {n} {what} {verb} ignored by every analysis\n"
            ));
        }
    }
    s
}
