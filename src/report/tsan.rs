//! The text report of a race in a recorded program's trace, laid out as
//! ThreadSanitizer lays out its own: each access with its kind, size,
//! address, thread and held mutexes, then where the memory is, the mutexes,
//! the threads and a one-line SUMMARY. What each field holds is decided
//! where the trace is read (`tools::describe`); this module only prints.
//!
//! Threads are named as TSan names them (`main thread`, `thread T1`), the
//! main thread with cprace's name too (`main thread T0`), and each access
//! carries its event id, so a block still reads against `cprace query` and
//! `cprace verify`.

use std::io::{self, Write};

use super::printable;
use crate::trace::EventId;
use crate::trace::recorded::StackEntry;

/// What the text report prints about one race of a recorded program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// The later access (TSan's first), then the earlier ("Previous").
    pub accesses: [AccessDetail; 2],
    /// Where the memory is, when the recording knows.
    pub location: Option<Location>,
    /// The mutexes either access holds, numbered as the accesses name them.
    pub mutexes: Vec<MutexDetail>,
    /// The threads the block names, main thread excluded (as TSan does).
    pub threads: Vec<ThreadDetail>,
    /// For a race the run did not show unordered: what ordered it.
    pub ordering: Vec<String>,
    /// With a witness: the reordering in source terms, one step a line.
    pub witness: Vec<String>,
    /// With a witness: its runs of one thread, in order, then the two
    /// accesses (the sites `witness` names, for SARIF's code flows).
    pub witness_runs: Vec<WitnessRun>,
}

/// A run of one thread in a witness: it runs to `event`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessRun {
    /// The thread, as TSan names it.
    pub thread: String,
    /// cprace's name of the thread (`T1`).
    pub thread_id: String,
    /// The run's events, in order (one of the racy accesses alone at the end).
    pub events: Vec<EventId>,
    /// The last event's location id.
    pub loc: u32,
    /// The last event's innermost frame, when the trace kept its stack.
    pub top: Option<StackEntry>,
    /// The step in source terms (as in `witness`).
    pub text: String,
}

/// One access of a race.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessDetail {
    /// Its event id.
    pub event: EventId,
    /// A write (else a read).
    pub write: bool,
    /// An atomic access.
    pub atomic: bool,
    /// Address and size in bytes, when the variable is memory.
    pub memory: Option<(u64, u64)>,
    /// The thread, as TSan names it (`main thread T0`, `thread T1`).
    pub thread: String,
    /// Mutexes held: (write side, number `M<n>`).
    pub mutexes: Vec<(bool, usize)>,
    /// The call stack, innermost first (printed as TSan's `#k function
    /// file:line (object+0xoffset)` lines).
    pub frames: Vec<StackEntry>,
    /// The innermost frame's `file:line` and function, for the SUMMARY.
    pub top: Option<(String, String)>,
}

/// Where the memory of a race is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A global variable.
    Global {
        /// Its symbol.
        name: String,
        /// Its size.
        size: u64,
        /// Its address.
        addr: u64,
        /// The object file holding it.
        module: String,
        /// Its offset there.
        offset: u64,
    },
    /// A heap block.
    Heap {
        /// Its size as requested.
        size: u64,
        /// Its start.
        addr: u64,
        /// The allocating thread.
        thread: String,
        /// Where it was allocated.
        frames: Vec<StackEntry>,
        /// When it was freed before the later access: the freeing thread
        /// and where.
        freed: Option<(String, Vec<StackEntry>)>,
    },
    /// A thread's stack.
    Stack {
        /// Whose.
        thread: String,
    },
    /// A thread's static thread-local storage.
    Tls {
        /// Whose.
        thread: String,
    },
}

/// A mutex an access holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MutexDetail {
    /// Its number in this block (`M0`, ...).
    pub id: usize,
    /// Its address.
    pub addr: u64,
    /// cprace's name for it, when it is not just the address (a global).
    pub name: Option<String>,
    /// Held for writing (else the read side of an rwlock).
    pub write: bool,
    /// The holding thread.
    pub thread: String,
    /// The acquire event.
    pub event: EventId,
    /// Where it was acquired.
    pub frames: Vec<StackEntry>,
}

/// A thread a block names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadDetail {
    /// cprace's name (`T1`).
    pub id: String,
    /// The name the program gave it.
    pub name: Option<String>,
    /// Whether it was joined before the later access.
    pub finished: bool,
    /// The kernel's thread id (0: not recorded).
    pub os_tid: u32,
    /// The creating thread, as TSan names it.
    pub parent: Option<String>,
    /// Where it was created.
    pub frames: Vec<StackEntry>,
}

