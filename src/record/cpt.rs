//! Lowered events to cprace's binary trace format (`crate::trace::cprace_bin`):
//! names declared on first use, every event with its call stack, and what
//! reports describe (threads' creation sites and memory, heap blocks, benign
//! ranges) written after the events.

use std::io::Write;

use anyhow::Result;
use rustc_hash::{FxHashMap, FxHashSet};

use super::events::Stacks;
use super::lower::{LOp, Lowered, Lowerer, Var};
use super::symbols::Symbolizer;
use crate::trace::cprace_bin::Writer;
use crate::trace::recorded::{BlockInfo, ThreadInfo, VarInfo, VarKind};
use crate::trace::records::Records;
use crate::trace::{Event, Op};

/// Writes a recording as cprace's binary trace format: encoded
/// ([`Writer`]), or applied to an analysis's trace builder
/// ([`crate::trace::records::Apply`]).
pub struct CptWriter<R: Records> {
    w: R,
    sym: Symbolizer,
    threads: u32,
    locks: u32,
    /// Lock names, by lowerer id (rwlock variables are named after them).
    lock_names: Vec<String>,
    /// Locks declared per address (a robust mutex taken from a dead owner
    /// goes on as a new lock, `NAME~1`).
    lock_gens: FxHashMap<u64, u32>,
    vars: u32,
    /// Names derived from symbols, to keep names unique (two objects may
    /// have a static of the same name).
    used: FxHashSet<String>,
    /// pc -> location id.
    locs: FxHashMap<u64, u32>,
    loc_count: u32,
    /// pc -> frame id.
    frames: FxHashMap<u64, u32>,
    /// (parent stack, frame) -> stack id; stack 0 is empty.
    stacks: FxHashMap<(u32, u32), u32>,
    /// The recorder's stack ids -> ours (u32::MAX: not yet made).
    of_node: Vec<u32>,
    /// Events written.
    pub events: u64,
    /// Globals recorded (by address).
    globals: FxHashSet<u64>,
    /// Recent events' (pc, recorder stack) and their (location, stack),
    /// direct-mapped: a loop's accesses repeat a few of them.
    places: Box<[Option<Place>; PLACES]>,
}

/// An event's (pc, recorder stack) and its (location id, stack id).
type Place = ((u64, u32), (u32, u32));

/// Entries of [`CptWriter::places`] (a power of two).
const PLACES: usize = 1 << 10;

impl<W: Write> CptWriter<Writer<W>> {
    /// A writer to `out`, naming addresses with `sym`.
    pub fn new(out: W, sym: Symbolizer) -> std::io::Result<CptWriter<Writer<W>>> {
        Ok(CptWriter::to(Writer::new(out)?, sym))
    }
}

impl<R: Records> CptWriter<R> {
    /// Names what comes next with `sym` (the run's listing changed).
    pub(crate) fn symbolize_with(&mut self, sym: Symbolizer) {
        self.sym = sym;
    }

    /// A writer of records to `w`, naming addresses with `sym`.
    pub fn to(w: R, sym: Symbolizer) -> CptWriter<R> {
        CptWriter {
            w,
            sym,
            threads: 0,
            locks: 0,
            lock_names: Vec::new(),
            lock_gens: FxHashMap::default(),
            vars: 0,
            used: FxHashSet::default(),
            locs: FxHashMap::default(),
            loc_count: 1,
            frames: FxHashMap::default(),
            stacks: FxHashMap::default(),
            of_node: vec![0],
            events: 0,
            globals: FxHashSet::default(),
            places: Box::new([None; PLACES]),
        }
    }

    /// A unique name from a symbol-derived one.
    fn unique(&mut self, name: String, addr: u64) -> String {
        if self.used.insert(name.clone()) {
            return name;
        }
        let other = format!("{name}@{addr:#x}");
        self.used.insert(other.clone());
        other
    }

    fn declare_threads(&mut self, low: &Lowerer, upto: u32) -> std::io::Result<()> {
        while self.threads <= upto {
            let tid = low.thread_tids[self.threads as usize];
            self.w.thread(self.threads, &format!("T{tid}"))?;
            self.threads += 1;
        }
        Ok(())
    }

