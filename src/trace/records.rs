//! The records of cprace's binary format ([`super::cprace_bin`]) as calls:
//! [`Records`] is what a recording writes, either encoded
//! ([`super::cprace_bin::Writer`]) or applied straight to a trace builder
//! ([`Apply`]), which gives an analysis the events and names that reading
//! the encoded bytes back would give, without the encoding and decoding
//! (`record --analyze`).

use std::io::{self, Write};

use super::cprace_bin::{Bits, CellSet, Ids, MAX_RUN, Retire, Writer, parse_cell_name};
use super::model::{Event, EventId, TargetKind};
use super::recorded::{BlockInfo, Frame, Global, ThreadInfo, VarInfo};
use super::validate::Builder;

/// The records of cprace's binary format, in the order a recording makes
/// them (see [`super::cprace_bin`] for what each declares).
pub(crate) trait Records {
    /// What the records were written to, returned by [`Records::finish`].
    type Done;
    /// Declares thread `id`.
    fn thread(&mut self, id: u32, name: &str) -> io::Result<()>;
    /// Declares lock `id` at `addr`.
    fn lock(&mut self, id: u32, name: &str, addr: u64) -> io::Result<()>;
    /// Declares variable `id`.
    fn var(&mut self, id: u32, name: &str, v: &VarInfo) -> io::Result<()>;
    /// Declares location `id`.
    fn loc(&mut self, id: u32, text: &str) -> io::Result<()>;
    /// Declares frame `id`.
    fn frame(&mut self, id: u32, f: &Frame) -> io::Result<()>;
    /// Declares stack `id`: the call at `frame` on top of stack `parent`.
    fn stack(&mut self, id: u32, parent: u32, frame: u32) -> io::Result<()>;
    /// Records a heap allocation.
    fn alloc(&mut self, k: &BlockInfo) -> io::Result<()>;
    /// Records a heap free.
    fn free(&mut self, k: &BlockInfo) -> io::Result<()>;
    /// Records thread `id`'s creation and memory.
    fn thread_info(&mut self, id: u32, t: &ThreadInfo) -> io::Result<()>;
    /// Records the name the program gave thread `id`.
    fn thread_name(&mut self, id: u32, name: &str) -> io::Result<()>;
    /// Records a benign range.
    fn benign(&mut self, lo: u64, hi: u64) -> io::Result<()>;
    /// Records a global variable.
    fn global(&mut self, g: &Global) -> io::Result<()>;
    /// Declares variable `id` as the cell at `addr` in its `generation`th
    /// lifetime.
    fn cell(&mut self, id: u32, addr: u64, generation: u32) -> io::Result<()>;
    /// Says that no later event touches variables `first..first + n`.
    fn retire(&mut self, first: u32, n: u32) -> io::Result<()>;
    /// Event `ev` at stack `stack`, for an access repeated on the `n - 1`
    /// variables after its target (the last touching `last_mask`'s bytes).
    fn run(&mut self, ev: &Event, stack: u32, n: u32, last_mask: u8) -> io::Result<()>;
    /// Ends the records.
    fn finish(self) -> io::Result<Self::Done>;
}

impl<W: Write> Records for Writer<W> {
    type Done = W;
    fn thread(&mut self, id: u32, name: &str) -> io::Result<()> {
        Writer::thread(self, id, name)
    }
    fn lock(&mut self, id: u32, name: &str, addr: u64) -> io::Result<()> {
        Writer::lock(self, id, name, addr)
    }
    fn var(&mut self, id: u32, name: &str, v: &VarInfo) -> io::Result<()> {
        Writer::var(self, id, name, v)
    }
    fn loc(&mut self, id: u32, text: &str) -> io::Result<()> {
        Writer::loc(self, id, text)
    }
    fn frame(&mut self, id: u32, f: &Frame) -> io::Result<()> {
        Writer::frame(self, id, f)
    }
    fn stack(&mut self, id: u32, parent: u32, frame: u32) -> io::Result<()> {
        Writer::stack(self, id, parent, frame)
    }
    fn alloc(&mut self, k: &BlockInfo) -> io::Result<()> {
        Writer::alloc(self, k)
    }
    fn free(&mut self, k: &BlockInfo) -> io::Result<()> {
        Writer::free(self, k)
    }
    fn thread_info(&mut self, id: u32, t: &ThreadInfo) -> io::Result<()> {
        Writer::thread_info(self, id, t)
    }
    fn thread_name(&mut self, id: u32, name: &str) -> io::Result<()> {
        Writer::thread_name(self, id, name)
    }
    fn benign(&mut self, lo: u64, hi: u64) -> io::Result<()> {
        Writer::benign(self, lo, hi)
    }
    fn global(&mut self, g: &Global) -> io::Result<()> {
        Writer::global(self, g)
    }
    fn cell(&mut self, id: u32, addr: u64, generation: u32) -> io::Result<()> {
        Writer::cell(self, id, addr, generation)
    }
    fn retire(&mut self, first: u32, n: u32) -> io::Result<()> {
        Writer::retire(self, first, n)
    }
    #[inline]
    fn run(&mut self, ev: &Event, stack: u32, n: u32, last_mask: u8) -> io::Result<()> {
        Writer::run(self, ev, stack, n, last_mask)
    }
    fn finish(self) -> io::Result<W> {
        Writer::finish(self)
    }
}

