//! A recorded program's race details ([`tsan::Detail`]) in JSON: the
//! `details` object of a race in `--format json` and `jsonl`, field for
//! field what the text report prints, with stacks as arrays of frames.
//! Addresses are strings (`"0x7b04..."`, as the text prints them: a 64-bit
//! address does not fit every JSON reader's numbers); sizes, lines and
//! offsets are numbers.

use serde::Serialize;

use super::tsan::{self, AccessDetail, Detail, Location, MutexDetail, ThreadDetail};
use crate::trace::EventId;
use crate::trace::recorded::StackEntry;

/// The `details` object of one race.
#[derive(Serialize)]
pub(super) struct DetailJson<'a> {
    /// The earlier access (the race's `first`).
    first: AccessJson<'a>,
    /// The later, racy access (the race's `second`).
    second: AccessJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<LocationJson<'a>>,
    threads: Vec<ThreadJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    explanation: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    witness_steps: Vec<&'a str>,
}

impl<'a> DetailJson<'a> {
    pub(super) fn new(d: &'a Detail) -> DetailJson<'a> {
        let access = |a: &'a AccessDetail| AccessJson::new(a, &d.mutexes);
        DetailJson {
            first: access(&d.accesses[1]),
            second: access(&d.accesses[0]),
            location: d.location.as_ref().map(LocationJson::new),
            threads: d.threads.iter().map(ThreadJson::new).collect(),
            summary: d.accesses[0]
                .top
                .as_ref()
                .map(|(at, f)| format!("data race {at} in {f}")),
            explanation: d.ordering.iter().map(|l| l.trim_start()).collect(),
            witness_steps: d.witness.iter().map(String::as_str).collect(),
        }
    }
}

/// A 64-bit address as the text prints it.
fn hex(a: u64) -> String {
    format!("{a:#x}")
}

/// One frame of a stack (a function inlined at a call site is its own).
#[derive(Serialize)]
struct FrameJson<'a> {
    function: &'a str,
    file: &'a str,
    line: u32,
    column: u32,
    module: &'a str,
    offset: u64,
    inlined: bool,
}

fn stack(frames: &[StackEntry]) -> Vec<FrameJson<'_>> {
    frames
        .iter()
        .map(|f| FrameJson {
            function: &f.function,
            file: &f.file,
            line: f.line,
            column: f.column,
            module: &f.module,
            offset: f.offset,
            inlined: f.inlined,
        })
        .collect()
}

#[derive(Serialize)]
struct AccessJson<'a> {
    event: EventId,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    thread: &'a str,
    mutexes: Vec<MutexJson<'a>>,
    stack: Vec<FrameJson<'a>>,
}

impl<'a> AccessJson<'a> {
    fn new(a: &'a AccessDetail, all: &'a [MutexDetail]) -> AccessJson<'a> {
        // The access's mutexes: the block's entries of its thread with
        // those numbers (two accesses may hold the same mutex).
        let mutexes = a
            .mutexes
            .iter()
            .filter_map(|&(_, id)| all.iter().find(|m| m.id == id && m.thread == a.thread))
            .map(MutexJson::new)
            .collect();
        AccessJson {
            event: a.event,
            kind: tsan::kind_words(a),
            size: a.memory.map(|(_, s)| s),
            address: a.memory.map(|(x, _)| hex(x)),
            thread: &a.thread,
            mutexes,
            stack: stack(&a.frames),
        }
    }
}

#[derive(Serialize)]
struct MutexJson<'a> {
    /// `M<id>` of the text report.
    id: usize,
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    /// `write` or `read` (an rwlock's read side).
    side: &'static str,
    /// The acquire event and where it was taken.
    event: EventId,
    stack: Vec<FrameJson<'a>>,
}

impl<'a> MutexJson<'a> {
    fn new(m: &'a MutexDetail) -> MutexJson<'a> {
        MutexJson {
            id: m.id,
            address: hex(m.addr),
            name: m.name.as_deref(),
            side: if m.write { "write" } else { "read" },
            event: m.event,
            stack: stack(&m.frames),
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum LocationJson<'a> {
    Global {
        name: &'a str,
        size: u64,
        address: String,
        module: &'a str,
        offset: u64,
    },
    Heap {
        size: u64,
        address: String,
        thread: &'a str,
        stack: Vec<FrameJson<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        freed: Option<FreedJson<'a>>,
    },
    Stack {
        thread: &'a str,
    },
    Tls {
        thread: &'a str,
    },
}

#[derive(Serialize)]
struct FreedJson<'a> {
    thread: &'a str,
    stack: Vec<FrameJson<'a>>,
}

impl<'a> LocationJson<'a> {
    fn new(l: &'a Location) -> LocationJson<'a> {
        match l {
            Location::Global {
                name,
                size,
                addr,
                module,
                offset,
            } => LocationJson::Global {
                name,
                size: *size,
                address: hex(*addr),
                module,
                offset: *offset,
            },
            Location::Heap {
                size,
                addr,
                thread,
                frames,
                freed,
            } => LocationJson::Heap {
                size: *size,
                address: hex(*addr),
                thread,
                stack: stack(frames),
                freed: freed.as_ref().map(|(thread, frames)| FreedJson {
                    thread,
                    stack: stack(frames),
                }),
            },
            Location::Stack { thread } => LocationJson::Stack { thread },
            Location::Tls { thread } => LocationJson::Tls { thread },
        }
    }
}

#[derive(Serialize)]
struct ThreadJson<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    finished: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<&'a str>,
    stack: Vec<FrameJson<'a>>,
}

impl<'a> ThreadJson<'a> {
    fn new(t: &'a ThreadDetail) -> ThreadJson<'a> {
        ThreadJson {
            id: &t.id,
            name: t.name.as_deref(),
            finished: t.finished,
            parent: t.parent.as_deref(),
            stack: stack(&t.frames),
        }
    }
}
