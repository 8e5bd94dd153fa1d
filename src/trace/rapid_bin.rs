//! RAPID's binary trace format (RapidBin), read and written.
//!
//! Layout (RAPID's `parse/bin/BinaryFormat.java`), all big-endian: a header of
//! threads (i16), locks (i32), variables (i32) and events (i64), then one i64
//! per event holding, from the least significant bit, the thread (10 bits),
//! the operation (4 bits: 0 acq, 1 rel, 2 r, 3 w, 4 fork, 5 join, 6 begin,
//! 7 end, 8 request, 9 branch), the decoration (34 bits: the lock, variable or
//! thread id, by operation) and the location (15 bits); the sign bit is unused.
//!
//! The format numbers names. Alone, names read back as `T3`, `L7`, `V42` and
//! locations as their numbers. `convert --to rapidbin` also writes the name
//! tables to a side file, `TRACE.names.json`, which loading picks up, so a
//! round trip through RapidBin loses nothing.

use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::error::LoadError;
use super::model::{Event, Interner, Names, Op, TargetKind, Trace, intern};
use super::validate::Builder;

/// Bytes of the header.
pub(crate) const HEADER_LEN: usize = 18;
/// Threads the 10-bit thread field can name.
pub(crate) const MAX_THREADS: usize = 1 << 10;
/// Locations the 15-bit location field can name.
pub(crate) const MAX_LOCATIONS: usize = 1 << 15;
/// Lock, variable or thread ids the 34-bit decoration can name.
pub(crate) const MAX_DECORATION: u64 = 1 << 34;

/// True when `prefix` (the first bytes of a decompressed input) is RapidBin
/// rather than text: the header's thread count is at most 1024, so the first
/// byte is 0 to 4, a control character no text trace starts with.
pub(crate) fn looks_like(prefix: &[u8]) -> bool {
    prefix.first().is_some_and(|&b| b <= 4)
}

/// The side file holding the names of the RapidBin trace at `trace`.
pub fn side_path(trace: &Path) -> PathBuf {
    let mut p = trace.as_os_str().to_owned();
    p.push(".names.json");
    PathBuf::from(p)
}

/// The name tables of a RapidBin trace: entry i names id i.
#[derive(Serialize, Deserialize, Debug, Default, PartialEq)]
pub(crate) struct SideNames {
    /// Marks the file as cprace's, with the layout's version.
    pub cprace_rapidbin_names: u32,
    /// Thread names.
    pub threads: Vec<String>,
    /// Lock names.
    pub locks: Vec<String>,
    /// Variable names.
    pub variables: Vec<String>,
    /// Location texts (id 0 is the empty location).
    pub locations: Vec<String>,
}

/// [`SideNames`] borrowing its tables, for writing (same fields, same
/// order: the same JSON).
#[derive(Serialize)]
struct SideTables<'a, S: Serialize, V: Serialize + ?Sized> {
    cprace_rapidbin_names: u32,
    threads: &'a [S],
    locks: &'a [S],
    variables: &'a V,
    locations: &'a [S],
}

/// Write the side file's JSON for these name tables (entry i names id i)
/// to `out`, with a final newline; the tables are not copied.
pub fn write_side<S: Serialize, V: Serialize + ?Sized>(
    threads: &[S],
    locks: &[S],
    variables: &V,
    locations: &[S],
    out: &mut impl Write,
) -> std::io::Result<()> {
    let side = SideTables {
        cprace_rapidbin_names: 1,
        threads,
        locks,
        variables,
        locations,
    };
    serde_json::to_writer(&mut *out, &side)?;
    out.write_all(b"\n")
}

