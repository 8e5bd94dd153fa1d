//! Recorded events to STD lines: thread, lock and variable names, locations.

use std::collections::BTreeSet;
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
    /// Current variable name of each accessed address.
    vars: FxHashMap<u64, String>,
    /// Accessed addresses, for renaming a freed block's bytes.
    seen: BTreeSet<u64>,
    /// How many times each address was freed after being accessed.
    generation: FxHashMap<u64, u32>,
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
            vars: FxHashMap::default(),
            seen: BTreeSet::new(),
            generation: FxHashMap::default(),
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

    /// Name of the variable at `addr`: its global, else its address, with
    /// `~N` once its bytes were freed N times (a reused block is a new object).
    fn variable(&mut self, addr: u64) -> &str {
        if !self.vars.contains_key(&addr) {
            let mut name = self
                .sym
                .global(addr)
                .unwrap_or_else(|| format!("{addr:#x}"));
            if let Some(g) = self.generation.get(&addr) {
                name.push_str(&format!("~{g}"));
            }
            self.seen.insert(addr);
            self.vars.insert(addr, name);
        }
        &self.vars[&addr]
    }

    fn free(&mut self, addr: u64, size: u64) {
        self.counts.frees += 1;
        let end = addr.saturating_add(size);
        let gone: Vec<u64> = self.seen.range(addr..end).copied().collect();
        for a in gone {
            self.seen.remove(&a);
            self.vars.remove(&a);
            *self.generation.entry(a).or_insert(0) += 1;
        }
    }

    /// Writes `e` (nothing for FREE notes and unknown kinds).
    pub fn event(&mut self, e: &Event, out: &mut impl Write) -> Result<()> {
        let (op, target): (&str, String) = match e.kind {
            events::READ | events::WRITE | events::VREAD | events::VWRITE => {
                let op = ["r", "w", "vr", "vw"][e.kind as usize];
                (op, self.variable(e.addr).to_string())
            }
            events::ACQUIRE => ("acq", self.object(e.addr).to_string()),
            events::RELEASE => ("rel", self.object(e.addr).to_string()),
            events::FORK => ("fork", format!("T{}", e.addr)),
            events::JOIN => ("join", format!("T{}", e.addr)),
            events::SYNC_VREAD | events::SYNC_VWRITE => {
                let base = self.object(e.addr).to_string();
                let name = match e.arg {
                    0 => base,
                    1 => format!("{base}.w"),
                    t => format!("{base}.r.T{}", t - 2),
                };
                let op = if e.kind == events::SYNC_VREAD {
                    "vr"
                } else {
                    "vw"
                };
                (op, name)
            }
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
        line.push(b'|');
        line.extend_from_slice(op.as_bytes());
        line.push(b'(');
        line.extend_from_slice(target.as_bytes());
        line.extend_from_slice(b")|");
        line.extend_from_slice(self.sym.location(e.pc).as_bytes());
        line.push(b'\n');
        out.write_all(&line)?;
        self.line = line;
        Ok(())
    }
}