    fn declare_locks(&mut self, low: &Lowerer, upto: u32) -> std::io::Result<()> {
        while self.locks <= upto {
            let addr = low.locks[self.locks as usize];
            let g = self.lock_gens.entry(addr).or_insert(0);
            let generation = *g;
            *g += 1;
            let mut name = match self.sym.global(addr) {
                Some(n) if generation == 0 => self.unique(n, addr),
                Some(n) => n,
                None => format!("{addr:#x}"),
            };
            if generation != 0 {
                name.push_str(&format!("~{generation}"));
            }
            self.w.lock(self.locks, &name, addr)?;
            self.lock_names.push(name);
            self.locks += 1;
        }
        Ok(())
    }

    fn lock_name(&mut self, low: &Lowerer, addr: u64) -> std::io::Result<String> {
        if let Some(i) = low.locks.iter().position(|&a| a == addr) {
            self.declare_locks(low, i as u32)?;
            return Ok(self.lock_names[i].clone());
        }
        Ok(self
            .sym
            .global(addr)
            .unwrap_or_else(|| format!("{addr:#x}")))
    }

    fn declare_vars(&mut self, low: &Lowerer, upto: u32) -> std::io::Result<()> {
        while self.vars <= upto {
            let (name, info) = match low.vars.get(self.vars).expect("the lowering made it") {
                Var::Cell { addr, generation } if !self.sym.in_object(addr) => {
                    // Heap or stack: named by its address, consecutive
                    // cells in one record.
                    self.w.cell(self.vars, addr, generation)?;
                    self.vars += 1;
                    continue;
                }
                Var::Cell { addr, generation } => {
                    let mut name = String::new();
                    let symbolic = self.sym.global_into(addr, &mut name);
                    if !symbolic {
                        name = format!("{addr:#x}");
                    }
                    if generation != 0 {
                        name.push_str(&format!("~{generation}"));
                    }
                    if symbolic {
                        name = self.unique(name, addr);
                    }
                    // The globals the cell's bytes belong to, for reports.
                    if self.sym.in_object(addr) {
                        let mut b = addr;
                        while b < addr + 8 {
                            match self.sym.global_info(b) {
                                Some(g) => {
                                    if self.globals.insert(g.addr) {
                                        self.w.global(&g)?;
                                    }
                                    b = (g.addr + g.size.max(1)).max(b + 1);
                                }
                                None => b += 1,
                            }
                        }
                    }
                    let info = VarInfo {
                        kind: VarKind::Cell,
                        addr,
                        extra: generation,
                    };
                    (name, info)
                }
                Var::Key(k) => (
                    format!("key:{k:#x}"),
                    VarInfo {
                        kind: VarKind::Key,
                        addr: k,
                        extra: 0,
                    },
                ),
                Var::RwWriter(l) => (
                    format!("{}.w", self.lock_name(low, l)?),
                    VarInfo {
                        kind: VarKind::RwWriter,
                        addr: l,
                        extra: 0,
                    },
                ),
                Var::RwReader(l, t) => (
                    format!("{}.r.T{t}", self.lock_name(low, l)?),
                    VarInfo {
                        kind: VarKind::RwReader,
                        addr: l,
                        extra: t,
                    },
                ),
            };
            self.w.var(self.vars, &name, &info)?;
            self.vars += 1;
        }
        Ok(())
    }

    fn loc(&mut self, pc: u64) -> std::io::Result<u32> {
        if pc == 0 {
            return Ok(0);
        }
        if let Some(&id) = self.locs.get(&pc) {
            return Ok(id);
        }
        let mut text = Vec::new();
        self.sym.location(pc, &mut text);
        let id = self.loc_count;
        self.w.loc(id, &String::from_utf8_lossy(&text))?;
        self.loc_count += 1;
        self.locs.insert(pc, id);
        Ok(id)
    }

    fn frame(&mut self, pc: u64) -> std::io::Result<u32> {
        if let Some(&id) = self.frames.get(&pc) {
            return Ok(id);
        }
        let f = self.sym.frame(pc);
        let id = self.frames.len() as u32;
        self.w.frame(id, &f)?;
        self.frames.insert(pc, id);
        Ok(id)
    }

    fn stack_on(&mut self, parent: u32, pc: u64) -> std::io::Result<u32> {
        let frame = self.frame(pc)?;
        if let Some(&id) = self.stacks.get(&(parent, frame)) {
            return Ok(id);
        }
        let id = self.stacks.len() as u32 + 1;
        self.w.stack(id, parent, frame)?;
        self.stacks.insert((parent, frame), id);
        Ok(id)
    }

