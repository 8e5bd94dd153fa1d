//! `cprace stats`: counts over a trace, computed while streaming it.

use serde_json::{Value, json};

use crate::trace::{Event, EventId, LoadStats, Names, Op};

/// Event counts by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// All events.
    pub events: u64,
    /// Non-re-entrant acquires.
    pub acquires: u64,
    /// Non-re-entrant releases.
    pub releases: u64,
    /// Data reads.
    pub reads: u64,
    /// Data writes.
    pub writes: u64,
    /// Forks.
    pub forks: u64,
    /// Joins.
    pub joins: u64,
    /// Volatile reads and writes.
    pub volatile_accesses: u64,
    /// Data reads and writes made while their thread held at least one lock.
    pub accesses_under_locks: u64,
    /// Data reads whose value another thread wrote (the last earlier write
    /// to the variable is another thread's): the reads-from edges schedulable
    /// HB adds to HB.
    pub reads_from_other_threads: u64,
    /// Locks each thread holds right now (re-entrant acquires not counted).
    held: Vec<u32>,
    /// Per variable, the thread of its last data write.
    last_writer: Vec<u32>,
}

/// No write yet, in [`Counts::last_writer`].
const NO_WRITER: u32 = u32::MAX;

impl Counts {
    /// Count one event.
    pub fn add(&mut self, _id: EventId, ev: &Event) {
        self.events += 1;
        let t = ev.thread as usize;
        if self.held.len() <= t {
            self.held.resize(t + 1, 0);
        }
        if ev.op.is_access() && self.held[t] > 0 {
            self.accesses_under_locks += 1;
        }
        match ev.op {
            Op::Acquire => {
                self.acquires += 1;
                self.held[t] += 1;
            }
            Op::Release => {
                self.releases += 1;
                self.held[t] = self.held[t].saturating_sub(1);
            }
            Op::Read => {
                self.reads += 1;
                let w = self.last_writer.get(ev.target as usize).copied();
                if w.is_some_and(|w| w != NO_WRITER && w != ev.thread) {
                    self.reads_from_other_threads += 1;
                }
            }
            Op::Write => {
                self.writes += 1;
                let x = ev.target as usize;
                if self.last_writer.len() <= x {
                    self.last_writer.resize(x + 1, NO_WRITER);
                }
                self.last_writer[x] = ev.thread;
            }
            Op::Fork => self.forks += 1,
            Op::Join => self.joins += 1,
            Op::VolatileRead | Op::VolatileWrite => self.volatile_accesses += 1,
            Op::ReentrantAcquire | Op::ReentrantRelease => {}
        }
    }
}

/// The stats of a trace as a JSON object (also the source of the text form).
pub fn to_json(c: &Counts, names: &Names, load: &LoadStats) -> Value {
    json!({
        "events": c.events,
        "threads": names.threads.len(),
        "locks": names.locks.len(),
        "variables": names.vars.len(),
        "locations": names.locs.len() - 1,
        "acquires": c.acquires,
        "releases": c.releases,
        "reads": c.reads,
        "writes": c.writes,
        "forks": c.forks,
        "joins": c.joins,
        "volatile_accesses": c.volatile_accesses,
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
