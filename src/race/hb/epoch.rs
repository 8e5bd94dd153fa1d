//! FastTrack2 (Flanagan & Freund, "The FastTrack2 Race Detector", 2017), the
//! rules of its Figure 1, with epochs `t@c` packed into one `u64`
//! (`t << 32 | c`).
//!
//! Thread, lock and volatile clocks are the vector clocks of [`HbClocks`]
//! (volatiles follow the FastTrack paper's treatment: a write joins into the
//! variable's clock, a read joins from it). Per variable the state is the
//! paper's `W` (epoch of the last write), `R` (epoch of the last read, or
//! SHARED) and, once shared, a vector of the latest read epoch per thread. As
//! in FastTrack2 (and unlike FastTrack 2009), [WRITE SHARED] keeps the read
//! vector; a variable never leaves the SHARED state.
//!
//! # Shapes
//! Accesses conflict only when their bytes overlap and not both are atomic
//! ([`Event::conflicts`]), so the state is kept per *shape* of a variable:
//! the bytes an access touches and its kind (plain, volatile, relaxed
//! atomic). Every access of a text trace is plain and touches the whole
//! variable: that shape lives in the variable's own state, and a variable
//! with no other shape runs the rules above unchanged. An access of another
//! shape, or of a variable that has one, is checked against every shape it
//! may conflict with and recorded in its own. Plain shapes are FastTrack2's
//! state; in an atomic shape the writes never race with each other, so they
//! are kept like reads (an epoch while each is HB-after the one before, else
//! a per-thread vector). The argument below holds shape by shape: an access
//! a shape drops is HB-before a later one of the same shape and kind, which
//! conflicts with everything the dropped one does.
//!
//! # Witnesses
//! Next to each epoch the state keeps the event id and location of the access
//! it stands for, and the same-epoch rules (which change no epoch) refresh that
//! id: several reads in one epoch are indistinguishable to the analysis, but
//! the witness must name the latest of them, as [`crate::engine::history`] does. When
//! a check fails, the witness is the latest (largest id) of the tracked
//! accesses that are unordered, conflicting and inside the window.
//!
//! # Guarantee and where it differs from `vc`
//! FastTrack is precise up to the first race on each variable (FastTrack 2009,
//! footnote 3; FastTrack2 Section 6: later races are reported "on a
//! best-effort basis"). Before the first race on `x`, every write to `x` is
//! HB-after all earlier accesses, so the last write and the reads after it are
//! all that can be unordered with a later access, and the latest of them is
//! exactly the latest unordered conflicting access `vc` names. So on every
//! variable the first racy event and its witness equal `vc`'s, hence the racy
//! variables are equal too. With a window the same holds for the first race
//! inside the window: an access dropped from the state was replaced by a later
//! one that either races with it (an earlier race in the window, or a pair
//! farther apart than the window, so the dropped access is out of reach of
//! every later event too) or is HB-after it.
//!
//! After the first race on `x` FastTrack only tracks the last write, so later
//! racy events can be missed, e.g. `w1` (T1) and `w2` (T2) race; T3 then
//! synchronizes with T2 only and reads `x`: `vc` reports the read (it races
//! with `w1`), `epoch` does not (`W` is `w2`, which is ordered). Likewise a
//! read in the same epoch as an earlier read of the same thread is skipped
//! ([READ SAME EPOCH]) even if a racing write came in between. Every event
//! `epoch` reports is racy for `vc` too (each tracked epoch is a real access),
//! but its witness may differ after the first race.

use serde_json::json;

use super::vc::HbClocks;
use super::{Kind, in_window};
use crate::engine::clock::VectorClock;
use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op};

/// Thread half of a packed `R` or `W` that stands for a per-thread vector
/// (its index in `shared` in the clock half): a read-shared slot, or the
/// writes of an atomic shape, which never race with each other.
const SHARED_TID: u32 = u32::MAX;

/// Pack epoch `t@c`.
#[inline]
pub(crate) fn pack(t: u32, c: u32) -> u64 {
    ((t as u64) << 32) | c as u64
}