/// Records applied to a trace builder as [`super::cprace_bin::parse`]
/// applies the records it reads for an analysis (no stacks, no
/// descriptions): the same ids, names, events and retirements, and the
/// same refusals of ids not declared, names declared twice and variables
/// after their retirement. What only a report's description reads (frames,
/// stacks, heap blocks, threads' memory) is dropped.
pub(crate) struct Apply<'a, 'b, S: FnMut(EventId, &Event)> {
    b: &'a mut Builder<'b, S>,
    // File ids -> the builder's, as the reader keeps them.
    threads: Ids,
    locks: Ids,
    vars: Ids,
    locs: Ids,
    declared: CellSet,
    retired: Bits,
    retiring: Vec<u32>,
    retire: Option<Retire<'a>>,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl<'a, 'b, S: FnMut(EventId, &Event)> Apply<'a, 'b, S> {
    /// Records applied to `b`; `retire` gets the builder's ids of each
    /// retirement, between the events before it and those after.
    pub(crate) fn new(b: &'a mut Builder<'b, S>, retire: Option<Retire<'a>>) -> Self {
        let mut locs = Ids::default();
        // Location 0 is the empty location, never declared.
        locs.push(0);
        Apply {
            b,
            threads: Ids::default(),
            locks: Ids::default(),
            vars: Ids::default(),
            locs,
            declared: CellSet::default(),
            retired: Bits::default(),
            retiring: Vec::new(),
            retire,
        }
    }

    /// A thread, lock, variable or location declared by name.
    fn declare(&mut self, kind: TargetKind, loc: bool, id: u32, name: &str) -> io::Result<()> {
        let (table, names) = match (loc, kind) {
            (true, _) => (&mut self.locs, &mut self.b.names.locs),
            (false, TargetKind::Thread) => (&mut self.threads, &mut self.b.names.threads),
            (false, TargetKind::Lock) => (&mut self.locks, &mut self.b.names.locks),
            (false, TargetKind::Variable) => (&mut self.vars, &mut self.b.names.vars),
        };
        if id as usize != table.len() {
            return Err(bad(format!(
                "declaration of id {id}; expected {} (ids are dense, in order)",
                table.len()
            )));
        }
        // Threads, locks and variables keep their ids: their names are
        // unique (locations may share a text).
        if !loc && names.contains(name)
            || !loc
                && kind == TargetKind::Variable
                && parse_cell_name(name).is_some_and(|(a, g)| !self.declared.insert(a, g))
        {
            return Err(bad(format!("`{name}` is declared twice")));
        }
        table.push(names.intern(name));
        Ok(())
    }

    /// The builder's id of file variable `f`, refused after its retirement.
    #[inline]
    fn variable(&self, f: u32) -> io::Result<u32> {
        if self.retired.contains(f) {
            return Err(bad(format!("variable {f} after its retirement")));
        }
        self.vars
            .get(f)
            .ok_or_else(|| bad(format!("variable {f} is not declared")))
    }
}