    /// Our stack of the recorder's call stack `node` (calls only).
    fn calls(&mut self, stacks: &Stacks, node: u32) -> std::io::Result<u32> {
        if (node as usize) < self.of_node.len() && self.of_node[node as usize] != u32::MAX {
            return Ok(self.of_node[node as usize]);
        }
        // Walk down to a known node, then make the missing ones upward.
        let mut chain = Vec::new();
        let mut n = node;
        while n != 0 && ((n as usize) >= self.of_node.len() || self.of_node[n as usize] == u32::MAX)
        {
            let Some((parent, pc)) = stacks.node(n) else {
                break;
            };
            chain.push((n, pc));
            if parent >= n {
                break;
            }
            n = parent;
        }
        let mut id = if n == 0 { 0 } else { self.of_node[n as usize] };
        for (node, pc) in chain.into_iter().rev() {
            id = self.stack_on(id, pc)?;
            if self.of_node.len() <= node as usize {
                self.of_node.resize(node as usize + 1, u32::MAX);
            }
            self.of_node[node as usize] = id;
        }
        Ok(id)
    }

    /// The stack of an event at `pc` made in recorder stack `node`.
    fn stack(&mut self, stacks: &Stacks, node: u32, pc: u64) -> std::io::Result<u32> {
        let calls = self.calls(stacks, node)?;
        if pc == 0 {
            return Ok(calls);
        }
        self.stack_on(calls, pc)
    }

    /// Writes one lowered event.
    pub fn event(&mut self, low: &Lowerer, l: &Lowered, stacks: &Stacks) -> std::io::Result<()> {
        let op = match l.op {
            LOp::Read => Op::Read,
            LOp::Write => Op::Write,
            LOp::AtomicRead => Op::AtomicRead,
            LOp::AtomicWrite => Op::AtomicWrite,
            LOp::VolatileRead => Op::VolatileRead,
            LOp::VolatileWrite => Op::VolatileWrite,
            LOp::Acquire => Op::Acquire,
            LOp::Release => Op::Release,
            LOp::Fork => Op::Fork,
            LOp::Join => Op::Join,
            LOp::Request => Op::Request,
        };
        // Names are declared on first use: a compare an event otherwise.
        if l.thread >= self.threads {
            self.declare_threads(low, l.thread)?;
        }
        match l.op {
            LOp::Acquire | LOp::Release | LOp::Request => self.declare_locks(low, l.target)?,
            LOp::Fork | LOp::Join => self.declare_threads(low, l.target)?,
            _ if l.target + (l.run - 1) >= self.vars => {
                self.declare_vars(low, l.target + (l.run - 1))?
            }
            _ => {}
        }
        let key = (l.pc, l.stack);
        let slot = (l.pc ^ l.pc >> 12 ^ u64::from(l.stack).wrapping_mul(0x9e37_79b9)) as usize
            & (PLACES - 1);
        let (loc, stack) = match self.places[slot] {
            Some((k, place)) if k == key => place,
            _ => {
                let place = (self.loc(l.pc)?, self.stack(stacks, l.stack, l.pc)?);
                self.places[slot] = Some((key, place));
                place
            }
        };
        let ev = Event {
            thread: l.thread,
            target: l.target,
            loc,
            op,
            mask: if l.op.on_variable() && l.mask != 0xff {
                l.mask
            } else {
                0
            },
        };
        self.events += u64::from(l.run);
        self.w.run(&ev, stack, l.run, l.last_mask)
    }

    /// Writes that no later event touches the variables `ids` (sorted,
    /// each once): an analysis may forget them.
    pub fn retire(&mut self, low: &Lowerer, ids: &[u32]) -> std::io::Result<()> {
        let Some(&last) = ids.last() else {
            return Ok(());
        };
        // Ids the reduction left without an event are declared first.
        self.declare_vars(low, last)?;
        let mut i = 0;
        while i < ids.len() {
            let first = ids[i];
            let mut n = 1;
            while i + n < ids.len()
                && n < crate::trace::cprace_bin::MAX_RUN as usize
                && ids[i + n] == first + n as u32
            {
                n += 1;
            }
            self.w.retire(first, n as u32)?;
            i += n;
        }
        Ok(())
    }