/// Thread of a packed epoch.
#[inline]
pub(crate) fn tid(e: u64) -> u32 {
    (e >> 32) as u32
}

/// Clock of a packed epoch.
#[inline]
pub(crate) fn clock(e: u64) -> u32 {
    e as u32
}

/// Whether a slot holds a per-thread vector (index `clock(e)`).
#[inline]
fn is_shared(e: u64) -> bool {
    tid(e) == SHARED_TID
}

/// `e ⪯ V`: the access of epoch `e` is HB-before the owner of clock `v`.
#[inline]
fn leq(e: u64, v: &VectorClock) -> bool {
    clock(e) == 0 || v.get(tid(e)) >= clock(e)
}

/// `W` or `R` of a shape: an epoch (0: none yet) with the event id and
/// location of the access it stands for, or a per-thread vector.
#[derive(Clone, Copy, Debug, Default)]
struct Epoch {
    e: u64,
    id: u32,
    loc: u32,
}

/// FastTrack's state of one shape of a variable.
#[derive(Clone, Copy, Debug, Default)]
struct Shape {
    w: Epoch,
    r: Epoch,
}

/// A variable: the shape of plain accesses to all of it (every access of a
/// text trace), and when `more` is not 0 its other shapes in
/// `sides[more - 1]`.
#[derive(Clone, Copy, Debug, Default)]
struct VarState {
    s: Shape,
    more: u32,
}

/// A shape besides the plain whole-variable one: the bytes accessed (an
/// 8-byte cell's mask) and the kind.
#[derive(Clone, Copy, Debug)]
struct Side {
    mask: u8,
    kind: Kind,
    s: Shape,
}

#[derive(Clone, Copy, Debug, Default)]
struct ReadSlot {
    clock: u32,
    id: u32,
    loc: u32,
}

/// The per-thread vectors of the slots that hold one (read-shared, or the
/// writes of an atomic shape), `stride` entries each, back to back: a
/// lookup is one index into one buffer, not a vector's header and then its
/// own buffer (the second load was a cache miss of its own on every shared
/// access). Entries past a vector's threads are empty (clock 0), which
/// every rule reads as "no access".
#[derive(Debug, Default)]
struct Vectors {
    slots: Vec<ReadSlot>,
    stride: usize,
}

impl Vectors {
    /// Number of vectors.
    fn len(&self) -> usize {
        self.slots.len().checked_div(self.stride).unwrap_or(0)
    }

    /// Vector `i`.
    #[inline(always)]
    fn row(&self, i: u32) -> &[ReadSlot] {
        let s = i as usize * self.stride;
        &self.slots[s..s + self.stride]
    }

    /// Entry `t` of vector `i`, if the vectors have one for thread `t`.
    #[inline(always)]
    fn get_mut(&mut self, i: u32, t: u32) -> Option<&mut ReadSlot> {
        if t as usize >= self.stride {
            return None;
        }
        self.slots.get_mut(i as usize * self.stride + t as usize)
    }

    /// Entry `t` of vector `i`, widening every vector to hold thread `t`.
    #[inline(always)]
    fn slot(&mut self, i: u32, t: u32) -> &mut ReadSlot {
        if t as usize >= self.stride {
            self.widen(t as usize + 1);
        }
        &mut self.slots[i as usize * self.stride + t as usize]
    }

    /// A new vector of empty entries for at least `threads` threads; its
    /// index.
    fn push(&mut self, threads: usize) -> u32 {
        if threads > self.stride {
            self.widen(threads);
        }
        let i = self.len();
        self.slots
            .resize(self.slots.len() + self.stride, ReadSlot::default());
        i as u32
    }

