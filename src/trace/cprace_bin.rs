//! cprace's binary trace format: what `cprace record` writes by default.
//!
//! A stream of records after an 8-byte magic ([`MAGIC`]), written and read
//! in one pass, compressed or not (zstd, gzip and xz are recognised by
//! content, as for every format). Numbers are LEB128 varints; strings a
//! varint length and UTF-8 bytes.
//!
//! - An event is one byte `1 o o o o s l t` (from the high bit: 1, the op
//!   in 4 bits, then whether a new stack, location and thread id follow),
//!   the thread (varint, when new), the target (varint), for an access its
//!   byte mask (one byte), the location (varint, when new) and the stack
//!   (varint, when new). Threads, locations and stacks repeat from event to
//!   event, so an access usually takes 3 or 4 bytes.
//! - Every name is declared before its first use, by a record of tag
//!   [`THREAD`], [`LOCK`], [`VAR`], [`LOC`] (ids dense from 0 in order of
//!   declaration, names unique; locations from 1, location 0 being the
//!   empty one); [`FRAME`] and [`STACK`] records build the call stacks
//!   (stack 0 is empty); [`ALLOC`], [`FREE`], [`THREAD_INFO`],
//!   [`THREAD_NAME`] and [`BENIGN`] records carry what reports describe.
//! - Runs keep a recorded program's range accesses (a `memcpy` of 4 KiB is
//!   512 cell events) small: a [`RUN`] record (count, last byte mask)
//!   before an access event repeats it on the next variables, one by one
//!   (the first with the event's mask, the last with the record's, the
//!   ones between whole); a [`CELLS`] record declares consecutive 8-byte
//!   cells of no global as variables named by their hex address (`~N`
//!   after it when the memory was freed or allocated N times before).
//! - A [`RETIRE`] record (first id, count) says that no later event touches
//!   those variables: a recording retires the cells of memory allocated
//!   again, and a streaming analysis forgets them.
//! - [`END`] and the number of events end the stream: a file cut short is
//!   an error, never a shorter trace.
//!
//! Ops: 0 r, 1 w, 2 ar, 3 aw, 4 vr, 5 vw, 6 acq, 7 rel, 8 fork, 9 join.

use std::io::{self, Read, Write};

use super::error::LoadError;
use super::model::{Event, Op};
use super::recorded::{
    BlockInfo, Frame, FrameLine, Global, Recording, ThreadInfo, VarInfo, VarKind,
};
use super::validate::Builder;

/// The first bytes of the format (a non-text byte first, like PNG's).
pub const MAGIC: &[u8; 8] = b"\x89CPRT\r\n\x1a";
/// Format version written after the magic (versions 1, without runs and
/// cells, and 2, without retirements, are read too).
pub const VERSION: u64 = 3;

/// Record tag: end of the stream.
pub const END: u8 = 0;
/// Record tag: a thread's name.
pub const THREAD: u8 = 1;
/// Record tag: a lock's name and address.
pub const LOCK: u8 = 2;
/// Record tag: a variable's name and what it is.
pub const VAR: u8 = 3;
/// Record tag: a location's text.
pub const LOC: u8 = 4;
/// Record tag: a symbolized frame.
pub const FRAME: u8 = 5;
/// Record tag: a call stack (parent stack, frame).
pub const STACK: u8 = 6;
/// Record tag: a heap allocation.
pub const ALLOC: u8 = 7;
/// Record tag: a heap free.
pub const FREE: u8 = 8;
/// Record tag: a thread's creation and memory.
pub const THREAD_INFO: u8 = 9;
/// Record tag: a thread's name given by the program.
pub const THREAD_NAME: u8 = 10;
/// Record tag: a range annotated benign.
pub const BENIGN: u8 = 11;
/// Record tag: a global variable (name, address, size, object, offset).
pub const GLOBAL: u8 = 12;

/// Record tag: consecutive memory cells declared as variables.
pub const CELLS: u8 = 13;
/// Record tag: the next event repeated on consecutive variables.
pub const RUN: u8 = 14;
/// Record tag: consecutive variables no later event touches (first id,
/// count). A recording retires the cells of memory allocated again, whose
/// bytes are new variables from then on: an analysis may drop what it
/// keeps for them, so its memory follows the memory the program holds
/// rather than all it ever allocated. An event on a retired variable is an
/// error.
pub const RETIRE: u8 = 15;

/// Most variables one [`CELLS`] record declares, and most events one
/// [`RUN`] stands for: a few bytes of file never stand for more.
pub const MAX_RUN: u32 = 1 << 16;

/// Longest string a file may hold.
const MAX_STRING: u64 = 1 << 20;

/// Appends the name of the cell at `addr` of no global: its address in
/// hex, then `~N` when the memory was freed or allocated N times before.
pub fn cell_name(out: &mut String, addr: u64, generation: u32) {
    use std::fmt::Write as _;
    let _ = write!(out, "{addr:#x}");
    if generation != 0 {
        let _ = write!(out, "~{generation}");
    }
}

/// The address and generation a [`cell_name`] names.
pub(super) fn parse_cell_name(name: &str) -> Option<(u64, u32)> {
    let hex = name.strip_prefix("0x")?;
    let (hex, generation) = match hex.split_once('~') {
        Some((h, g)) => (h, g.parse().ok().filter(|&g| g != 0)?),
        None => (hex, 0),
    };
    let addr = u64::from_str_radix(hex, 16).ok()?;
    let mut canonical = String::new();
    cell_name(&mut canonical, addr, generation);
    (canonical == name).then_some((addr, generation))
}

