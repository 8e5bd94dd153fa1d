//! `query --facts` / `--facts-dir`: the CP paper's input relations (Figure 10,
//! plus the critical-section helpers of Figure 11), as `crate::facts::Relations`
//! defines them, streamed relation by relation, each sorted by its tuples; plus
//! the name tables that map thread, lock and variable ids to names.

use std::io::{self, Write};
use std::path::Path;

use crate::{Error, Result};

use crate::facts::Facts;
use crate::trace::{EventId, Op, Trace};

/// A value in a fact tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// An event, thread, lock or variable id.
    Id(u32),
    /// A name.
    Name(&'a str),
}

/// The relations, in output order: name, column names, whether the second
/// column is a name (symbol) rather than an id, and what a tuple means.
pub const RELATIONS: [(&str, [&str; 2], bool, &str); 17] = [
    (
        "TraceNext",
        ["e1", "e2"],
        false,
        "e2 = e1 + 1 (the trace order)",
    ),
    (
        "ThreadForEvent",
        ["e", "t"],
        false,
        "event e is performed by thread t",
    ),
    (
        "AcqEvent",
        ["e", "m"],
        false,
        "e acquires lock m (not re-entrant)",
    ),
    (
        "RelEvent",
        ["e", "m"],
        false,
        "e releases lock m (not re-entrant)",
    ),
    ("ReadEvent", ["e", "x"], false, "e reads variable x"),
    ("WriteEvent", ["e", "x"], false, "e writes variable x"),
    ("VolatileReadEvent", ["e", "x"], false, "e reads volatile x"),
    (
        "VolatileWriteEvent",
        ["e", "x"],
        false,
        "e writes volatile x",
    ),
    ("ForkEvent", ["e", "t"], false, "e forks thread t"),
    ("JoinEvent", ["e", "t"], false, "e joins thread t"),
    (
        "MatchingCriticalSecBoundary",
        ["rel", "acq"],
        false,
        "release rel matches acquire acq",
    ),
    (
        "CriticalSecEnd",
        ["acq", "end"],
        false,
        "the section acquired at acq ends at end (its release, or the thread's last event)",
    ),
    (
        "InSameCriticalSec",
        ["e", "acq"],
        false,
        "e lies in the section acquired at acq (boundaries included)",
    ),
    (
        "ForkJoinEdge",
        ["e1", "e2"],
        false,
        "fork -> first event of the child; last event of the child -> join",
    ),
    (
        "ThreadName",
        ["t", "name"],
        true,
        "thread id t is named name",
    ),
    ("LockName", ["m", "name"], true, "lock id m is named name"),
    (
        "VariableName",
        ["x", "name"],
        true,
        "variable id x is named name",
    ),
];

/// Stream the tuples of relation number `rel` (an index into [`RELATIONS`]),
/// sorted.
pub fn for_each_tuple(
    trace: &Trace,
    facts: &Facts,
    rel: usize,
    emit: &mut dyn FnMut(u32, Value) -> io::Result<()>,
) -> io::Result<()> {
    let events = &trace.events;
    let by_op = |op: Op, emit: &mut dyn FnMut(u32, Value) -> io::Result<()>| {
        for (i, ev) in events.iter().enumerate() {
            if ev.op == op {
                emit(i as u32, Value::Id(ev.target))?;
            }
        }
        Ok(())
    };
    let pairs = |mut v: Vec<(u32, u32)>, emit: &mut dyn FnMut(u32, Value) -> io::Result<()>| {
        v.sort_unstable();
        for (a, b) in v {
            emit(a, Value::Id(b))?;
        }
        Ok(())
    };
    let names = |table: &crate::trace::model::Interner,
                 emit: &mut dyn FnMut(u32, Value) -> io::Result<()>| {
        for (i, n) in table.iter().enumerate() {
            emit(i as u32, Value::Name(&n))?;
        }
        Ok(())
    };
    let css = &facts.critical_sections;
    match rel {
        0 => {
            for i in 1..events.len() as u32 {
                emit(i - 1, Value::Id(i))?;
            }
            Ok(())
        }
        1 => {
            for (i, ev) in events.iter().enumerate() {
                emit(i as u32, Value::Id(ev.thread))?;
            }
            Ok(())
        }
        2 => by_op(Op::Acquire, emit),
        3 => by_op(Op::Release, emit),
        4 => by_op(Op::Read, emit),
        5 => by_op(Op::Write, emit),
        6 => by_op(Op::VolatileRead, emit),
        7 => by_op(Op::VolatileWrite, emit),
        8 => by_op(Op::Fork, emit),
        9 => by_op(Op::Join, emit),
        10 => pairs(
            css.iter()
                .filter_map(|cs| cs.rel.map(|r| (r, cs.acq)))
                .collect(),
            emit,
        ),
        11 => pairs(css.iter().map(|cs| (cs.acq, cs.end)).collect(), emit),
        12 => {
            // Per thread, the acquires of its open sections in order; a
            // section includes its release, and one never released stays
            // open to the thread's end.
            let mut open: Vec<Vec<(EventId, u32)>> = vec![Vec::new(); trace.num_threads()];
            for (i, ev) in events.iter().enumerate() {
                let i = i as EventId;
                let o = &mut open[ev.thread as usize];
                if ev.op == Op::Acquire {
                    o.push((i, ev.target));
                }
                for &(a, _) in o.iter() {
                    emit(i, Value::Id(a))?;
                }
                if ev.op == Op::Release
                    && let Some(p) = o.iter().position(|&(_, l)| l == ev.target)
                {
                    o.remove(p);
                }
            }
            Ok(())
        }
        13 => pairs(
            facts
                .fork_edges
                .iter()
                .chain(&facts.join_edges)
                .copied()
                .collect(),
            emit,
        ),
        14 => names(&trace.names.threads, emit),
        15 => names(&trace.names.locks, emit),
        16 => names(&trace.names.vars, emit),
        _ => Ok(()),
    }
}