fn stack(out: &mut dyn Write, frames: &[StackEntry]) -> io::Result<()> {
    for (k, f) in frames.iter().enumerate() {
        writeln!(out, "    {}", printable(&f.tsan_line(k)))?;
    }
    writeln!(out)
}

/// The access's kind in TSan's words: `read`, `write`, `atomic read`,
/// `atomic write`.
pub(crate) fn kind_words(a: &AccessDetail) -> &'static str {
    match (a.atomic, a.write) {
        (true, true) => "atomic write",
        (true, false) => "atomic read",
        (false, true) => "write",
        (false, false) => "read",
    }
}

/// `Previous atomic write`, `Read`, ... as TSan words them.
pub(crate) fn what(a: &AccessDetail, previous: bool) -> String {
    let base = kind_words(a);
    if previous {
        format!("Previous {base}")
    } else {
        let mut s = base.to_string();
        s[..1].make_ascii_uppercase();
        s
    }
}

/// An access's header: `Write of size 4 at 0x1000 by thread T1 (mutexes:
/// write M0), event 6` (`Previous read ...` for the earlier).
pub(crate) fn access_header(a: &AccessDetail, previous: bool) -> String {
    let memory = match a.memory {
        Some((addr, size)) => format!(" of size {size} at {addr:#x}"),
        None => String::new(),
    };
    let mutexes = if a.mutexes.is_empty() {
        String::new()
    } else {
        let m: Vec<String> = a
            .mutexes
            .iter()
            .map(|&(w, id)| format!("{} M{id}", if w { "write" } else { "read" }))
            .collect();
        format!(" (mutexes: {})", m.join(", "))
    };
    format!(
        "{}{memory} by {}{mutexes}, event {}",
        what(a, previous),
        printable(&a.thread),
        a.event
    )
}

fn access(out: &mut dyn Write, a: &AccessDetail, previous: bool) -> io::Result<()> {
    writeln!(out, "  {}:", access_header(a, previous))?;
    stack(out, &a.frames)
}

/// The location's header: `Location is global 'x' of size 4 at 0x10
/// (prog+0x10)`, `Location is heap block of size 4 at 0x10 allocated by
/// main thread T0`, `Location is stack of thread T1`, `Location is TLS of
/// thread T1`.
pub(crate) fn location_header(l: &Location) -> String {
    match l {
        Location::Global {
            name,
            size,
            addr,
            module,
            offset,
        } => format!(
            "Location is global '{}' of size {size} at {addr:#x} ({}+{offset:#x})",
            printable(name),
            printable(module)
        ),
        Location::Heap {
            size, addr, thread, ..
        } => format!(
            "Location is heap block of size {size} at {addr:#x} allocated by {}",
            printable(thread)
        ),
        Location::Stack { thread } => format!("Location is stack of {}", printable(thread)),
        Location::Tls { thread } => format!("Location is TLS of {}", printable(thread)),
    }
}

fn location(out: &mut dyn Write, l: &Location) -> io::Result<()> {
    let header = location_header(l);
    match l {
        Location::Heap { frames, freed, .. } => {
            writeln!(out, "  {header}:")?;
            stack(out, frames)?;
            if let Some((thread, frames)) = freed {
                writeln!(out, "  {}:", freed_header(thread))?;
                stack(out, frames)?;
            }
            Ok(())
        }
        Location::Global { .. } => writeln!(out, "  {header}\n"),
        Location::Stack { .. } | Location::Tls { .. } => writeln!(out, "  {header}.\n"),
    }
}

/// `The block was freed by THREAD at` (a heap location freed before the
/// later access).
pub(crate) fn freed_header(thread: &str) -> String {
    format!("The block was freed by {} at", printable(thread))
}

/// A mutex's header: `Mutex M0 (0x2000, `m`) acquired by thread T1 (event 5)`.
pub(crate) fn mutex_header(m: &MutexDetail) -> String {
    let name = m
        .name
        .as_deref()
        .map_or(String::new(), |n| format!(", `{}`", printable(n)));
    let how = if m.write { "acquired" } else { "read-acquired" };
    format!(
        "Mutex M{} ({:#x}{name}) {how} by {} (event {})",
        m.id,
        m.addr,
        printable(&m.thread),
        m.event
    )
}

fn mutex(out: &mut dyn Write, m: &MutexDetail) -> io::Result<()> {
    writeln!(out, "  {} at:", mutex_header(m))?;
    stack(out, &m.frames)
}