impl SideNames {
    /// Read the side file at `path`; errors name it.
    pub(crate) fn read(path: &Path) -> Result<SideNames, LoadError> {
        let name = path.to_string_lossy();
        let text = std::fs::read(path)
            .map_err(|e| LoadError::new(&name, 0, b"", format!("cannot read: {e}")))?;
        let side: SideNames = serde_json::from_slice(&text).map_err(|e| {
            LoadError::new(
                &name,
                e.line() as u64,
                b"",
                format!(
                    "not a RapidBin name table ({e}); expected the JSON `convert --to rapidbin` writes"
                ),
            )
        })?;
        if side.cprace_rapidbin_names != 1 {
            return Err(LoadError::new(
                &name,
                0,
                b"",
                format!(
                    "name table version {}; expected 1",
                    side.cprace_rapidbin_names
                ),
            ));
        }
        Ok(side)
    }
}

/// Maps the ids of one namespace in the file to the trace's dense ids.
#[derive(Default)]
struct IdMap {
    /// Dense id + 1 for small file ids (0: not seen yet).
    small: Vec<u32>,
    large: FxHashMap<u64, u32>,
}

/// File ids below this are mapped through a vector.
const SMALL: u64 = 1 << 22;

impl IdMap {
    /// The dense id of file id `raw`, interning its name on first sight.
    #[inline(always)]
    fn get(
        &mut self,
        raw: u64,
        table: &mut Interner,
        name: impl FnOnce(u64) -> Result<String, String>,
    ) -> Result<u32, String> {
        if raw < SMALL {
            if let Some(&id1) = self.small.get(raw as usize)
                && id1 != 0
            {
                return Ok(id1 - 1);
            }
            let id = intern(table, &name(raw)?);
            if self.small.len() <= raw as usize {
                self.small.resize(raw as usize + 1, 0);
            }
            self.small[raw as usize] = id + 1;
            Ok(id)
        } else if let Some(&id) = self.large.get(&raw) {
            Ok(id)
        } else {
            let id = intern(table, &name(raw)?);
            self.large.insert(raw, id);
            Ok(id)
        }
    }
}

/// The name of file id `raw` of `kind`: from the side table when there is
/// one, else `prefix` and the number.
fn name_of(side: Option<&[String]>, kind: &str, prefix: &str, raw: u64) -> Result<String, String> {
    match side {
        None => Ok(format!("{prefix}{raw}")),
        Some(t) => t.get(raw as usize).cloned().ok_or_else(|| {
            format!(
                "{kind} id {raw} is not in the side file's {kind} table ({} entries); expected the side file written with this trace",
                t.len()
            )
        }),
    }
}

const OPS: [&str; 10] = [
    "acq", "rel", "r", "w", "fork", "join", "begin", "end", "request", "branch",
];

/// Events decoded per read.
const BATCH: usize = 1 << 15;

