//! DJIT+-style vector clocks: the exact HB racy-event set.
//!
//! Every thread, lock and volatile variable has a vector clock, stored as rows
//! of flat matrices indexed by dense ids (no allocation per event). A thread's
//! own entry starts at 1 and is incremented after every event that starts an HB
//! edge out of the thread (release, fork, volatile write), so an access of
//! thread `u` performed at local clock `c` is HB-before the current event of
//! thread `t` iff `C_t[u] >= c`. The per-variable read and write clocks of
//! DJIT+ are the per-thread stamps of [`AccessHistory`], which also picks the
//! witness (the latest unordered conflicting access within the window).
//!
//! Edges: `acq(l)` joins the clock of the last `rel(l)` (locks are exclusive,
//! so assigning the releaser's clock to the lock equals joining every earlier
//! release); `fork(t,u)` joins t's clock into u's before u has any event; a
//! `join(t,u)` joins u's final clock into t only if u had an event (a thread
//! without events has neither a first nor a last event, hence no edges);
//! `vw(v)` joins into v's clock (volatile writes are not ordered among
//! themselves) and `vr(v)` joins v's clock.

use serde_json::json;

use crate::history::AccessHistory;
use crate::report::Report;
use crate::trace::{Event, EventId, Op, ThreadId};

const NONE: u32 = u32::MAX;

/// Vector clocks of threads, locks and volatile variables, with the HB edge
/// rules. Shared by the `vc` and `epoch` engines.
#[derive(Clone, Debug)]
pub struct HbClocks {
    /// Entries per row; always greater than every thread id seen.
    stride: usize,
    /// One row per thread seen (`nthreads` rows).
    threads: Vec<u32>,
    nthreads: usize,
    /// Whether the thread has performed any event (join edges need one).
    has_events: Vec<bool>,
    /// One row per lock id below `nlocks`.
    locks: Vec<u32>,
    nlocks: usize,
    /// Variable id -> row in `vols` (NONE for non-volatile variables).
    vol_row: Vec<u32>,
    vols: Vec<u32>,
    nvols: usize,
    /// Joins performed (acquire, join, volatile read, fork).
    pub joins: u64,
}

impl Default for HbClocks {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn join_into(dst: &mut [u32], src: &[u32]) {
    for (a, &b) in dst.iter_mut().zip(src) {
        *a = (*a).max(b);
    }
}

impl HbClocks {
    /// Empty state.
    pub fn new() -> Self {
        HbClocks {
            stride: 8,
            threads: Vec::new(),
            nthreads: 0,
            has_events: Vec::new(),
            locks: Vec::new(),
            nlocks: 0,
            vol_row: Vec::new(),
            vols: Vec::new(),
            nvols: 0,
            joins: 0,
        }
    }

    /// Number of threads seen.
    pub fn num_threads(&self) -> usize {
        self.nthreads
    }

    /// Number of locks seen.
    pub fn num_locks(&self) -> usize {
        self.nlocks
    }

    /// Number of volatile variables seen.
    pub fn num_volatiles(&self) -> usize {
        self.nvols
    }

    fn relayout(m: &mut Vec<u32>, rows: usize, old: usize, new: usize) {
        let mut n = vec![0u32; rows * new];
        for r in 0..rows {
            n[r * new..r * new + old].copy_from_slice(&m[r * old..r * old + old]);
        }
        *m = n;
    }

    /// Make sure thread `t` has a clock row (own entry 1).
    #[inline]
    pub fn ensure_thread(&mut self, t: ThreadId) {
        let t = t as usize;
        if t < self.nthreads {
            return;
        }
        if t >= self.stride {
            let new = (t + 1).next_power_of_two().max(self.stride * 2);
            let old = self.stride;
            Self::relayout(&mut self.threads, self.nthreads, old, new);
            Self::relayout(&mut self.locks, self.nlocks, old, new);
            Self::relayout(&mut self.vols, self.nvols, old, new);
            self.stride = new;
        }
        for u in self.nthreads..=t {
            self.threads.resize((u + 1) * self.stride, 0);
            self.threads[u * self.stride + u] = 1;
        }
        self.has_events.resize(t + 1, false);
        self.nthreads = t + 1;
    }

    #[inline]
    fn ensure_lock(&mut self, l: u32) {
        let l = l as usize;
        if l >= self.nlocks {
            self.locks.resize((l + 1) * self.stride, 0);
            self.nlocks = l + 1;
        }
    }

    #[inline]
    fn vol(&mut self, v: u32) -> usize {
        let v = v as usize;
        if v >= self.vol_row.len() {
            self.vol_row.resize(v + 1, NONE);
        }
        if self.vol_row[v] == NONE {
            self.vol_row[v] = self.nvols as u32;
            self.nvols += 1;
            self.vols.resize(self.nvols * self.stride, 0);
        }
        self.vol_row[v] as usize
    }

    /// The clock row of thread `t` (must have been ensured). Entries past the
    /// threads seen are 0.
    #[inline]
    pub fn row(&self, t: ThreadId) -> &[u32] {
        let s = self.stride;
        &self.threads[t as usize * s..t as usize * s + s]
    }

