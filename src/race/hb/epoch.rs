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

use super::in_window;
use super::vc::HbClocks;
use crate::engine::clock::VectorClock;
use crate::relation::{Engine, Relation};
use crate::report::{Access, Race, Report};
use crate::trace::{Event, EventId, Op};

/// `R` value of a read-shared variable.
const SHARED: u64 = u64::MAX;

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

/// `e ⪯ V`: the access of epoch `e` is HB-before the owner of clock `v`.
#[inline]
fn leq(e: u64, v: &VectorClock) -> bool {
    clock(e) == 0 || v.get(tid(e)) >= clock(e)
}

#[derive(Clone, Copy, Debug, Default)]
struct VarState {
    w: u64,
    r: u64,
    w_id: u32,
    w_loc: u32,
    r_id: u32,
    r_loc: u32,
    /// Index of the read vector in `shared` when `r == SHARED`.
    sh: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct ReadSlot {
    clock: u32,
    id: u32,
    loc: u32,
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
}

/// Streaming FastTrack2 detector (`--relation hb --engine epoch`).
pub struct EpochDetector {
    clocks: HbClocks,
    vars: Vec<VarState>,
    shared: Vec<Vec<ReadSlot>>,
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

impl EpochDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        EpochDetector {
            clocks: HbClocks::new(),
            vars: Vec::new(),
            shared: Vec::new(),
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
        if !self.clocks.event(ev) {
            return;
        }
        let v = ev.target as usize;
        if v >= self.vars.len() {
            self.vars.resize(v + 1, VarState::default());
        }
        let race = if ev.op == Op::Read {
            self.read(id, ev)
        } else {
            self.write(id, ev)
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
    fn read(&mut self, id: EventId, ev: &Event) -> Option<Access> {
        let t = ev.thread;
        let row = self.clocks.row(t);
        let c = row.get(t);
        let e = pack(t, c);
        let x = &mut self.vars[ev.target as usize];
        // [READ SAME EPOCH]
        if self.fast && x.r == e {
            x.r_id = id;
            x.r_loc = ev.loc;
            self.n.read_same_epoch += 1;
            return None;
        }
        // [READ SHARED SAME EPOCH]
        if self.fast
            && x.r == SHARED
            && let Some(s) = self.shared[x.sh as usize].get_mut(t as usize)
            && s.clock == c
        {
            s.id = id;
            s.loc = ev.loc;
            self.n.read_shared_same_epoch += 1;
            return None;
        }
        // [WRITE-READ RACE]
        let race = (!leq(x.w, row) && in_window(self.window, id, x.w_id)).then(|| Access {
            id: x.w_id,
            thread: tid(x.w),
            op: Op::Write,
            loc: x.w_loc,
        });
        if x.r != SHARED {
            if leq(x.r, row) {
                // [READ EXCLUSIVE]
                x.r = e;
                x.r_id = id;
                x.r_loc = ev.loc;
                self.n.read_exclusive += 1;
            } else {
                // [READ SHARE]
                let mut slots = vec![ReadSlot::default(); self.clocks.num_threads()];
                let u = tid(x.r) as usize;
                slots[u] = ReadSlot {
                    clock: clock(x.r),
                    id: x.r_id,
                    loc: x.r_loc,
                };
                slots[t as usize] = ReadSlot {
                    clock: c,
                    id,
                    loc: ev.loc,
                };
                x.r = SHARED;
                x.sh = self.shared.len() as u32;
                self.shared.push(slots);
                self.n.read_share += 1;
            }
        } else {
            // [READ SHARED]
            let slots = &mut self.shared[x.sh as usize];
            if slots.len() <= t as usize {
                slots.resize(t as usize + 1, ReadSlot::default());
            }
            slots[t as usize] = ReadSlot {
                clock: c,
                id,
                loc: ev.loc,
            };
            self.n.read_shared += 1;
        }
        race
    }

    #[inline]
    fn write(&mut self, id: EventId, ev: &Event) -> Option<Access> {
        let t = ev.thread;
        let row = self.clocks.row(t);
        let c = row.get(t);
        let e = pack(t, c);
        let x = &mut self.vars[ev.target as usize];
        // [WRITE SAME EPOCH]
        if self.fast && x.w == e {
            x.w_id = id;
            x.w_loc = ev.loc;
            self.n.write_same_epoch += 1;
            return None;
        }
        let mut best = None;
        // [WRITE-WRITE RACE]
        if !leq(x.w, row) && in_window(self.window, id, x.w_id) {
            better(
                &mut best,
                Access {
                    id: x.w_id,
                    thread: tid(x.w),
                    op: Op::Write,
                    loc: x.w_loc,
                },
            );
        }
        if x.r != SHARED {
            // [READ-WRITE RACE] / [WRITE EXCLUSIVE]
            if !leq(x.r, row) && in_window(self.window, id, x.r_id) {
                better(
                    &mut best,
                    Access {
                        id: x.r_id,
                        thread: tid(x.r),
                        op: Op::Read,
                        loc: x.r_loc,
                    },
                );
            }
            self.n.write_exclusive += 1;
        } else {
            // [SHARED-WRITE RACE] / [WRITE SHARED]: the full VC comparison.
            for (u, s) in self.shared[x.sh as usize].iter().enumerate() {
                if s.clock > row.get(u as u32) && in_window(self.window, id, s.id) {
                    better(
                        &mut best,
                        Access {
                            id: s.id,
                            thread: u as u32,
                            op: Op::Read,
                            loc: s.loc,
                        },
                    );
                }
            }
            self.n.write_shared += 1;
        }
        x.w = e;
        x.w_id = id;
        x.w_loc = ev.loc;
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
        s.insert("read_shared_variables".into(), json!(self.shared.len()));
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