    fn block(&mut self, b: &super::lower::Block, stacks: &Stacks) -> std::io::Result<BlockInfo> {
        let stack = self.stack(stacks, b.stack, b.pc)?;
        Ok(BlockInfo {
            addr: b.addr,
            size: b.size,
            thread: b.thread,
            stack,
            pc: b.pc,
            new: b.new,
            at: b.at,
        })
    }

    /// Writes what reports describe and ends the trace.
    pub fn finish(mut self, low: &Lowerer, stacks: &Stacks) -> Result<R::Done> {
        if !low.thread_tids.is_empty() {
            self.declare_threads(low, low.thread_tids.len() as u32 - 1)?;
        }
        for id in 0..low.thread_tids.len() as u32 {
            let (parent, create_stack, create_pc) = match low.created.get(&id) {
                Some(&(p, pc, node)) => (Some(p), self.stack(stacks, node, pc)?, pc),
                None => (None, 0, 0),
            };
            let mem = low.stacks.get(&id).copied().unwrap_or_default();
            let info = ThreadInfo {
                tid: low.thread_tids[id as usize],
                os_tid: low.os_tids.get(&id).copied().unwrap_or(0),
                parent,
                create_stack,
                create_pc,
                name: None,
                stack: (mem[0], mem[1]),
                tls: (mem[2], mem[3]),
            };
            self.w.thread_info(id, &info)?;
        }
        for (id, name) in &low.names {
            self.w.thread_name(*id, name)?;
        }
        for b in &low.blocks {
            let info = self.block(b, stacks)?;
            self.w.alloc(&info)?;
        }
        for b in &low.frees {
            let info = self.block(b, stacks)?;
            self.w.free(&info)?;
        }
        for &(lo, hi) in &low.benign {
            self.w.benign(lo, hi)?;
        }
        Ok(self.w.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::{Event as Recorded, What};
    use crate::trace::load::stream_reader;
    use crate::trace::model::TargetKind;
    use cprace_events::{Kind, Long, RANGE_WRITE};

    /// A xorshift generator from `seed`: `next(n)` is below `n`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Ranges and single accesses of many sizes and overlaps, by two
    /// threads, with frees between (new generations): the trace written
    /// with runs and cells reads back as the lowered events one by one.
    #[test]
    fn runs_read_back_as_the_lowered_events() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut recorded = Vec::new();
        for _ in 0..400 {
            let tid = next(2) as u32;
            let addr = 0x10_0000 + next(0x800);
            let what = match next(8) {
                0 => Kind::Free,
                1..=4 => Kind::Range,
                _ => Kind::Atomic,
            };
            let e = match what {
                Kind::Atomic => Recorded {
                    tid,
                    what: What::Access {
                        write: next(2) == 0,
                        size: 1 << next(4),
                    },
                    addr,
                    pc: 0x400 + next(3),
                    stack: 0,
                },
                kind => Recorded {
                    tid,
                    what: What::Long(Long {
                        kind,
                        flags: if next(2) == 0 { RANGE_WRITE } else { 0 },
                        pending: false,
                        addr,
                        pc: 0x400 + next(3),
                        arg: 0,
                        extra: [1 + next(300), 0, 0],
                    }),
                    addr,
                    pc: 0x400 + next(3),
                    stack: 0,
                },
            };
            recorded.push(e);
        }
        let mut low = Lowerer::default();
        let stacks = Stacks::default();
        let mut w = CptWriter::new(Vec::new(), Symbolizer::from_listing("")).unwrap();
        let mut want = Vec::new();
        let mut spans = 0;
        for e in &recorded {
            let mut out = Vec::new();
            low.event(e, &mut |l| out.push(l));
            for l in &out {
                spans += usize::from(l.run > 1);
                w.event(&low, l, &stacks).unwrap();
                for one in l.singles() {
                    let Var::Cell { addr, generation } = low.vars.get(one.target).unwrap() else {
                        panic!("not a cell");
                    };
                    let mut name = String::new();
                    crate::trace::cprace_bin::cell_name(&mut name, addr, generation);
                    want.push((one.thread, name, one.mask));
                }
            }
        }
        // Not only single cells: runs were written.
        assert!(spans > 100, "{spans} spans");
        let bytes = w.finish(&low, &stacks).unwrap();
        let mut got = Vec::new();
        let (names, _, _) = stream_reader("t.cpt", &bytes[..], None, |_, e| got.push(*e)).unwrap();
        let got: Vec<(u32, String, u8)> = got
            .iter()
            .map(|e| {
                assert_eq!(e.op.target_kind(), TargetKind::Variable);
                let name = names.var(e.target);
                (e.thread, name.to_string(), e.bytes())
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
    }

    /// Memory allocated again and again by three threads (accesses and
    /// atomics of every size, a lock, fences, frees): the trace retires the cells of each
    /// reallocated range, and every streaming detector that forgets them
    /// reports exactly what it reports on the whole trace in memory, where
    /// nothing is retired.
    #[test]
    fn retiring_reallocated_cells_changes_no_report() {
        use crate::engine::detector::{Detector, run_fed, run_trace};
        use crate::report::Keep;
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let long = |tid: u32, kind: Kind, addr: u64, extra: u64, pc: u64| Recorded {
            tid,
            what: What::Long(Long {
                kind,
                flags: 0,
                pending: false,
                addr,
                pc,
                arg: 0,
                extra: [extra, 0, 0],
            }),
            addr,
            pc,
            stack: 0,
        };
        let dir = tempfile::tempdir().unwrap();
        let mut retired_total = 0;
        let mut races_total = 0;
        for round in 0..20 {
            let mut recorded = Vec::new();
            let mut held = [false; 3];
            for _ in 0..600 {
                let tid = next(3) as u32;
                let pc = 0x400 + next(8);
                let e = match next(20) {
                    0 => long(tid, Kind::Alloc, 0x1000 + 8 * next(32), 8 + next(96), pc),
                    1 => long(tid, Kind::Free, 0x1000 + 8 * next(32), 8 + next(64), pc),
                    2 | 3 => {
                        let kind = if held[tid as usize] {
                            Kind::Release
                        } else {
                            Kind::Acquire
                        };
                        held[tid as usize] = !held[tid as usize];
                        long(tid, kind, 0x40, 0, pc)
                    }
                    7 => {
                        // A range (`memcpy`): a run of cells, its ends partial.
                        let mut e = long(tid, Kind::Range, 0x1000 + next(0x140), 1 + next(80), pc);
                        if let What::Long(l) = &mut e.what
                            && next(2) == 0
                        {
                            l.flags = RANGE_WRITE;
                        }
                        e
                    }
                    4..=6 => {
                        // Atomics of every order, fences among them: an
                        // acquire fence acquires what its thread loaded
                        // relaxed before, memory allocated again since
                        // or not.
                        use cprace_events::{Atomic, AtomicOp, Order};
                        let op = [
                            AtomicOp::Load,
                            AtomicOp::Store,
                            AtomicOp::Rmw,
                            AtomicOp::Fence,
                        ][next(4) as usize];
                        let order = [
                            Order::Relaxed,
                            Order::Acquire,
                            Order::Release,
                            Order::SeqCst,
                        ][next(4) as usize];
                        let log2size = next(4) as u8;
                        let addr = 0x1000 + (next(0x140) & !((1 << log2size) - 1));
                        let mut e = long(tid, Kind::Atomic, addr, 0, pc);
                        if let What::Long(l) = &mut e.what {
                            l.flags = Atomic {
                                op,
                                order,
                                log2size,
                            }
                            .flags();
                        }
                        e
                    }
                    _ => Recorded {
                        tid,
                        what: What::Access {
                            write: next(2) == 0,
                            size: 1 << next(4),
                        },
                        addr: 0x1000 + next(0x140),
                        pc,
                        stack: 0,
                    },
                };
                recorded.push(e);
            }
            // The events and retirements in the file's order.
            #[derive(Debug, PartialEq)]
            enum Item {
                Event(Event),
                Retire(Vec<u32>),
            }
            // Lowered once, written as a file and applied to a builder
            // (`record --analyze`) side by side.
            let applied = std::cell::RefCell::new(Vec::new());
            let mut b = crate::trace::validate::Builder::new("applied", |_, e: &Event| {
                applied.borrow_mut().push(Item::Event(*e))
            });
            let mut hook = |v: &[u32]| applied.borrow_mut().push(Item::Retire(v.to_vec()));
            let mut a = CptWriter::to(
                crate::trace::records::Apply::new(&mut b, Some(&mut hook)),
                Symbolizer::from_listing(""),
            );
            let mut low = Lowerer::default();
            // Freed blocks retired after a few more frees, in odd rounds: uses
            // after the free then meet new variables.
            if round % 2 == 1 {
                low.freed.max_blocks = 3;
            }
            let stacks = Stacks::default();
            let mut w = CptWriter::new(Vec::new(), Symbolizer::from_listing("")).unwrap();
            let mut retired = Vec::new();
            for e in &recorded {
                let mut out = Vec::new();
                low.event(e, &mut |l| out.push(l));
                for l in &out {
                    w.event(&low, l, &stacks).unwrap();
                    a.event(&low, l, &stacks).unwrap();
                }
                low.take_retired(&mut retired);
                w.retire(&low, &retired).unwrap();
                a.retire(&low, &retired).unwrap();
            }
            let path = dir.path().join(format!("t{round}.cpt"));
            std::fs::write(&path, w.finish(&low, &stacks).unwrap()).unwrap();
            a.finish(&low, &stacks).unwrap();
            let (applied_names, _) = b.finish();
            let items = std::cell::RefCell::new(Vec::new());
            let (names, _, _) = crate::trace::stream_retiring(
                &path,
                None,
                |_, e| items.borrow_mut().push(Item::Event(*e)),
                &mut |v| items.borrow_mut().push(Item::Retire(v.to_vec())),
            )
            .unwrap();
            let items = items.into_inner();
            // Applied, the records give what reading them back gives: the
            // same events, retirements and names.
            assert_eq!(applied.into_inner(), items, "{}", path.display());
            let every = |n: &crate::trace::Names| {
                let ids = |t: &crate::trace::intern::Interner| 0..t.len() as u32;
                (
                    ids(&n.threads)
                        .map(|i| n.thread(i).to_string())
                        .collect::<Vec<_>>(),
                    ids(&n.locks)
                        .map(|i| n.lock(i).to_string())
                        .collect::<Vec<_>>(),
                    ids(&n.vars)
                        .map(|i| n.var(i).into_owned())
                        .collect::<Vec<_>>(),
                    ids(&n.locs)
                        .map(|i| n.loc(i).to_string())
                        .collect::<Vec<_>>(),
                )
            };
            assert_eq!(every(&applied_names), every(&names));
            let trace = crate::trace::load(&path, None).unwrap();
            // Each detector told of each retirement where the file says
            // it (the earliest moment allowed), and through the streaming
            // pipeline (later), reports what it reports with none.
            fn same<D: Detector + Send>(
                d: impl Fn() -> D,
                items: &[Item],
                path: &std::path::Path,
                trace: &crate::trace::Trace,
            ) -> usize {
                let mut at_once = d();
                let mut id = 0;
                for item in items {
                    match item {
                        Item::Event(e) => {
                            at_once.event(id, e);
                            id += 1;
                        }
                        Item::Retire(v) => at_once.retire(v),
                    }
                }
                let at_once = at_once.finish();
                let file = crate::engine::detector::FromPath { path, format: None };
                let (streamed, _) = run_fed(d(), file, Keep::Collect).unwrap();
                let whole = run_trace(d(), trace);
                assert_eq!(at_once.races, whole.races, "{}", path.display());
                assert_eq!(streamed.races, whole.races, "{}", path.display());
                whole.races.len()
            }
            retired_total += items
                .iter()
                .map(|i| match i {
                    Item::Retire(v) => v.len(),
                    Item::Event(_) => 0,
                })
                .sum::<usize>();
            let args = (&items[..], &path, &trace);
            races_total += same(
                || crate::race::hb::VcDetector::new(None),
                args.0,
                args.1,
                args.2,
            );
            same(
                || crate::race::hb::TcDetector::new(None),
                args.0,
                args.1,
                args.2,
            );
            same(
                || crate::race::wcp::WcpVc::new(None),
                args.0,
                args.1,
                args.2,
            );
            same(
                || crate::race::shb::ShbDetector::new(None),
                args.0,
                args.1,
                args.2,
            );
            // Windowed CP in stretches of a few dozen events, so that
            // retirements land between the fixpoint's stretch and the race
            // pass behind it.
            for (k, every) in [(40, 16), (1000, 64)] {
                same(
                    || {
                        crate::race::cp::stream::CpStream::with_runs_every(
                            k,
                            crate::race::cp::PassOptions::default(),
                            every,
                        )
                    },
                    args.0,
                    args.1,
                    args.2,
                );
            }
        }
        // Not vacuous: cells were retired, and there were races to keep.
        assert!(retired_total > 500, "{retired_total} retired");
        assert!(races_total > 50, "{races_total} races");
    }
}