    /// The own clock of thread `t`.
    #[inline]
    pub fn own(&self, t: ThreadId) -> u32 {
        self.threads[t as usize * self.stride + t as usize]
    }

    /// Join `src` (a clock row saved earlier) into thread `t`'s clock; used by
    /// relations that add edges to HB (SHB's reads-from edges).
    #[inline]
    pub fn join_thread(&mut self, t: ThreadId, src: &[u32]) {
        let s = self.stride;
        let t = t as usize;
        join_into(&mut self.threads[t * s..t * s + s], src);
        self.joins += 1;
    }

    /// Advance thread `t`'s own entry: the event just handled starts an edge
    /// out of the thread (e.g. a write another thread may read from).
    #[inline]
    pub fn tick_thread(&mut self, t: ThreadId) {
        self.tick(t as usize);
    }

    #[inline]
    fn tick(&mut self, t: usize) {
        self.threads[t * self.stride + t] += 1;
    }

    /// Account for event `ev` of its thread: ensures the thread's row and
    /// applies the HB edge rules for synchronization events. Returns whether
    /// `ev` is a data access (the caller's business).
    #[inline]
    pub fn event(&mut self, ev: &Event) -> bool {
        let t = ev.thread as usize;
        self.ensure_thread(ev.thread);
        self.has_events[t] = true;
        let s = self.stride;
        match ev.op {
            Op::Read | Op::Write => return true,
            Op::Acquire => {
                self.ensure_lock(ev.target);
                let l = ev.target as usize;
                join_into(
                    &mut self.threads[t * s..t * s + s],
                    &self.locks[l * s..l * s + s],
                );
                self.joins += 1;
            }
            Op::Release => {
                self.ensure_lock(ev.target);
                let l = ev.target as usize;
                self.locks[l * s..l * s + s].copy_from_slice(&self.threads[t * s..t * s + s]);
                self.tick(t);
            }
            Op::Fork => {
                self.ensure_thread(ev.target);
                let s = self.stride;
                let u = ev.target as usize;
                if u != t {
                    let (src, dst) = two_rows(&mut self.threads, s, t, u);
                    join_into(dst, src);
                    self.joins += 1;
                }
                self.tick(t);
            }
            Op::Join => {
                let u = ev.target as usize;
                if u != t && self.has_events.get(u).copied().unwrap_or(false) {
                    let (src, dst) = two_rows(&mut self.threads, s, u, t);
                    join_into(dst, src);
                    self.joins += 1;
                }
            }
            Op::VolatileWrite => {
                let r = self.vol(ev.target);
                join_into(
                    &mut self.vols[r * s..r * s + s],
                    &self.threads[t * s..t * s + s],
                );
                self.tick(t);
            }
            Op::VolatileRead => {
                let r = self.vol(ev.target);
                join_into(
                    &mut self.threads[t * s..t * s + s],
                    &self.vols[r * s..r * s + s],
                );
                self.joins += 1;
            }
            Op::ReentrantAcquire | Op::ReentrantRelease => {}
        }
        false
    }
}

/// Rows `a` (shared) and `b` (mutable) of a matrix with `stride`; `a != b`.
#[inline]
fn two_rows(m: &mut [u32], stride: usize, a: usize, b: usize) -> (&[u32], &mut [u32]) {
    if a < b {
        let (lo, hi) = m.split_at_mut(b * stride);
        (&lo[a * stride..a * stride + stride], &mut hi[..stride])
    } else {
        let (lo, hi) = m.split_at_mut(a * stride);
        (&hi[..stride], &mut lo[b * stride..b * stride + stride])
    }
}

/// Streaming vector-clock HB detector (`--relation hb --engine vc`).
pub struct VcDetector {
    clocks: HbClocks,
    history: AccessHistory,
    report: Report,
}

impl VcDetector {
    /// A detector pairing accesses less than `window` events apart.
    pub fn new(window: Option<u64>) -> Self {
        VcDetector {
            clocks: HbClocks::new(),
            history: AccessHistory::new(window),
            report: Report::new("hb", "vc", window, 0),
        }
    }

    /// Feed the next event.
    #[inline]
    pub fn event(&mut self, id: EventId, ev: &Event) {
        self.report.events += 1;
        if self.clocks.event(ev) {
            let row = self.clocks.row(ev.thread);
            let clock = row[ev.thread as usize];
            let race = self.history.access(id, ev, clock, |u, c| {
                row.get(u as usize).is_some_and(|&x| x >= c)
            });
            if let Some(r) = race {
                self.report.races.push(r);
            }
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        let c = &self.clocks;
        self.report
            .stats
            .insert("threads".into(), json!(c.num_threads()));
        self.report
            .stats
            .insert("locks".into(), json!(c.num_locks()));
        self.report
            .stats
            .insert("volatiles".into(), json!(c.num_volatiles()));
        self.report
            .stats
            .insert("clock_joins".into(), json!(c.joins));
        self.report.normalize();
        self.report
    }
}