/// Which (8-byte cell, generation) pairs a trace declared: one bit a cell
/// in pages of 4096 cells, so millions of cells cost a few megabytes.
#[derive(Default)]
pub(super) struct CellSet {
    pages: rustc_hash::FxHashMap<(u64, u32), Box<[u64; 64]>>,
    /// Variables named like cells at addresses not 8-byte aligned.
    odd: rustc_hash::FxHashSet<(u64, u32)>,
}

impl CellSet {
    /// Adds a cell; false when it was there.
    pub(super) fn insert(&mut self, addr: u64, generation: u32) -> bool {
        if !addr.is_multiple_of(8) {
            return self.odd.insert((addr, generation));
        }
        let cell = addr / 8;
        let page = self
            .pages
            .entry((cell >> 12, generation))
            .or_insert_with(|| Box::new([0; 64]));
        let (word, bit) = ((cell >> 6) as usize & 63, cell & 63);
        let new = page[word] & (1 << bit) == 0;
        page[word] |= 1 << bit;
        new
    }
}

/// True when `prefix` starts like this format.
pub fn looks_like(prefix: &[u8]) -> bool {
    prefix.starts_with(MAGIC)
}

fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::AtomicRead => 2,
        Op::AtomicWrite => 3,
        Op::VolatileRead => 4,
        Op::VolatileWrite => 5,
        Op::Acquire | Op::ReentrantAcquire => 6,
        Op::Release | Op::ReentrantRelease => 7,
        Op::Fork => 8,
        Op::Join => 9,
        Op::Request => 10,
    }
}

fn op_of(code: u8) -> Option<Op> {
    Some(match code {
        0 => Op::Read,
        1 => Op::Write,
        2 => Op::AtomicRead,
        3 => Op::AtomicWrite,
        4 => Op::VolatileRead,
        5 => Op::VolatileWrite,
        6 => Op::Acquire,
        7 => Op::Release,
        8 => Op::Fork,
        9 => Op::Join,
        10 => Op::Request,
        _ => return None,
    })
}

/// Writes a trace in this format.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    thread: u32,
    loc: u32,
    stack: u32,
    events: u64,
    /// Accesses not written yet, that later ones may extend into a run.
    run: Option<Run>,
    /// Cells declared but not written yet, that later ones may extend.
    cells: Option<Cells>,
}

/// An access event and the ones after it on the next variables.
#[derive(Clone, Copy)]
struct Run {
    first: Event,
    stack: u32,
    n: u32,
    last_mask: u8,
}

/// Cells `addr`, `addr + 8`, ... declared as variables `first`, ...
#[derive(Clone, Copy)]
struct Cells {
    first: u32,
    addr: u64,
    generation: u32,
    n: u32,
}

fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

impl<W: Write> Writer<W> {
    /// A writer to `out` (the magic is written at once).
    pub fn new(out: W) -> io::Result<Writer<W>> {
        let mut w = Writer {
            out,
            buf: Vec::with_capacity(1 << 16),
            thread: u32::MAX,
            loc: u32::MAX,
            stack: u32::MAX,
            events: 0,
            run: None,
            cells: None,
        };
        w.buf.extend_from_slice(MAGIC);
        put(&mut w.buf, VERSION);
        Ok(w)
    }

    #[inline]
    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= 1 << 16 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn record(&mut self, tag: u8, f: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.flush_cells();
        self.flush_run();
        self.buf.push(tag);
        f(&mut self.buf);
        self.spill()
    }

    /// Declares thread `id`.
    pub fn thread(&mut self, id: u32, name: &str) -> io::Result<()> {
        self.record(THREAD, |b| {
            put(b, id.into());
            put_str(b, name);
        })
    }

    /// Declares lock `id` at `addr`.
    pub fn lock(&mut self, id: u32, name: &str, addr: u64) -> io::Result<()> {
        self.record(LOCK, |b| {
            put(b, id.into());
            put_str(b, name);
            put(b, addr);
        })
    }

    /// Declares variable `id`.
    pub fn var(&mut self, id: u32, name: &str, v: &VarInfo) -> io::Result<()> {
        self.record(VAR, |b| {
            put(b, id.into());
            put_str(b, name);
            b.push(match v.kind {
                VarKind::Cell => 0,
                VarKind::Key => 1,
                VarKind::RwWriter => 2,
                VarKind::RwReader => 3,
            });
            put(b, v.addr);
            put(b, v.extra.into());
        })
    }

    /// Declares location `id`.
    pub fn loc(&mut self, id: u32, text: &str) -> io::Result<()> {
        self.record(LOC, |b| {
            put(b, id.into());
            put_str(b, text);
        })
    }

    /// Declares frame `id`.
    pub fn frame(&mut self, id: u32, f: &Frame) -> io::Result<()> {
        self.record(FRAME, |b| {
            put(b, id.into());
            put(b, f.pc);
            put_str(b, &f.module);
            put(b, f.offset);
            put(b, f.lines.len() as u64);
            for l in &f.lines {
                put_str(b, &l.function);
                put_str(b, &l.file);
                put(b, l.line.into());
                put(b, l.column.into());
            }
        })
    }

    /// Declares stack `id`: the call at `frame` on top of stack `parent`.
    pub fn stack(&mut self, id: u32, parent: u32, frame: u32) -> io::Result<()> {
        self.record(STACK, |b| {
            put(b, id.into());
            put(b, parent.into());
            put(b, frame.into());
        })
    }

    fn block(&mut self, tag: u8, k: &BlockInfo) -> io::Result<()> {
        self.record(tag, |b| {
            put(b, k.addr);
            put(b, k.size);
            put(b, k.thread.into());
            put(b, k.stack.into());
            put(b, k.pc);
            b.push(k.new as u8);
            put(b, k.at.into());
        })
    }

    /// Records a heap allocation.
    pub fn alloc(&mut self, k: &BlockInfo) -> io::Result<()> {
        self.block(ALLOC, k)
    }

