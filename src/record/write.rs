//! Recorded events to STD lines: thread, lock and variable names, locations.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use rustc_hash::FxHashMap;

use super::events::{self, Event};
use super::symbols::Symbolizer;

/// What a recording held, for the summary line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Trace events written.
    pub events: u64,
    /// Threads that made at least one event.
    pub threads: u64,
    /// Data reads and writes.
    pub accesses: u64,
    /// Volatile reads and writes (atomics, semaphores, barriers, ...).
    pub volatiles: u64,
    /// Acquires and releases.
    pub locks: u64,
    /// Forks and joins.
    pub forks_joins: u64,
    /// Heap blocks freed (not trace events).
    pub frees: u64,
}

/// Names the run's objects and writes its events as STD.
pub struct StdWriter {
    sym: Symbolizer,
    /// Freed heap ranges: start -> (end, number of the free), disjoint; a
    /// later free replaces the parts of earlier ones it covers. A variable
    /// is its address plus the number of the last free covering it, so a
    /// reused block never shares variables with the object freed before.
    freed: BTreeMap<u64, (u64, u64)>,
    objects: FxHashMap<u64, String>,
    threads: Vec<Option<String>>,
    line: Vec<u8>,
    /// Totals so far.
    pub counts: Counts,
}

impl StdWriter {
    /// A writer naming addresses with `sym`.
    pub fn new(sym: Symbolizer) -> StdWriter {
        StdWriter {
            sym,
            freed: BTreeMap::new(),
            objects: FxHashMap::default(),
            threads: Vec::new(),
            line: Vec::with_capacity(256),
            counts: Counts::default(),
        }
    }

    fn thread(&mut self, tid: u32) -> &str {
        let i = tid as usize;
        if self.threads.len() <= i {
            self.threads.resize(i + 1, None);
        }
        if self.threads[i].is_none() {
            self.counts.threads += 1;
        }
        self.threads[i].get_or_insert_with(|| format!("T{tid}"))
    }

    /// Name of a lock or synchronization object: its global, else its address.
    fn object(&mut self, addr: u64) -> &str {
        let sym = &self.sym;
        self.objects
            .entry(addr)
            .or_insert_with(|| sym.global(addr).unwrap_or_else(|| format!("{addr:#x}")))
    }

    /// Appends the name of the variable at `addr`: its global, else its
    /// address, then `~N` when free number N last covered it.
    fn variable(&self, addr: u64, line: &mut Vec<u8>) -> Result<()> {
        if !self.sym.global_into(addr, line) {
            write!(line, "{addr:#x}")?;
        }
        if let Some((_, &(end, n))) = self.freed.range(..=addr).next_back()
            && addr < end
        {
            write!(line, "~{n}")?;
        }
        Ok(())
    }

    fn free(&mut self, addr: u64, size: u64) {
        self.counts.frees += 1;
        let n = self.counts.frees;
        let end = addr.saturating_add(size);
        if end == addr {
            return;
        }
        if let Some((&s, &(e, k))) = self.freed.range(..addr).next_back()
            && e > addr
        {
            self.freed.insert(s, (addr, k));
            if e > end {
                self.freed.insert(end, (e, k));
            }
        }
        let inside: Vec<u64> = self.freed.range(addr..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((e, k)) = self.freed.remove(&s)
                && e > end
            {
                self.freed.insert(end, (e, k));
            }
        }
        self.freed.insert(addr, (end, n));
    }

    /// Writes `e` (nothing for FREE notes and unknown kinds).
    pub fn event(&mut self, e: &Event, out: &mut impl Write) -> Result<()> {
        let op: &[u8] = match e.kind {
            events::READ => b"|r(",
            events::WRITE => b"|w(",
            events::VREAD | events::SYNC_VREAD => b"|vr(",
            events::VWRITE | events::SYNC_VWRITE => b"|vw(",
            events::ACQUIRE => b"|acq(",
            events::RELEASE => b"|rel(",
            events::FORK => b"|fork(",
            events::JOIN => b"|join(",
            events::FREE => {
                self.free(e.addr, e.pc);
                return Ok(());
            }
            _ => return Ok(()),
        };
        match e.kind {
            events::READ | events::WRITE => self.counts.accesses += 1,
            events::ACQUIRE | events::RELEASE => self.counts.locks += 1,
            events::FORK | events::JOIN => self.counts.forks_joins += 1,
            _ => self.counts.volatiles += 1,
        }
        self.counts.events += 1;
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.extend_from_slice(self.thread(e.tid).as_bytes());
        line.extend_from_slice(op);
        match e.kind {
            events::READ | events::WRITE | events::VREAD | events::VWRITE => {
                self.variable(e.addr, &mut line)?
            }
            events::ACQUIRE | events::RELEASE => {
                line.extend_from_slice(self.object(e.addr).as_bytes())
            }
            events::FORK | events::JOIN => {
                write!(line, "T{}", e.addr)?;
            }
            _ => {
                line.extend_from_slice(self.object(e.addr).as_bytes());
                match e.arg {
                    0 => {}
                    1 => line.extend_from_slice(b".w"),
                    t => write!(line, ".r.T{}", t - 2)?,
                }
            }
        }
        line.extend_from_slice(b")|");
        self.sym.location(e.pc, &mut line);
        line.push(b'\n');
        out.write_all(&line)?;
        self.line = line;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(tid: u32, kind: u8, addr: u64, pc: u64) -> Event {
        Event {
            seq: 0,
            tid,
            kind,
            arg: 0,
            addr,
            pc,
        }
    }

    fn lines(events: &[Event]) -> Vec<String> {
        let mut w = StdWriter::new(Symbolizer::from_listing(""));
        let mut out = Vec::new();
        for e in events {
            w.event(e, &mut out).unwrap();
        }
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn a_freed_and_reused_block_holds_new_variables() {
        let got = lines(&[
            ev(1, events::WRITE, 0x1000, 0),
            ev(1, events::WRITE, 0x1008, 0),
            ev(1, events::WRITE, 0x2000, 0),
            ev(1, events::FREE, 0x1000, 16),
            ev(2, events::WRITE, 0x1000, 0),
            ev(2, events::READ, 0x1008, 0),
            ev(2, events::READ, 0x2000, 0),
            ev(2, events::FREE, 0x1000, 16),
            ev(3, events::READ, 0x1000, 0),
        ]);
        assert_eq!(
            got,
            [
                "T1|w(0x1000)|",
                "T1|w(0x1008)|",
                "T1|w(0x2000)|",
                "T2|w(0x1000~1)|",
                "T2|r(0x1008~1)|",
                "T2|r(0x2000)|",
                "T3|r(0x1000~2)|",
            ]
        );
    }

    #[test]
    fn sync_objects_name_their_volatile_variables() {
        let mut e = ev(1, events::SYNC_VWRITE, 0x40, 0);
        let mut r = ev(2, events::SYNC_VREAD, 0x40, 0);
        let mut got = lines(&[e, r]);
        e.arg = 1;
        r.arg = 3;
        got.extend(lines(&[e, r]));
        assert_eq!(
            got,
            [
                "T1|vw(0x40)|",
                "T2|vr(0x40)|",
                "T1|vw(0x40.w)|",
                "T2|vr(0x40.r.T1)|"
            ]
        );
    }
}