/// Print every relation: CSV (`relation,x,y,name`, one table) or JSON (one
/// object of arrays of 2-tuples).
pub fn write_facts(trace: &Trace, json: bool, out: &mut dyn Write) -> io::Result<()> {
    let facts = Facts::new(trace);
    if json {
        out.write_all(b"{")?;
        for (k, (name, ..)) in RELATIONS.iter().enumerate() {
            write!(out, "{}\n\"{name}\":[", if k == 0 { "" } else { "," })?;
            let mut first = true;
            for_each_tuple(trace, &facts, k, &mut |a, b| {
                out.write_all(if first { b"" } else { b"," })?;
                first = false;
                match b {
                    Value::Id(b) => write!(out, "[{a},{b}]"),
                    Value::Name(n) => {
                        write!(out, "[{a},")?;
                        serde_json::to_writer(&mut *out, n).map_err(io::Error::other)?;
                        out.write_all(b"]")
                    }
                }
            })?;
            out.write_all(b"]")?;
        }
        out.write_all(b"\n}\n")
    } else {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["relation", "x", "y", "name"])?;
        for (k, (name, ..)) in RELATIONS.iter().enumerate() {
            for_each_tuple(trace, &facts, k, &mut |a, b| {
                let a = a.to_string();
                match b {
                    Value::Id(b) => w.write_record([name, a.as_str(), &b.to_string(), ""]),
                    Value::Name(n) => w.write_record([name, a.as_str(), "", n]),
                }
                .map_err(io::Error::from)
            })?;
        }
        w.flush()
    }
}

/// Write one `Name.facts` file per relation into `dir` (created if missing),
/// tab-separated as Soufflé reads them, plus `schema.dl` declaring them.
/// Tabs inside names become spaces (Soufflé fact files cannot quote them).
pub fn write_facts_dir(trace: &Trace, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(Error::io(format!("cannot create {}", dir.display())))?;
    let facts = Facts::new(trace);
    let mut schema = String::from(
        "// Declarations of the relations `cprace query --facts-dir` writes, for Souffle.\n",
    );
    for (k, (name, cols, symbol, meaning)) in RELATIONS.iter().enumerate() {
        let path = dir.join(format!("{name}.facts"));
        let f = std::fs::File::create(&path)
            .map_err(Error::io(format!("cannot create {}", path.display())))?;
        let mut w = io::BufWriter::new(f);
        for_each_tuple(trace, &facts, k, &mut |a, b| match b {
            Value::Id(b) => writeln!(w, "{a}\t{b}"),
            Value::Name(n) => writeln!(w, "{a}\t{}", n.replace('\t', " ")),
        })
        .and_then(|_| w.flush())
        .map_err(Error::io(format!("cannot write {}", path.display())))?;
        schema += &format!(
            "// {meaning}\n.decl {name}({}: number, {}: {})\n.input {name}\n",
            cols[0],
            cols[1],
            if *symbol { "symbol" } else { "number" }
        );
    }
    let path = dir.join("schema.dl");
    std::fs::write(&path, schema).map_err(Error::io(format!("cannot write {}", path.display())))?;
    Ok(())
}