/// Read `n` bytes or up to the end of input; returns how many were read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Parse a RapidBin stream into `b`, naming ids from `side` when given.
pub(crate) fn parse<S: FnMut(u32, &Event)>(
    mut r: impl Read,
    side: Option<&SideNames>,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let file = b.file();
    let err = |problem: String| LoadError::new(file, 0, b"", problem);
    let read_err = |e: std::io::Error| err(format!("read error: {e}"));
    let mut header = [0u8; HEADER_LEN];
    let got = fill(&mut r, &mut header).map_err(read_err)?;
    if got < HEADER_LEN {
        return Err(err(format!(
            "RapidBin header is {got} bytes; expected {HEADER_LEN} (threads i16, locks i32, variables i32, events i64, big-endian)"
        )));
    }
    let threads = i16::from_be_bytes([header[0], header[1]]);
    let locks = i32::from_be_bytes(header[2..6].try_into().unwrap_or_default());
    let vars = i32::from_be_bytes(header[6..10].try_into().unwrap_or_default());
    let events = i64::from_be_bytes(header[10..18].try_into().unwrap_or_default());
    if threads < 0 || locks < 0 || vars < 0 || events < 0 {
        return Err(err(format!(
            "RapidBin header has a negative count (threads {threads}, locks {locks}, variables {vars}, events {events}); expected counts of at least 0"
        )));
    }
    let events = events as u64;
    let (st, sl, sv, sloc) = match side {
        Some(s) => (
            Some(&s.threads[..]),
            Some(&s.locks[..]),
            Some(&s.variables[..]),
            Some(&s.locations[..]),
        ),
        None => (None, None, None, None),
    };
    let [mut mt, mut ml, mut mv, mut mloc] = std::array::from_fn(|_| IdMap::default());
    let mut buf = vec![0u8; 8 * BATCH];
    let mut seen = 0u64;
    loop {
        let got = fill(&mut r, &mut buf).map_err(read_err)?;
        if got % 8 != 0 {
            return Err(err(format!(
                "RapidBin input ends inside event {} (truncated file?): {} trailing bytes; expected 8 bytes per event",
                seen + (got / 8) as u64,
                got % 8
            )));
        }
        for chunk in buf[..got].chunks_exact(8) {
            let word = u64::from_be_bytes(chunk.try_into().unwrap_or_default());
            let at = |p: String| {
                err(format!(
                    "event {seen} (byte {}): {p}",
                    HEADER_LEN as u64 + 8 * seen
                ))
            };
            if seen >= events {
                return Err(at(format!(
                    "more events than the header's {events}; expected the file to end"
                )));
            }
            let t = word & 0x3FF;
            let code = (word >> 10) & 0xF;
            let deco = (word >> 14) & (MAX_DECORATION - 1);
            let loc = (word >> 48) & 0x7FFF;
            if word >> 63 != 0 {
                return Err(at(format!(
                    "sign bit set in {word:#018x}; expected it unused"
                )));
            }
            let op = match code {
                0 => Op::Acquire,
                1 => Op::Release,
                2 => Op::Read,
                3 => Op::Write,
                4 => Op::Fork,
                5 => Op::Join,
                6..=9 => {
                    return Err(at(format!(
                        "operation `{}` (code {code}) has no cprace equivalent; expected acq, rel, r, w, fork or join",
                        OPS[code as usize]
                    )));
                }
                _ => {
                    return Err(at(format!(
                        "unknown operation code {code}; expected 0 to 9"
                    )));
                }
            };
            let names = &mut b.names;
            let tid = mt
                .get(t, &mut names.threads, |r| name_of(st, "thread", "T", r))
                .map_err(at)?;
            let target = match op.target_kind() {
                TargetKind::Lock => ml.get(deco, &mut names.locks, |r| name_of(sl, "lock", "L", r)),
                TargetKind::Variable => {
                    mv.get(deco, &mut names.vars, |r| name_of(sv, "variable", "V", r))
                }
                TargetKind::Thread => {
                    mt.get(deco, &mut names.threads, |r| name_of(st, "thread", "T", r))
                }
            }
            .map_err(at)?;
            let loc = mloc
                .get(loc, &mut names.locs, |r| name_of(sloc, "location", "", r))
                .map_err(at)?;
            b.push_ids(tid, op, target, loc).map_err(at)?;
            seen += 1;
        }
        if got < buf.len() {
            break;
        }
    }
    if seen < events {
        return Err(err(format!(
            "RapidBin input ends after {seen} events (truncated file?); the header says {events}"
        )));
    }
    Ok(())
}

/// The reason `ev` cannot be written as RapidBin, if any (the format's
/// limits: 1024 threads, 2^15 locations, no volatile operations).
pub fn check(ev: &Event, names: &Names) -> Result<(), String> {
    if ev.op.is_volatile() {
        return Err(format!(
            "volatile access `{}({})`: RapidBin has no operation code for volatiles; convert to csv or std instead",
            ev.op.as_str(),
            names.var(ev.target)
        ));
    }
    let too_many = |what: &str, name: &str, max: usize| {
        format!(
            "{what} `{name}` is the {}th distinct {what}; RapidBin holds at most {max}",
            max + 1
        )
    };
    if ev.thread as usize >= MAX_THREADS {
        return Err(too_many("thread", names.thread(ev.thread), MAX_THREADS));
    }
    if ev.op.target_kind() == TargetKind::Thread && ev.target as usize >= MAX_THREADS {
        return Err(too_many("thread", names.thread(ev.target), MAX_THREADS));
    }
    if ev.loc as usize >= MAX_LOCATIONS {
        // Location id 0 is the empty location, so 2^15 - 1 texts fit.
        return Err(too_many("location", names.loc(ev.loc), MAX_LOCATIONS - 1));
    }
    Ok(())
}