/// A thread's header: `Thread T1 'worker' (tid=4242, finished) created by main
/// thread T0` (no `tid=` when the trace has none).
pub(crate) fn thread_header(t: &ThreadDetail) -> String {
    let name = t
        .name
        .as_deref()
        .map_or(String::new(), |n| format!(" '{}'", printable(n)));
    let tid = match t.os_tid {
        0 => String::new(),
        tid => format!("tid={tid}, "),
    };
    let status = if t.finished { "finished" } else { "running" };
    let parent = t
        .parent
        .as_deref()
        .map_or(String::new(), |p| format!(" created by {}", printable(p)));
    format!("Thread {}{name} ({tid}{status}){parent}", printable(&t.id))
}

fn thread(out: &mut dyn Write, t: &ThreadDetail) -> io::Result<()> {
    let at = if t.frames.is_empty() { "" } else { " at:" };
    writeln!(out, "  {}{at}", thread_header(t))?;
    stack(out, &t.frames)
}

/// Print the body of one race block (after the WARNING line): accesses,
/// location, mutexes, threads and what ordered a predicted race (the
/// witness and the group line follow, from the text report).
pub(crate) fn write_detail(out: &mut dyn Write, d: &Detail) -> io::Result<()> {
    access(out, &d.accesses[0], false)?;
    access(out, &d.accesses[1], true)?;
    if let Some(l) = &d.location {
        location(out, l)?;
    }
    for m in &d.mutexes {
        mutex(out, m)?;
    }
    for t in &d.threads {
        thread(out, t)?;
    }
    for l in &d.ordering {
        writeln!(out, "  {}", printable(l))?;
    }
    Ok(())
}

/// The block's closing `SUMMARY: data race FILE:LINE in FUNCTION` (the
/// first access's innermost frame, as TSan's), if that frame is known.
pub(crate) fn write_summary(out: &mut dyn Write, d: &Detail) -> io::Result<()> {
    if let Some((at, function)) = &d.accesses[0].top {
        writeln!(
            out,
            "SUMMARY: data race {} in {}",
            printable(at),
            printable(function)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_race_reads_as_tsan_words_it() {
        let frame = |f: &str, l: u32| StackEntry {
            function: f.into(),
            file: "/src/hr.c".into(),
            line: l,
            module: "hr".into(),
            offset: 0x11fe,
            ..Default::default()
        };
        let d = Detail {
            accesses: [
                AccessDetail {
                    event: 6,
                    write: true,
                    memory: Some((0x1000, 4)),
                    thread: "thread T1".into(),
                    mutexes: vec![(true, 0)],
                    frames: vec![frame("t1", 5)],
                    top: Some(("/src/hr.c:5".into(), "t1".into())),
                    ..Default::default()
                },
                AccessDetail {
                    event: 3,
                    memory: Some((0x1000, 4)),
                    thread: "main thread T0".into(),
                    frames: vec![frame("main", 6)],
                    ..Default::default()
                },
            ],
            location: Some(Location::Heap {
                size: 4,
                addr: 0x1000,
                thread: "main thread T0".into(),
                frames: vec![frame("main", 6)],
                freed: None,
            }),
            mutexes: vec![MutexDetail {
                id: 0,
                addr: 0x2000,
                name: Some("m".into()),
                write: true,
                thread: "thread T1".into(),
                event: 5,
                frames: vec![frame("t1", 4)],
            }],
            threads: vec![ThreadDetail {
                id: "T1".into(),
                name: Some("worker".into()),
                finished: true,
                os_tid: 4242,
                parent: Some("main thread T0".into()),
                frames: vec![frame("main", 6)],
            }],
            ..Default::default()
        };
        let mut out = Vec::new();
        write_detail(&mut out, &d).unwrap();
        write_summary(&mut out, &d).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  Write of size 4 at 0x1000 by thread T1 (mutexes: write M0), event 6:\n\
             \x20   #0 t1 /src/hr.c:5 (hr+0x11fe)\n\n\
             \x20 Previous read of size 4 at 0x1000 by main thread T0, event 3:\n\
             \x20   #0 main /src/hr.c:6 (hr+0x11fe)\n\n\
             \x20 Location is heap block of size 4 at 0x1000 allocated by main thread T0:\n\
             \x20   #0 main /src/hr.c:6 (hr+0x11fe)\n\n\
             \x20 Mutex M0 (0x2000, `m`) acquired by thread T1 (event 5) at:\n\
             \x20   #0 t1 /src/hr.c:4 (hr+0x11fe)\n\n\
             \x20 Thread T1 'worker' (tid=4242, finished) created by main thread T0 at:\n\
             \x20   #0 main /src/hr.c:6 (hr+0x11fe)\n\n\
             SUMMARY: data race /src/hr.c:5 in t1\n"
        );
    }
}