impl<S: FnMut(EventId, &Event)> Records for Apply<'_, '_, S> {
    type Done = ();
    fn thread(&mut self, id: u32, name: &str) -> io::Result<()> {
        self.declare(TargetKind::Thread, false, id, name)
    }
    fn lock(&mut self, id: u32, name: &str, _addr: u64) -> io::Result<()> {
        self.declare(TargetKind::Lock, false, id, name)
    }
    fn var(&mut self, id: u32, name: &str, _v: &VarInfo) -> io::Result<()> {
        self.declare(TargetKind::Variable, false, id, name)
    }
    fn loc(&mut self, id: u32, text: &str) -> io::Result<()> {
        self.declare(TargetKind::Variable, true, id, text)
    }
    fn frame(&mut self, _id: u32, _f: &Frame) -> io::Result<()> {
        Ok(())
    }
    fn stack(&mut self, _id: u32, _parent: u32, _frame: u32) -> io::Result<()> {
        Ok(())
    }
    fn alloc(&mut self, _k: &BlockInfo) -> io::Result<()> {
        Ok(())
    }
    fn free(&mut self, _k: &BlockInfo) -> io::Result<()> {
        Ok(())
    }
    fn thread_info(&mut self, _id: u32, _t: &ThreadInfo) -> io::Result<()> {
        Ok(())
    }
    fn thread_name(&mut self, _id: u32, _name: &str) -> io::Result<()> {
        Ok(())
    }
    fn benign(&mut self, _lo: u64, _hi: u64) -> io::Result<()> {
        Ok(())
    }
    fn global(&mut self, _g: &Global) -> io::Result<()> {
        Ok(())
    }

    fn cell(&mut self, id: u32, addr: u64, generation: u32) -> io::Result<()> {
        if id as usize != self.vars.len() {
            return Err(bad(format!(
                "declaration of id {id}; expected {} (ids are dense, in order)",
                self.vars.len()
            )));
        }
        if !self.declared.insert(addr, generation) {
            let mut name = String::new();
            super::cprace_bin::cell_name(&mut name, addr, generation);
            return Err(bad(format!("`{name}` is declared twice")));
        }
        self.vars
            .push(self.b.names.vars.push_cell(addr, generation));
        Ok(())
    }

    fn retire(&mut self, first: u32, n: u32) -> io::Result<()> {
        if !(1..=MAX_RUN).contains(&n) || u64::from(first) + u64::from(n) > self.vars.len() as u64 {
            return Err(bad(format!("a retirement of {n} variables from {first}")));
        }
        self.retiring.clear();
        for f in first..first + n {
            if !self.retired.insert(f) {
                return Err(bad(format!("variable {f} retired twice")));
            }
            self.retiring.push(self.vars.get(f).expect("checked above"));
        }
        if let Some(r) = self.retire.as_mut() {
            r(&self.retiring);
        }
        Ok(())
    }

    #[inline]
    fn run(&mut self, ev: &Event, _stack: u32, n: u32, last_mask: u8) -> io::Result<()> {
        let t = self
            .threads
            .get(ev.thread)
            .ok_or_else(|| bad(format!("thread {} is not declared", ev.thread)))?;
        let loc = self
            .locs
            .get(ev.loc)
            .ok_or_else(|| bad(format!("location {} is not declared", ev.loc)))?;
        let target =
            match ev.op.target_kind() {
                TargetKind::Variable => self.variable(ev.target)?,
                TargetKind::Lock => self.locks.get(ev.target).ok_or_else(|| {
                    bad(format!("{} {} is not declared", ev.op.as_str(), ev.target))
                })?,
                TargetKind::Thread => self.threads.get(ev.target).ok_or_else(|| {
                    bad(format!("{} {} is not declared", ev.op.as_str(), ev.target))
                })?,
            };
        // A non-access carries no mask; an access's 0 is every byte.
        let mask = if ev.op.is_memory() { ev.mask } else { 0 };
        if n <= 1 {
            return self
                .b
                .push_ids_masked(t, ev.op, target, loc, mask)
                .map_err(bad);
        }
        if !ev.op.is_memory() {
            return Err(bad(format!("a run of {n} {} events", ev.op.as_str())));
        }
        // The same access on the next variables: the first with the
        // event's mask, the last with the run's, the ones between whole.
        self.b
            .push_ids_masked(t, ev.op, target, loc, mask)
            .map_err(bad)?;
        for i in 1..n {
            let f = ev.target.wrapping_add(i);
            let v = self.variable(f)?;
            let m = match (i + 1 == n, last_mask) {
                (true, 0xff) | (false, _) => 0,
                (true, m) => m,
            };
            self.b.push_ids_masked(t, ev.op, v, loc, m).map_err(bad)?;
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        Ok(())
    }
}