    /// Room for `need` threads in every vector, by at least half again (a
    /// new thread at a time would copy every vector each time).
    #[cold]
    #[inline(never)]
    fn widen(&mut self, need: usize) {
        let stride = need.max(self.stride + self.stride / 2).max(4);
        let mut slots = vec![ReadSlot::default(); self.len() * stride];
        if self.stride > 0 {
            for (new, old) in slots
                .chunks_exact_mut(stride)
                .zip(self.slots.chunks_exact(self.stride))
            {
                new[..self.stride].copy_from_slice(old);
            }
        }
        self.slots = slots;
        self.stride = stride;
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    read_same_epoch: u64,
    read_shared_same_epoch: u64,
    read_exclusive: u64,
    read_share: u64,
    read_shared: u64,
    write_same_epoch: u64,
    write_exclusive: u64,
    write_shared: u64,
    atomic_writes: u64,
}

/// Streaming FastTrack2 detector (`--relation hb --engine epoch`).
pub struct EpochDetector {
    clocks: HbClocks,
    vars: Vec<VarState>,
    /// The shapes besides the plain whole-variable one, per variable that
    /// has any (see [`VarState::more`]).
    sides: Vec<Vec<Side>>,
    shared: Vectors,
    window: Option<u64>,
    /// Whether the same-epoch rules apply (only without a window; see the
    /// module docs).
    fast: bool,
    n: Counters,
    pub(crate) report: Report,
}

/// Keep the candidate with the larger id.
#[inline]
fn better(best: &mut Option<Access>, cand: Access) {
    if best.is_none_or(|b| cand.id > b.id) {
        *best = Some(cand);
    }
}

/// The same-epoch rules: when slot `x` already holds an access of thread
/// `t` at clock `c` (an epoch, 1, or an entry of its vector, 2), it now
/// stands for this later one (event `id` at `loc`), which needs no check.
/// 0 when it does not.
#[inline]
fn same_epoch(x: &mut Epoch, shared: &mut Vectors, t: u32, c: u32, id: u32, loc: u32) -> u8 {
    if x.e == pack(t, c) {
        x.id = id;
        x.loc = loc;
        return 1;
    }
    if is_shared(x.e)
        && let Some(s) = shared.get_mut(clock(x.e), t)
        && s.clock == c
    {
        s.id = id;
        s.loc = loc;
        return 2;
    }
    0
}

/// Offer `best` the accesses slot `x` stands for (of op `op`) that are not
/// HB-before the owner of `row` and lie inside the window before `id`.
#[inline]
fn check(
    x: &Epoch,
    op: Op,
    shared: &Vectors,
    row: &VectorClock,
    window: Option<u64>,
    id: EventId,
    best: &mut Option<Access>,
) {
    if is_shared(x.e) {
        // The full VC comparison.
        for (u, s) in shared.row(clock(x.e)).iter().enumerate() {
            if s.clock > row.get(u as u32) && in_window(window, id, s.id) {
                let thread = u as u32;
                better(
                    best,
                    Access {
                        id: s.id,
                        thread,
                        op,
                        loc: s.loc,
                    },
                );
            }
        }
    } else if !leq(x.e, row) && in_window(window, id, x.id) {
        let thread = tid(x.e);
        better(
            best,
            Access {
                id: x.id,
                thread,
                op,
                loc: x.loc,
            },
        );
    }
}

/// Record an access (thread `t`, clock `c`) in a slot whose accesses never
/// race with each other (reads; the writes of an atomic shape): [READ
/// EXCLUSIVE] when the slot's access is HB-before it, else [READ SHARE]
/// into a new per-thread vector, and [READ SHARED] once it is one. Returns
/// which of the three fired.
#[inline]
fn record(
    x: &mut Epoch,
    shared: &mut Vectors,
    threads: usize,
    row: &VectorClock,
    (t, c, id, loc): (u32, u32, u32, u32),
) -> usize {
    let me = ReadSlot { clock: c, id, loc };
    if !is_shared(x.e) {
        if leq(x.e, row) {
            *x = Epoch {
                e: pack(t, c),
                id,
                loc,
            };
            return 0;
        }
        let i = shared.push(threads);
        *shared.slot(i, tid(x.e)) = ReadSlot {
            clock: clock(x.e),
            id: x.id,
            loc: x.loc,
        };
        *shared.slot(i, t) = me;
        x.e = pack(SHARED_TID, i);
        return 1;
    }
    *shared.slot(clock(x.e), t) = me;
    2
}

impl EpochDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        EpochDetector {
            clocks: HbClocks::new(),
            vars: Vec::new(),
            sides: Vec::new(),
            shared: Vectors::default(),
            window,
            fast: window.is_none(),
            n: Counters::default(),
            report: Report::new(Relation::Hb, Engine::Epoch, window, 0),
        }
    }

    /// Feed the next event.
    #[inline]
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        let Some(c) = self.clocks.event(ev) else {
            return;
        };
        let v = ev.target as usize;
        if v >= self.vars.len() {
            self.vars.resize(v + 1, VarState::default());
        }
        // Every access of a text trace is plain and touches the whole
        // variable: one shape, FastTrack2 as printed.
        let race = if !ev.op.is_access() || ev.bytes() != 0xff || self.vars[v].more != 0 {
            self.shaped(id, ev, c)
        } else if ev.op == Op::Read {
            self.read(id, ev, c)
        } else {
            self.write(id, ev, c)
        };
        if let Some(first) = race {
            self.report.push(Race {
                first,
                second: Access::of(id, ev),
                variable: ev.target,
            });
        }
    }

    #[inline]
    fn read(&mut self, id: EventId, ev: &Event, c: u32) -> Option<Access> {
        let t = ev.thread;
        let x = &mut self.vars[ev.target as usize].s;
        if self.fast {
            match same_epoch(&mut x.r, &mut self.shared, t, c, id, ev.loc) {
                0 => {}
                // [READ SAME EPOCH]
                1 => {
                    self.n.read_same_epoch += 1;
                    return None;
                }
                // [READ SHARED SAME EPOCH]
                _ => {
                    self.n.read_shared_same_epoch += 1;
                    return None;
                }
            }
        }
        let row = self.clocks.row(t);
        let mut race = None;
        // [WRITE-READ RACE]
        check(
            &x.w,
            Op::Write,
            &self.shared,
            row,
            self.window,
            id,
            &mut race,
        );
        let threads = self.clocks.num_threads();
        match record(&mut x.r, &mut self.shared, threads, row, (t, c, id, ev.loc)) {
            0 => self.n.read_exclusive += 1,
            1 => self.n.read_share += 1,
            _ => self.n.read_shared += 1,
        }
        race
    }

    #[inline]
    fn write(&mut self, id: EventId, ev: &Event, c: u32) -> Option<Access> {
        let t = ev.thread;
        let x = &mut self.vars[ev.target as usize].s;
        // [WRITE SAME EPOCH]
        if self.fast && same_epoch(&mut x.w, &mut self.shared, t, c, id, ev.loc) != 0 {
            self.n.write_same_epoch += 1;
            return None;
        }
        let row = self.clocks.row(t);
        let mut best = None;
        // [WRITE-WRITE RACE]
        check(
            &x.w,
            Op::Write,
            &self.shared,
            row,
            self.window,
            id,
            &mut best,
        );
        // [READ-WRITE RACE] / [WRITE EXCLUSIVE], or [SHARED-WRITE RACE] /
        // [WRITE SHARED]
        check(
            &x.r,
            Op::Read,
            &self.shared,
            row,
            self.window,
            id,
            &mut best,
        );
        if is_shared(x.r.e) {
            self.n.write_shared += 1;
        } else {
            self.n.write_exclusive += 1;
        }
        x.w = Epoch {
            e: pack(t, c),
            id,
            loc: ev.loc,
        };
        best
    }

    /// An access of a variable with more than one shape (bytes touched,
    /// kind), or of another shape than the plain whole-variable one. Each
    /// shape keeps FastTrack2's state; the access is checked against every
    /// shape it may conflict with (bytes overlap, not both atomic) and
    /// recorded in its own. The writes of an atomic shape never race with
    /// each other, so they are kept like reads: an epoch while each is
    /// HB-after the previous one, else a per-thread vector.
    fn shaped(&mut self, id: EventId, ev: &Event, c: u32) -> Option<Access> {
        let t = ev.thread;
        let v = ev.target as usize;
        let (kind, mask, write) = (Kind::of(ev.op), ev.bytes(), ev.op.is_write());
        let atomic = kind != Kind::Plain;
        let own = if kind == Kind::Plain && mask == 0xff {
            None
        } else {
            let x = &mut self.vars[v];
            if x.more == 0 {
                self.sides.push(Vec::new());
                x.more = self.sides.len() as u32;
            }
            let list = &mut self.sides[x.more as usize - 1];
            Some(
                match list.iter().position(|s| s.mask == mask && s.kind == kind) {
                    Some(i) => i,
                    None => {
                        list.push(Side {
                            mask,
                            kind,
                            s: Shape::default(),
                        });
                        list.len() - 1
                    }
                },
            )
        };
        let more = self.vars[v].more as usize;
        let EpochDetector {
            vars,
            sides,
            shared,
            clocks,
            n,
            window,
            ..
        } = self;
        let shape = match own {
            None => &mut vars[v].s,
            Some(i) => &mut sides[more - 1][i].s,
        };
        if self.fast {
            let slot = if write { &mut shape.w } else { &mut shape.r };
            match (same_epoch(slot, shared, t, c, id, ev.loc), write) {
                (0, _) => {}
                (_, true) => {
                    n.write_same_epoch += 1;
                    return None;
                }
                (1, false) => {
                    n.read_same_epoch += 1;
                    return None;
                }
                (_, false) => {
                    n.read_shared_same_epoch += 1;
                    return None;
                }
            }
        }
        let row = clocks.row(t);
        let mut best = None;
        // The plain whole-variable shape conflicts with every access.
        let x = &vars[v].s;
        check(&x.w, Op::Write, shared, row, *window, id, &mut best);
        if write {
            check(&x.r, Op::Read, shared, row, *window, id, &mut best);
        }
        for side in sides.get(more.wrapping_sub(1)).into_iter().flatten() {
            if side.mask & mask == 0 || (atomic && side.kind != Kind::Plain) {
                continue;
            }
            let (wop, rop) = side.kind.ops();
            check(&side.s.w, wop, shared, row, *window, id, &mut best);
            if write {
                check(&side.s.r, rop, shared, row, *window, id, &mut best);
            }
        }
        let shape = match own {
            None => &mut vars[v].s,
            Some(i) => &mut sides[more - 1][i].s,
        };
        let threads = clocks.num_threads();
        let me = (t, c, id, ev.loc);
        if !write {
            match record(&mut shape.r, shared, threads, row, me) {
                0 => n.read_exclusive += 1,
                1 => n.read_share += 1,
                _ => n.read_shared += 1,
            }
        } else if atomic {
            record(&mut shape.w, shared, threads, row, me);
            n.atomic_writes += 1;
        } else {
            if is_shared(shape.r.e) {
                n.write_shared += 1;
            } else {
                n.write_exclusive += 1;
            }
            shape.w = Epoch {
                e: pack(t, c),
                id,
                loc: ev.loc,
            };
        }
        best
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let n = self.n;
        let s = &mut self.report.stats;
        s.insert("threads".into(), json!(self.clocks.num_threads()));
        s.insert("read_same_epoch".into(), json!(n.read_same_epoch));
        s.insert(
            "read_shared_same_epoch".into(),
            json!(n.read_shared_same_epoch),
        );
        s.insert("read_exclusive".into(), json!(n.read_exclusive));
        s.insert("read_share_transitions".into(), json!(n.read_share));
        s.insert("read_shared".into(), json!(n.read_shared));
        s.insert("write_same_epoch".into(), json!(n.write_same_epoch));
        s.insert("write_exclusive".into(), json!(n.write_exclusive));
        s.insert("write_shared".into(), json!(n.write_shared));
        s.insert("atomic_writes".into(), json!(n.atomic_writes));
        s.insert("read_shared_variables".into(), json!(self.shared.len()));
        let shapes: usize = self.sides.iter().map(Vec::len).sum();
        s.insert("other_shapes".into(), json!(shapes));
        self.report.notes.push(
            "FastTrack2 is exact up to the first race on each variable; later racy events on a variable may be missed"
                .into(),
        );
        self.report.normalize();
        let report = std::mem::take(&mut self.report);
        crate::alloc::drop_later(self, report.events > crate::alloc::BIG);
        report
    }
}