/// The header of a trace with these table sizes and `events` events.
pub fn header(threads: usize, locks: usize, variables: usize, events: u64) -> [u8; HEADER_LEN] {
    let mut h = [0; HEADER_LEN];
    h[0..2].copy_from_slice(&(threads as i16).to_be_bytes());
    h[2..6].copy_from_slice(&(locks.min(i32::MAX as usize) as i32).to_be_bytes());
    h[6..10].copy_from_slice(&(variables.min(i32::MAX as usize) as i32).to_be_bytes());
    h[10..18].copy_from_slice(&(events as i64).to_be_bytes());
    h
}

/// One event's word: thread, operation code (0 acq, 1 rel, 2 r, 3 w, 4 fork,
/// 5 join), decoration (the lock, variable or thread id) and location, each
/// within the format's limits.
#[inline(always)]
pub fn word(thread: u32, code: u64, decoration: u32, loc: u32) -> u64 {
    thread as u64 | code << 10 | (decoration as u64) << 14 | (loc as u64 & 0x7FFF) << 48
}

/// RapidBin's operation code for `op` (re-entrant acquires and releases are
/// acquires and releases), or None for a volatile or atomic access or a
/// blocked request, which it has no code for.
pub(crate) fn op_code(op: Op) -> Option<u64> {
    match op {
        Op::Acquire | Op::ReentrantAcquire => Some(0),
        Op::Release | Op::ReentrantRelease => Some(1),
        Op::Read => Some(2),
        Op::Write => Some(3),
        Op::Fork => Some(4),
        Op::Join => Some(5),
        Op::VolatileRead | Op::VolatileWrite | Op::AtomicRead | Op::AtomicWrite | Op::Request => {
            None
        }
    }
}

/// Encode one event (which must pass [`check`]).
fn encode(ev: &Event) -> u64 {
    // Volatiles are refused by `check`; kept total so that encoding never
    // panics (as a data read or write).
    let code = op_code(ev.op).unwrap_or(if ev.op.is_write() { 3 } else { 2 });
    word(ev.thread, code, ev.target, ev.loc)
}

/// Write `t` as RapidBin to `out` (its events must pass [`check`]). Blocked
/// requests (`req`), which RapidBin has no code for, are left out: each is
/// its thread's last event, so the ids of the events before them stay.
pub fn write(t: &Trace, out: &mut impl Write) -> std::io::Result<()> {
    let n = &t.names;
    let requests = t.events.iter().filter(|e| e.op == Op::Request).count();
    out.write_all(&header(
        n.threads.len(),
        n.locks.len(),
        n.vars.len(),
        (t.events.len() - requests) as u64,
    ))?;
    let mut buf = Vec::with_capacity(8 * BATCH);
    for chunk in t.events.chunks(BATCH) {
        buf.clear();
        for ev in chunk.iter().filter(|e| e.op != Op::Request) {
            buf.extend(encode(ev).to_be_bytes());
        }
        out.write_all(&buf)?;
    }
    Ok(())
}

/// The side file's text for `t`.
pub fn side_json(t: &Trace) -> String {
    fn all(names: &Interner) -> Vec<std::borrow::Cow<'_, str>> {
        names.iter().collect()
    }
    let n = &t.names;
    let mut s = Vec::new();
    // Strings written to memory: nothing can fail.
    let _ = write_side(
        &all(&n.threads),
        &all(&n.locks),
        &all(&n.vars),
        &all(&n.locs),
        &mut s,
    );
    String::from_utf8(s).unwrap_or_default()
}