    /// Records a heap free.
    pub fn free(&mut self, k: &BlockInfo) -> io::Result<()> {
        self.block(FREE, k)
    }

    /// Records thread `id`'s creation and memory.
    pub fn thread_info(&mut self, id: u32, t: &ThreadInfo) -> io::Result<()> {
        self.record(THREAD_INFO, |b| {
            put(b, id.into());
            put(b, t.tid.into());
            put(b, t.parent.map_or(0, |p| u64::from(p) + 1));
            put(b, t.create_stack.into());
            put(b, t.create_pc);
            for v in [t.stack.0, t.stack.1, t.tls.0, t.tls.1] {
                put(b, v);
            }
            put(b, t.os_tid.into());
        })
    }

    /// Records the name the program gave thread `id`.
    pub fn thread_name(&mut self, id: u32, name: &str) -> io::Result<()> {
        self.record(THREAD_NAME, |b| {
            put(b, id.into());
            put_str(b, name);
        })
    }

    /// Records a benign range.
    pub fn benign(&mut self, lo: u64, hi: u64) -> io::Result<()> {
        self.record(BENIGN, |b| {
            put(b, lo);
            put(b, hi);
        })
    }

    /// Records a global variable.
    pub fn global(&mut self, g: &Global) -> io::Result<()> {
        self.record(GLOBAL, |b| {
            put_str(b, &g.name);
            put(b, g.addr);
            put(b, g.size);
            put_str(b, &g.module);
            put(b, g.offset);
        })
    }

    /// Declares variable `id` as the 8-byte cell at `addr` in its
    /// `generation`th lifetime, named by its address: the cells of a range
    /// take one record.
    pub fn cell(&mut self, id: u32, addr: u64, generation: u32) -> io::Result<()> {
        if let Some(c) = &mut self.cells
            && c.n < MAX_RUN
            && id == c.first.wrapping_add(c.n)
            && addr == c.addr.wrapping_add(8 * u64::from(c.n))
            && generation == c.generation
        {
            c.n += 1;
            return Ok(());
        }
        self.flush_cells();
        self.cells = Some(Cells {
            first: id,
            addr,
            generation,
            n: 1,
        });
        self.spill()
    }

    /// Says that no later event touches variables `first..first + n`
    /// (declared before; `n` from 1 to [`MAX_RUN`]).
    pub fn retire(&mut self, first: u32, n: u32) -> io::Result<()> {
        self.record(RETIRE, |b| {
            put(b, first.into());
            put(b, n.into());
        })
    }

    fn flush_cells(&mut self) {
        if let Some(c) = self.cells.take() {
            let b = &mut self.buf;
            b.push(CELLS);
            put(b, c.first.into());
            put(b, c.n.into());
            put(b, c.addr);
            put(b, c.generation.into());
        }
    }

    fn flush_run(&mut self) {
        if let Some(r) = self.run.take() {
            if r.n > 1 {
                self.buf.push(RUN);
                put(&mut self.buf, r.n.into());
                self.buf.push(r.last_mask);
            }
            self.put_event(&r.first, r.stack);
        }
    }

    /// Appends event `ev` (its names declared before) made at stack `stack`,
    /// and for an access the same access on the `n - 1` variables after its
    /// target (`n` 1 for a single event), the last touching the bytes of
    /// `last_mask`, those between whole. An access on the variable after
    /// the last one's, by the same thread at the same place, joins it in a
    /// run.
    pub fn run(&mut self, ev: &Event, stack: u32, n: u32, last_mask: u8) -> io::Result<()> {
        // A longer run (a large block's free) in pieces a record can hold.
        let (mut ev, mut n) = (*ev, n);
        while n > MAX_RUN {
            self.run_piece(&ev, stack, MAX_RUN, 0xff)?;
            ev.target = ev.target.wrapping_add(MAX_RUN);
            ev.mask = 0;
            n -= MAX_RUN;
        }
        self.run_piece(&ev, stack, n, last_mask)
    }

    fn run_piece(&mut self, ev: &Event, stack: u32, n: u32, last_mask: u8) -> io::Result<()> {
        self.events += u64::from(n);
        if let Some(r) = &mut self.run {
            if r.n.saturating_add(n) <= MAX_RUN
                && (r.n == 1 || r.last_mask == 0xff)
                && (n == 1 || ev.bytes() == 0xff)
                && ev.target == r.first.target.wrapping_add(r.n)
                && ev.op == r.first.op
                && ev.thread == r.first.thread
                && ev.loc == r.first.loc
                && stack == r.stack
            {
                r.n += n;
                r.last_mask = last_mask;
                return Ok(());
            }
            self.flush_cells();
            self.flush_run();
        }
        if ev.op.is_memory() {
            self.run = Some(Run {
                first: *ev,
                stack,
                n,
                last_mask,
            });
        } else {
            self.flush_cells();
            self.put_event(ev, stack);
        }
        self.spill()
    }

    fn put_event(&mut self, ev: &Event, stack: u32) {
        let mut head = 0x80 | op_code(ev.op) << 3;
        let new_thread = ev.thread != self.thread;
        let new_loc = ev.loc != self.loc;
        let new_stack = stack != self.stack;
        head |= (new_stack as u8) << 2 | (new_loc as u8) << 1 | new_thread as u8;
        let b = &mut self.buf;
        b.push(head);
        if new_thread {
            put(b, ev.thread.into());
            self.thread = ev.thread;
        }
        put(b, ev.target.into());
        if ev.op.is_memory() {
            b.push(ev.bytes());
        }
        if new_loc {
            put(b, ev.loc.into());
            self.loc = ev.loc;
        }
        if new_stack {
            put(b, stack.into());
            self.stack = stack;
        }
    }

    /// Ends the stream; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_cells();
        self.flush_run();
        self.buf.push(END);
        put(&mut self.buf, self.events);
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads bytes through a buffer of its own, counting them for error
/// messages: a byte costs a compare with the buffer's end (a `BufReader`'s
/// `fill_buf` and `consume` per byte were a sixth of reading a recording).
struct Input<R> {
    r: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Offset in the input of `buf[0]`.
    base: u64,
}

impl<R: Read> Input<R> {
    fn new(r: R) -> Input<R> {
        Input {
            r,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
        }
    }

    /// Offset in the input of the next byte.
    #[inline(always)]
    fn at(&self) -> u64 {
        self.base + self.pos as u64
    }

    #[inline(always)]
    fn byte(&mut self) -> io::Result<Option<u8>> {
        if self.pos == self.end && !self.refill()? {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    /// Reads the next bytes into an empty buffer; false at the end.
    #[cold]
    fn refill(&mut self) -> io::Result<bool> {
        self.base += self.end as u64;
        (self.pos, self.end) = (0, 0);
        loop {
            match self.r.read(&mut self.buf) {
                Ok(n) => {
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Fills `out`; an error when the input ends first.
    fn read_exact(&mut self, out: &mut [u8]) -> io::Result<()> {
        let mut got = 0;
        while got < out.len() {
            if self.pos == self.end && !self.refill()? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let n = (self.end - self.pos).min(out.len() - got);
            out[got..got + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            (self.pos, got) = (self.pos + n, got + n);
        }
        Ok(())
    }
}

/// What is told the ids of each [`RETIRE`] record (see [`parse`]).
pub(crate) type Retire<'a> = &'a mut dyn FnMut(&[u32]);

/// A set of ids, a bit each.
#[derive(Default)]
pub(super) struct Bits(Vec<u64>);

impl Bits {
    #[inline(always)]
    pub(super) fn contains(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w >> (i % 64) & 1 != 0)
    }

    /// Adds `i`; false when it was there.
    pub(super) fn insert(&mut self, i: u32) -> bool {
        let w = i as usize / 64;
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        let had = self.0[w] >> (i % 64) & 1 != 0;
        self.0[w] |= 1 << (i % 64);
        !had
    }
}

/// A table of file ids -> the builder's ids: the identity, with no table,
/// until a declaration gets another id (a location whose text an earlier
/// one had). A recording declares millions of cells; looking each access's
/// variable up in a table of them was a cache miss an event.
#[derive(Default)]
pub(super) struct Ids {
    len: u32,
    map: Option<Vec<u32>>,
}

impl Ids {
    pub(super) fn push(&mut self, id: u32) {
        match &mut self.map {
            Some(m) => m.push(id),
            None if id == self.len => {}
            None => {
                let mut m: Vec<u32> = (0..self.len).collect();
                m.push(id);
                self.map = Some(m);
            }
        }
        self.len += 1;
    }

    #[inline(always)]
    pub(super) fn get(&self, i: u32) -> Option<u32> {
        if i >= self.len {
            return None;
        }
        Some(match &self.map {
            None => i,
            Some(m) => m[i as usize],
        })
    }

    pub(super) fn len(&self) -> usize {
        self.len as usize
    }
}

/// Parses a trace in this format from `input` into `b`, filling `rec`
/// (and, with `keep_stacks`, the stack of every event). Everything is
/// checked as it is read: a bad record is an error naming the byte offset.
/// Without `rec` (an analysis, not a report's description) the variables'
/// kinds and addresses are not kept: 16 bytes for each of a recording's
/// millions of cells.
///
/// `retire`, when given, gets the (builder's) ids of each [`RETIRE`]
/// record, between the events before it and those after.
pub(crate) fn parse<S: FnMut(u32, &Event)>(
    input: impl Read,
    b: &mut Builder<'_, S>,
    rec: Option<&mut Recording>,
    keep_stacks: bool,
    mut retire: Option<Retire<'_>>,
) -> Result<(), LoadError> {
    let keep_vars = rec.is_some();
    let mut own = Recording::default();
    let rec = rec.unwrap_or(&mut own);
    let file = b.file();
    let mut r = Input::new(input);
    let err = |at: u64, msg: String| LoadError::new(file, 0, b"", format!("at byte {at}: {msg}"));
    let io = |at: u64, e: io::Error| {
        LoadError::new(file, 0, b"", format!("at byte {at}: read error: {e}"))
    };
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|_| err(0, "too short for a cprace binary trace".into()))?;
    if &magic != MAGIC {
        return Err(err(0, "not a cprace binary trace (wrong magic)".into()));
    }
    macro_rules! next_byte {
        () => {
            match r.byte().map_err(|e| io(r.at(), e))? {
                Some(v) => v,
                None => {
                    return Err(err(
                        r.at(),
                        "the trace ends without its end record (truncated file?)".into(),
                    ));
                }
            }
        };
    }
    macro_rules! num {
        () => {{
            let start = r.at();
            let mut v: u64 = 0;
            let mut shift = 0;
            loop {
                let byte = next_byte!();
                if shift >= 64 || (shift == 63 && byte > 1) {
                    return Err(err(start, "a number longer than 64 bits".into()));
                }
                v |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break v;
                }
            }
        }};
    }
    macro_rules! num32 {
        ($what:expr) => {{
            let start = r.at();
            let v = num!();
            u32::try_from(v).map_err(|_| err(start, format!("{} {v} is beyond 2^32", $what)))?
        }};
    }
    macro_rules! string {
        () => {{
            let start = r.at();
            let n = num!();
            if n > MAX_STRING {
                return Err(err(
                    start,
                    format!("a string of {n} bytes (at most {MAX_STRING})"),
                ));
            }
            let mut s = vec![0u8; n as usize];
            r.read_exact(&mut s).map_err(|_| {
                err(
                    r.at(),
                    "the trace ends inside a string (truncated file?)".into(),
                )
            })?;
            String::from_utf8(s).map_err(|_| err(start, "a string that is not UTF-8".into()))?
        }};
    }
    let version = num!();
    if !(1..=VERSION).contains(&version) {
        return Err(err(
            8,
            format!("format version {version}; this cprace reads version {VERSION}"),
        ));
    }
    // File ids -> the builder's interned ids.
    let (mut threads, mut locks, mut vars, mut locs) = (
        Ids::default(),
        Ids::default(),
        Ids::default(),
        Ids::default(),
    );
    locs.push(0);
    let (mut thread, mut loc, mut stack) = (None::<u32>, 0u32, 0u32);
    rec.stacks.push((0, 0));
    let mut events = 0u64;
    // A run record's count and last mask, for the event after it.
    let mut repeat: Option<(u32, u8)> = None;
    // Cells declared so far, and variables named like cells.
    let mut declared = CellSet::default();
    // File variable ids retired (a bit each; empty until the first).
    let mut retired = Bits::default();
    let mut retiring: Vec<u32> = Vec::new();
    loop {
        let at = r.at();
        let tag = next_byte!();
        if repeat.is_some()
            && (tag & 0x80 == 0 || !op_of((tag >> 3) & 15).is_some_and(|o| o.is_memory()))
        {
            return Err(err(at, "a run record not followed by an access".into()));
        }
        if tag & 0x80 != 0 {
            let op = op_of((tag >> 3) & 15)
                .ok_or_else(|| err(at, format!("an event of unknown op {}", (tag >> 3) & 15)))?;
            if tag & 1 != 0 {
                let t = num32!("thread");
                thread = Some(
                    threads
                        .get(t)
                        .ok_or_else(|| err(at, format!("thread {t} is not declared")))?,
                );
            }
            let Some(t) = thread else {
                return Err(err(at, "an event before any thread".into()));
            };
            let file_target = num32!("target");
            let target = file_target;
            let table = match op.target_kind() {
                super::model::TargetKind::Variable => &vars,
                super::model::TargetKind::Lock => &locks,
                super::model::TargetKind::Thread => &threads,
            };
            let target = table
                .get(target)
                .ok_or_else(|| err(at, format!("{} {target} is not declared", op.as_str())))?;
            if op.target_kind() == super::model::TargetKind::Variable
                && retired.contains(file_target)
            {
                return Err(err(
                    at,
                    format!("variable {file_target} after its retirement"),
                ));
            }
            let mask = if op.is_memory() {
                match next_byte!() {
                    0 => return Err(err(at, "an access touching no byte".into())),
                    0xff => 0,
                    m => m,
                }
            } else {
                0
            };
            if tag & 2 != 0 {
                let l = num32!("location");
                loc = locs
                    .get(l)
                    .ok_or_else(|| err(at, format!("location {l} is not declared")))?;
            }
            if tag & 4 != 0 {
                let s = num32!("stack");
                if s as usize >= rec.stacks.len() {
                    return Err(err(at, format!("stack {s} is not declared")));
                }
                stack = s;
            }
            let Some((n, last)) = repeat.take() else {
                b.push_ids_masked(t, op, target, loc, mask)
                    .map_err(|p| err(at, p))?;
                if keep_stacks {
                    rec.event_stacks.push(stack);
                }
                events += 1;
                continue;
            };
            // The same access on file variables `file_target..+n`, the
            // first with the event's mask, the last with the run's.
            let end = file_target as usize + n as usize;
            if end > vars.len() {
                return Err(err(at, format!("a run of {n} past the declared variables")));
            }
            for i in 0..n as usize {
                let f = file_target + i as u32;
                if retired.contains(f) {
                    return Err(err(at, format!("variable {f} after its retirement")));
                }
                let v = vars.get(f).expect("checked above");
                let m = match i {
                    0 => mask,
                    _ if i + 1 == n as usize => {
                        if last == 0xff {
                            0
                        } else {
                            last
                        }
                    }
                    _ => 0,
                };
                b.push_ids_masked(t, op, v, loc, m)
                    .map_err(|p| err(at, p))?;
            }
            if keep_stacks {
                rec.event_stacks
                    .extend(std::iter::repeat_n(stack, n as usize));
            }
            events += u64::from(n);
            continue;
        }
        match tag {
            END => {
                let n = num!();
                if n != events {
                    return Err(err(
                        at,
                        format!("the end record counts {n} events, the file holds {events}"),
                    ));
                }
                return Ok(());
            }
            RUN => {
                let n = num32!("run length");
                if !(2..=MAX_RUN).contains(&n) {
                    return Err(err(at, format!("a run of {n} events (2 to {MAX_RUN})")));
                }
                let last = next_byte!();
                if last == 0 {
                    return Err(err(at, "an access touching no byte".into()));
                }
                repeat = Some((n, last));
            }
            RETIRE => {
                let first = num32!("variable");
                let n = num32!("retirement count");
                if !(1..=MAX_RUN).contains(&n) {
                    return Err(err(
                        at,
                        format!("{n} variables retired in one record (1 to {MAX_RUN})"),
                    ));
                }
                if u64::from(first) + u64::from(n) > vars.len() as u64 {
                    return Err(err(at, "a retirement of variables not declared".into()));
                }
                retiring.clear();
                for f in first..first + n {
                    if !retired.insert(f) {
                        return Err(err(at, format!("variable {f} retired twice")));
                    }
                    retiring.push(vars.get(f).expect("checked above"));
                }
                if let Some(r) = retire.as_mut() {
                    r(&retiring);
                }
            }
            CELLS => {
                let first = num!();
                let n = num32!("cell count");
                let addr = num!();
                let generation = num32!("generation");
                if !(1..=MAX_RUN).contains(&n) {
                    return Err(err(at, format!("{n} cells in one record (1 to {MAX_RUN})")));
                }
                if first != vars.len() as u64 {
                    return Err(err(
                        at,
                        format!(
                            "declaration of id {first}; expected {} (ids are dense, in order)",
                            vars.len()
                        ),
                    ));
                }
                if addr.checked_add(8 * u64::from(n)).is_none() {
                    return Err(err(at, "cells past the end of the address space".into()));
                }
                for i in 0..u64::from(n) {
                    let a = addr + 8 * i;
                    // Named when a report asks: interning millions of
                    // `0x...` names was most of the time reading a trace.
                    if !declared.insert(a, generation) {
                        let mut name = String::new();
                        cell_name(&mut name, a, generation);
                        return Err(err(at, format!("`{name}` is declared twice")));
                    }
                    vars.push(b.names.vars.push_cell(a, generation));
                    if keep_vars {
                        rec.vars.push(VarInfo {
                            kind: VarKind::Cell,
                            addr: a,
                            extra: generation,
                        });
                    }
                }
            }
            THREAD | LOCK | VAR | LOC => {
                let id = num!();
                let name = string!();
                let (table, n) = match tag {
                    THREAD => (&mut threads, &mut b.names.threads),
                    LOCK => (&mut locks, &mut b.names.locks),
                    VAR => (&mut vars, &mut b.names.vars),
                    _ => (&mut locs, &mut b.names.locs),
                };
                // Location 0 is the empty location, never declared.
                let expected = table.len() as u64;
                if id != expected {
                    return Err(err(
                        at,
                        format!(
                            "declaration of id {id}; expected {expected} (ids are dense, in order)"
                        ),
                    ));
                }
                // Threads, locks and variables keep the file's ids: their
                // names are unique (locations may share a text).
                if tag != LOC && n.contains(&name)
                    || tag == VAR
                        && parse_cell_name(&name).is_some_and(|(a, g)| !declared.insert(a, g))
                {
                    return Err(err(at, format!("`{name}` is declared twice")));
                }
                table.push(n.intern(&name));
                match tag {
                    LOCK => rec.locks.push(num!()),
                    VAR => {
                        let kind = match next_byte!() {
                            0 => VarKind::Cell,
                            1 => VarKind::Key,
                            2 => VarKind::RwWriter,
                            3 => VarKind::RwReader,
                            k => return Err(err(at, format!("a variable of unknown kind {k}"))),
                        };
                        let addr = num!();
                        let extra = num32!("variable detail");
                        if keep_vars {
                            rec.vars.push(VarInfo { kind, addr, extra });
                        }
                    }
                    THREAD => rec.threads.push(ThreadInfo::default()),
                    _ => {}
                }
            }
            FRAME => {
                let id = num!();
                if id != rec.frames.len() as u64 {
                    return Err(err(
                        at,
                        format!("frame {id}; expected {}", rec.frames.len()),
                    ));
                }
                let pc = num!();
                let module = string!();
                let offset = num!();
                let n = num!();
                let mut lines = Vec::new();
                for _ in 0..n {
                    let function = string!();
                    let file = string!();
                    let line = num32!("line");
                    let column = num32!("column");
                    lines.push(FrameLine {
                        function,
                        file,
                        line,
                        column,
                    });
                }
                rec.frames.push(Frame {
                    pc,
                    module,
                    offset,
                    lines,
                });
            }
            STACK => {
                let id = num!();
                if id != rec.stacks.len() as u64 {
                    return Err(err(
                        at,
                        format!("stack {id}; expected {}", rec.stacks.len()),
                    ));
                }
                let parent = num32!("stack");
                let frame = num32!("frame");
                if parent as u64 >= id || frame as usize >= rec.frames.len() {
                    return Err(err(
                        at,
                        format!("stack {id} names an undeclared parent or frame"),
                    ));
                }
                rec.stacks.push((parent, frame));
            }
            ALLOC | FREE => {
                let addr = num!();
                let size = num!();
                let thread = num32!("thread");
                let stack = num32!("stack");
                let pc = num!();
                let new = next_byte!() != 0;
                let at_event = num32!("event");
                let (Some(thread), true) =
                    (threads.get(thread), (stack as usize) < rec.stacks.len())
                else {
                    return Err(err(
                        at,
                        "a heap block names an undeclared thread or stack".into(),
                    ));
                };
                let block = BlockInfo {
                    addr,
                    size,
                    thread,
                    stack,
                    pc,
                    new,
                    at: at_event,
                };
                if tag == ALLOC {
                    rec.allocs.push(block);
                } else {
                    rec.frees.push(block);
                }
            }
            THREAD_INFO => {
                let id = num32!("thread");
                let tid = num32!("thread");
                let parent = num!();
                let create_stack = num32!("stack");
                let create_pc = num!();
                let v = [num!(), num!(), num!(), num!()];
                let os_tid = if version >= 2 { num32!("thread id") } else { 0 };
                let (Some(me), true) = (
                    threads.get(id),
                    parent == 0 || ((parent - 1) as usize) < threads.len(),
                ) else {
                    return Err(err(
                        at,
                        "thread information names an undeclared thread".into(),
                    ));
                };
                let info = &mut rec.threads[me as usize];
                info.tid = tid;
                info.parent = (parent != 0)
                    .then(|| threads.get((parent - 1) as u32))
                    .flatten();
                info.create_stack = create_stack;
                info.create_pc = create_pc;
                info.stack = (v[0], v[1]);
                info.tls = (v[2], v[3]);
                info.os_tid = os_tid;
            }
            THREAD_NAME => {
                let id = num32!("thread");
                let name = string!();
                let Some(me) = threads.get(id) else {
                    return Err(err(at, format!("thread {id} is not declared")));
                };
                rec.threads[me as usize].name = Some(name);
            }
            BENIGN => {
                let lo = num!();
                let hi = num!();
                rec.benign.push((lo, hi));
            }
            GLOBAL => {
                let name = string!();
                let addr = num!();
                let size = num!();
                let module = string!();
                let offset = num!();
                rec.globals.push(Global {
                    name,
                    addr,
                    size,
                    module,
                    offset,
                });
            }
            t => return Err(err(at, format!("a record of unknown tag {t}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::load::stream_reader;

    fn access(op: Op, thread: u32, target: u32, mask: u8, loc: u32) -> Event {
        Event {
            thread,
            op,
            target,
            loc,
            mask,
        }
    }

    /// (thread name, op, variable name, mask, location) of an event.
    type Named = (String, Op, String, u8, String);

    /// Every event read, named.
    fn read_back(bytes: &[u8]) -> Result<Vec<Named>, String> {
        let mut events = Vec::new();
        let (names, _, _) = stream_reader("t.cpt", bytes, None, |_, e| events.push(*e))
            .map_err(|e| e.to_string())?;
        Ok(events
            .iter()
            .map(|e| {
                let target = names.target(e);
                (
                    names
                        .threads
                        .get_index(e.thread as usize)
                        .unwrap()
                        .to_string(),
                    e.op,
                    target.to_string(),
                    e.bytes(),
                    names.locs.get_index(e.loc as usize).unwrap().to_string(),
                )
            })
            .collect())
    }

    /// Retirements between events: the events read back around them, the
    /// retired (builder) ids reach the hook in order between them, and a
    /// file of version 2 (before retirements) is read as before.
    #[test]
    fn retirements_reach_the_hook_between_the_events() {
        let file = |retire: bool| {
            let mut w = Writer::new(Vec::new()).unwrap();
            w.thread(0, "T0").unwrap();
            w.cell(0, 0x1000, 0).unwrap();
            w.cell(1, 0x1008, 0).unwrap();
            w.cell(2, 0x1010, 0).unwrap();
            let ev = |target| access(Op::Write, 0, target, 0xff, 0);
            w.run(&ev(0), 0, 3, 0xff).unwrap();
            if retire {
                w.retire(0, 2).unwrap();
            }
            w.run(&ev(2), 0, 1, 0xff).unwrap();
            w.finish().unwrap()
        };
        let bytes = file(true);
        let seen = std::cell::RefCell::new(Vec::new());
        let mut b = Builder::new("t.cpt", |id, e: &Event| {
            seen.borrow_mut().push(format!("{id}:{}", e.target))
        });
        parse(
            &bytes[..],
            &mut b,
            None,
            false,
            Some(&mut |v: &[u32]| seen.borrow_mut().push(format!("retire {v:?}"))),
        )
        .unwrap();
        drop(b);
        assert_eq!(
            seen.into_inner(),
            ["0:0", "1:1", "2:2", "retire [0, 1]", "3:2"]
        );
        // Version 2 holds no retirement and reads as it did.
        let mut old = file(false);
        old[MAGIC.len()] = 2;
        assert_eq!(read_back(&old).unwrap().len(), 4);
        old[MAGIC.len()] = 4;
        let e = read_back(&old).unwrap_err();
        assert!(e.contains("format version 4"), "{e}");
    }

    /// Cells declared and accessed one by one, or as runs: the same file,
    /// read back as single events.
    #[test]
    fn runs_and_cells_read_back_as_single_events() {
        let write = |runs: bool| {
            let mut w = Writer::new(Vec::new()).unwrap();
            w.thread(0, "T0").unwrap();
            w.thread(1, "T1").unwrap();
            w.loc(1, "a.c:1").unwrap();
            w.lock(0, "m", 0x10).unwrap();
            // Cells 0..5 at 0x1000, generation 2, then a global.
            for i in 0..5u32 {
                w.cell(i, 0x1000 + 8 * u64::from(i), 2).unwrap();
            }
            let g = VarInfo {
                kind: VarKind::Cell,
                addr: 0x50,
                extra: 0,
            };
            w.var(5, "g", &g).unwrap();
            w.cell(6, 0x2000, 0).unwrap();
            let masks = [0xf0u8, 0xff, 0xff, 0xff, 0x01];
            if runs {
                w.run(&access(Op::Write, 0, 0, 0xf0, 1), 0, 5, 0x01)
                    .unwrap();
            } else {
                for (i, &m) in masks.iter().enumerate() {
                    w.run(&access(Op::Write, 0, i as u32, m, 1), 0, 1, m)
                        .unwrap();
                }
            }
            let acq = access(Op::Acquire, 1, 0, 0, 1);
            w.run(&acq, 0, 1, 0xff).unwrap();
            // Single reads of consecutive cells join into a run; a partial
            // cell in the middle ends it.
            for (v, m) in [(1, 0xff), (2, 0xff), (3, 0x0f), (4, 0xff), (6, 0xff)] {
                w.run(&access(Op::Read, 1, v, m, 1), 0, 1, m).unwrap();
            }
            w.run(&access(Op::Release, 1, 0, 0, 1), 0, 1, 0xff).unwrap();
            w.finish().unwrap()
        };
        // Single events on consecutive cells are written as the run.
        let single = write(false);
        let runs = write(true);
        assert_eq!(single, runs);
        let a = read_back(&runs).unwrap();
        let names: Vec<_> = a.iter().map(|e| (e.2.as_str(), e.3)).collect();
        assert_eq!(
            names,
            [
                ("0x1000~2", 0xf0),
                ("0x1008~2", 0xff),
                ("0x1010~2", 0xff),
                ("0x1018~2", 0xff),
                ("0x1020~2", 0x01),
                ("m", 0xff),
                ("0x1008~2", 0xff),
                ("0x1010~2", 0xff),
                ("0x1018~2", 0x0f),
                ("0x1020~2", 0xff),
                ("0x2000", 0xff),
                ("m", 0xff),
            ]
        );
    }

    /// Locations sharing a text share the builder's id, so the file's
    /// location ids stop being the builder's: every location, before and
    /// after, still reads back as its own text, also from a reader that
    /// returns one byte at a time (names split across refills).
    #[test]
    fn shared_location_texts_and_byte_by_byte_reads() {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.thread(0, "T0").unwrap();
        w.cell(0, 0x1000, 0).unwrap();
        for (id, text) in [(1, "a.c:1"), (2, "b.c:2"), (3, "a.c:1"), (4, "c.c:3")] {
            w.loc(id, text).unwrap();
        }
        for loc in [1, 2, 3, 4, 2] {
            w.run(&access(Op::Read, 0, 0, 0xff, loc), 0, 1, 0xff)
                .unwrap();
        }
        let bytes = w.finish().unwrap();
        let locs: Vec<_> = read_back(&bytes)
            .unwrap()
            .into_iter()
            .map(|e| e.4)
            .collect();
        assert_eq!(locs, ["a.c:1", "b.c:2", "a.c:1", "c.c:3", "b.c:2"]);
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(out.len()).min(1);
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut ids = Vec::new();
        stream_reader("t.cpt", Trickle(&bytes), None, |_, e| ids.push(e.loc)).unwrap();
        assert_eq!(ids[0], ids[2], "one id for one text");
        assert_eq!(ids[1], ids[4]);
        assert_eq!(ids.len(), 5);
        assert!(ids[3] != ids[0] && ids[3] != ids[1]);
    }

    /// A run longer than a record holds is written in pieces.
    #[test]
    fn long_runs_are_split() {
        let n = 3 * MAX_RUN + 5;
        let mut w = Writer::new(Vec::new()).unwrap();
        w.thread(0, "T0").unwrap();
        for i in 0..n {
            w.cell(i, 0x10_0000 + 8 * u64::from(i), 0).unwrap();
        }
        w.run(&access(Op::Write, 0, 0, 0x80, 0), 0, n, 0x01)
            .unwrap();
        let bytes = w.finish().unwrap();
        assert!(bytes.len() < 100, "{}", bytes.len());
        let got = read_back(&bytes).unwrap();
        assert_eq!(got.len(), n as usize);
        let masks: Vec<u8> = got.iter().map(|e| e.3).collect();
        assert_eq!(masks[0], 0x80);
        assert!(masks[1..n as usize - 1].iter().all(|&m| m == 0xff));
        assert_eq!(masks[n as usize - 1], 0x01);
        assert_eq!(
            got[n as usize - 1].2,
            format!("{:#x}", 0x10_0000 + 8 * (n - 1))
        );
    }

    /// Runs and cells name only what was declared, and a run precedes an
    /// access: anything else is an error naming the byte.
    #[test]
    fn bad_runs_and_cells_are_errors() {
        let head = |w: &mut Vec<u8>| {
            w.extend_from_slice(MAGIC);
            put(w, VERSION);
            w.push(THREAD);
            put(w, 0);
            put_str(w, "T0");
        };
        type Case = (&'static str, fn(&mut Vec<u8>));
        let cases: [Case; 12] = [
            ("past the declared variables", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([RUN, 3, 0xff, 0x80 | 1, 0, 0, 0xff]);
            }),
            ("not followed by an access", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([RUN, 2, 0xff, END, 0]);
            }),
            ("cells in one record", |b| {
                b.extend([CELLS, 0, 0, 0x80, 0x20, 0]);
            }),
            ("expected 0", |b| {
                b.extend([CELLS, 1, 1, 0x80, 0x20, 0]);
            }),
            ("a run of 1 events", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([RUN, 1, 0xff, 0x80 | 1, 0, 0, 0xff]);
            }),
            // Cells are named only when asked for, yet stay unique: among
            // themselves and against variables named like them.
            ("`0x1008` is declared twice", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([CELLS, 2, 1, 0x88, 0x20, 0]);
            }),
            ("`0x1000` is declared twice", |b| {
                b.extend([CELLS, 0, 1, 0x80, 0x20, 0]);
                b.extend([VAR, 1, 6]);
                b.extend(b"0x1000");
                b.extend([0, 0, 0]);
            }),
            // A retired variable is never touched again, alone or in a run.
            ("variable 0 after its retirement", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([0x80 | 1, 0, 1, 0xff]);
                b.extend([RETIRE, 0, 1]);
                b.extend([0x80 | 1, 0, 0, 0xff]);
            }),
            ("variable 1 after its retirement", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([RETIRE, 1, 1]);
                b.extend([RUN, 2, 0xff, 0x80 | 1, 0, 0, 0xff]);
            }),
            ("variable 0 retired twice", |b| {
                b.extend([CELLS, 0, 2, 0x80, 0x20, 0]);
                b.extend([RETIRE, 0, 1, RETIRE, 0, 2]);
            }),
            ("a retirement of variables not declared", |b| {
                b.extend([CELLS, 0, 1, 0x80, 0x20, 0]);
                b.extend([RETIRE, 0, 2]);
            }),
            ("0 variables retired in one record", |b| {
                b.extend([CELLS, 0, 1, 0x80, 0x20, 0]);
                b.extend([RETIRE, 0, 0]);
            }),
        ];
        for (want, body) in cases {
            let mut b = Vec::new();
            head(&mut b);
            body(&mut b);
            let e = read_back(&b).unwrap_err();
            assert!(e.contains(want) && e.contains("at byte"), "{want}: {e}");
        }
    }
}
