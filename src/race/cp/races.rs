//! The final pass: CP clocks at every event, and the race check.
//!
//! The CP clock `C(y)` is the join of `V_hb(r)` over base edges `(r, a)` with
//! `a <=HBv y`, so it flows along HBv edges exactly like an HBv clock, except that
//! a base edge injects the HB clock of its source (CP is not reflexive: a
//! thread's own events never enter its CP clock by program order alone).
//! Access `e1` is CP-before `e2` iff `C(e2)[thread(e1)] >= local(e1)`.
//!
//! Under a window K every pair is checked: rule (w) makes a pair K or more
//! apart CP-ordered exactly when HB orders it (CP is contained in HB, and HB
//! pairs that far apart are rule (w) pairs), so such pairs are decided by the
//! HB clock of the sync points (the same clocks the fixpoint uses). The CP
//! clock alone decides closer pairs: the base edges dropped under the window
//! span K or more, so they order no pair closer than K. `--max-distance` then
//! only limits which unordered pairs are reported.

use super::input::CpInput;
use crate::engine::clock::VectorClock;
use crate::engine::detector::prefetch_ahead;
use crate::engine::history::AccessHistory;
use crate::engine::sync::{Clocks, VolatileOrder};
use crate::report::Race;
use crate::trace::{Event, EventId, Trace};

/// What the final pass produced.
pub(crate) struct RacePass {
    /// Race witnesses, by racy event (empty when they went to a callback).
    pub races: Vec<Race>,
    /// CP clock at each sync slot (only when asked for: `query` dumps them).
    pub cp_clocks: Vec<VectorClock>,
    /// Ordered pairs of sync events (less than K apart under a window) that
    /// CP orders, and that HB orders (statistics).
    pub cp_pairs: u64,
    /// See `cp_pairs`.
    pub hb_pairs: u64,
}

/// What the pass reports and keeps.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassOptions {
    /// Report only pairs less than this many events apart (None: all).
    pub max_distance: Option<u64>,
    /// Report only the first racy event (clocks are still computed to the end).
    pub first_only: bool,
    /// Keep the CP clock of every sync slot in [`RacePass::cp_clocks`].
    pub keep_clocks: bool,
}

/// Run the pass with base edges `base` (`(a, r)` slots), collecting the
/// races, and keeping the clocks: the form `query` uses.
pub(crate) fn race_pass(
    trace: &Trace,
    input: &CpInput,
    base: &[(u32, u32)],
    max_distance: Option<u64>,
    first_only: bool,
) -> RacePass {
    let mut races = Vec::new();
    let opts = PassOptions {
        max_distance,
        first_only,
        keep_clocks: true,
    };
    let mut pass = race_pass_with(trace, input, base, opts, &mut |r| races.push(r));
    pass.races = races;
    pass
}

/// Run the pass, handing each race to `on_race` as soon as it is found, in
/// trace order of the racy event (one witness per racy event), so a report
/// can stream. Memory beyond the inputs: one clock per thread, lock and
/// volatile variable, the access history, and the CP clocks of the sync
/// slots only with `keep_clocks`.
pub(crate) fn race_pass_with(
    trace: &Trace,
    input: &CpInput,
    base: &[(u32, u32)],
    opts: PassOptions,
    on_race: &mut dyn FnMut(Race),
) -> RacePass {
    let mut counter = PairCounter::new(input);
    let mut state = RaceState::new(opts, input.window);
    // Ordered races (`--order-races`) inject the CP clock of their source.
    state.keep_clocks = opts.keep_clocks || !input.extra_edges.is_empty();
    let incoming = Incoming::new(input, base);
    state.advance(
        &trace.events,
        0,
        input,
        &incoming,
        Some(&mut counter),
        on_race,
    );
    RacePass {
        races: Vec::new(),
        cp_clocks: state.cp_clocks,
        cp_pairs: counter.cp,
        hb_pairs: counter.hb,
    }
}

/// Incoming base sources per target slot (CSR layout).
pub(crate) struct Incoming {
    start: Vec<u32>,
    sources: Vec<u32>,
}

impl Incoming {
    /// Index `base` (`(a, r)` slots of `input`) by target.
    pub(crate) fn new(input: &CpInput, base: &[(u32, u32)]) -> Incoming {
        let n = input.sync.len();
        let mut start = vec![0u32; n + 1];
        for &(a, _) in base {
            start[a as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut sources = vec![0u32; base.len()];
        let mut fill = start.clone();
        for &(a, r) in base {
            sources[fill[a as usize] as usize] = r;
            fill[a as usize] += 1;
        }
        Incoming { start, sources }
    }

    fn of(&self, slot: usize) -> &[u32] {
        &self.sources[self.start[slot] as usize..self.start[slot + 1] as usize]
    }
}

/// The race pass between calls: CP clocks, the access history and each
/// thread's latest HB clock at a point. The batch engine runs it over the
/// whole trace at once; the streaming engine ([`super::stream`]) advances it
/// stretch by stretch, each time as far as the base edges are final.
pub(crate) struct RaceState {
    clocks: Clocks,
    history: AccessHistory,
    /// HB clock of each thread's latest sync point: between its points a
    /// thread receives no HB edge, so that clock is the thread's clock for
    /// every other thread's entry.
    last_hb: Vec<VectorClock>,
    found: bool,
    opts: PassOptions,
    window: Option<u64>,
    /// Keep the CP clock of every point passed (in [`RaceState::cp_clocks`]).
    pub keep_clocks: bool,
    /// The kept CP clocks, by slot.
    pub cp_clocks: Vec<VectorClock>,
}

impl RaceState {
    /// A pass at the start of a trace, under CP window `window`.
    pub(crate) fn new(opts: PassOptions, window: Option<u64>) -> RaceState {
        RaceState {
            clocks: Clocks::empty(false, VolatileOrder::Conflicting),
            history: AccessHistory::new(opts.max_distance),
            last_hb: Vec::new(),
            found: false,
            opts,
            window,
            keep_clocks: opts.keep_clocks,
            cp_clocks: Vec::new(),
        }
    }

    /// Forget what is kept for `vars`, which no later event touches.
    pub(crate) fn retire(&mut self, vars: &[u32]) {
        self.clocks.retire(vars);
        self.history.retire(vars);
    }

    /// Pass `events`, the trace's events from id `first` on. Their points
    /// are `input`'s slots from the first one at or after `first`, with
    /// incoming base sources `incoming`; every base edge into them must be
    /// final.
    pub(crate) fn advance(
        &mut self,
        events: &[Event],
        first: EventId,
        input: &CpInput,
        incoming: &Incoming,
        mut counter: Option<&mut PairCounter<'_>>,
        on_race: &mut dyn FnMut(Race),
    ) {
        let sync = &input.sync;
        let mut slot = sync.events.partition_point(|&e| e < first);
        for (k, ev) in events.iter().enumerate() {
            // The variables' histories a few events ahead, as the streaming
            // detectors load them (CP's race pass on zstd spent 60 % of its
            // accesses' time waiting for a head or its stamps).
            let history = &self.history;
            prefetch_ahead(
                events,
                k,
                |e| history.prefetch(e),
                |e| history.prefetch_stamps(e),
            );
            let i = first + k as EventId;
            let is_point = slot < sync.len() && sync.event(slot as u32) == i;
            let t = ev.thread as usize;
            if self.last_hb.len() <= t {
                self.last_hb.resize(t + 1, VectorClock::default());
            }
            if is_point {
                self.last_hb[t] = sync.clock(slot as u32).clone();
            }
            let sources = if is_point { incoming.of(slot) } else { &[][..] };
            // Ordered races are edges of the composition order too: the CP
            // clock of their source flows into their target.
            let ordered = if is_point && !input.extra_edges.is_empty() {
                let lo = input.extra_edges.partition_point(|e| e.0 < slot as u32);
                let hi = input.extra_edges.partition_point(|e| e.0 <= slot as u32);
                &input.extra_edges[lo..hi]
            } else {
                &[][..]
            };
            let cp_clocks = &self.cp_clocks;
            let (clock, local) = self.clocks.step(ev, |c| {
                for &r in sources {
                    c.join(sync.clock(r));
                }
                for &(_, r) in ordered {
                    c.join(&cp_clocks[r as usize]);
                }
                !sources.is_empty() || !ordered.is_empty()
            });
            let hb = &self.last_hb[t];
            let window = self.window;
            let far_ordered = |u: u32, c: u32, e1: EventId| {
                window.is_some_and(|k| (i - e1) as u64 >= k) && hb.get(u) >= c
            };
            if ev.op.is_memory()
                && !(self.opts.first_only && self.found)
                && let Some(r) = self.history.access_at(i, ev, local, |u, c, e1| {
                    clock.get(u) >= c || far_ordered(u, c, e1)
                })
            {
                self.found = true;
                on_race(r);
            }
            if is_point {
                if let Some(counter) = counter.as_deref_mut() {
                    counter.count(slot as u32, clock);
                }
                if self.keep_clocks {
                    self.cp_clocks.push(clock.clone());
                }
                slot += 1;
            }
        }
    }
}

/// Counts ordered pairs `(x, y)` of sync events, `x` before `y` and (under a
/// window) less than K apart, that CP orders and that HB orders, from the
/// clock of each `y` as the pass reaches it (no clock is kept).
///
/// Thread t contributes `max(0, F_t - G_t)` pairs to `y`, where `F_t` counts
/// t's points the clock of `y` covers and `G_t` those K or more events before
/// `y` (the first ones of the thread). The sum is carried from one point to
/// the next through the entries where the clocks differ (shared blocks are
/// skipped) and the points that leave the window, so the work follows what
/// changed, not the number of threads.
pub(crate) struct PairCounter<'a> {
    input: &'a CpInput,
    /// Per thread, the local positions of its sync points in order.
    per_thread: Vec<Vec<u32>>,
    cp: u64,
    hb: u64,
    /// Per thread, how many of its points are K or more events behind.
    gone: Vec<u32>,
    /// The first slot not yet counted in `gone`.
    next_gone: u32,
    /// The previous point's HB and CP clocks, and the sums over threads for
    /// them.
    prev: [VectorClock; 2],
    sums: [u64; 2],
}

impl<'a> PairCounter<'a> {
    fn new(input: &'a CpInput) -> PairCounter<'a> {
        let sync = &input.sync;
        let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); sync.nthreads];
        for s in 0..sync.len() {
            per_thread[sync.thread[s] as usize].push(sync.local[s]);
        }
        PairCounter {
            input,
            gone: vec![0; per_thread.len()],
            per_thread,
            cp: 0,
            hb: 0,
            next_gone: 0,
            prev: Default::default(),
            sums: [0; 2],
        }
    }

    /// Thread t's term for a clock entry `b`.
    fn term(&self, t: u32, b: u32) -> u64 {
        let f = self.per_thread[t as usize].partition_point(|&l| l <= b) as u64;
        f.saturating_sub(u64::from(self.gone[t as usize]))
    }

    fn count(&mut self, s: u32, cp_clock: &VectorClock) {
        let input = self.input;
        let sync = &input.sync;
        let y = sync.event(s);
        let clocks = [sync.clock(s), cp_clock];
        for (i, c) in clocks.into_iter().enumerate() {
            let mut sum = self.sums[i];
            c.diff(&self.prev[i], |t, new, old| {
                sum = sum + self.term(t, new) - self.term(t, old);
            });
            self.sums[i] = sum;
            self.prev[i] = c.clone();
        }
        if let Some(k) = input.window {
            while self.next_gone < s && ((y - sync.event(self.next_gone)) as u64) >= k {
                let t = sync.thread[self.next_gone as usize];
                for (i, c) in clocks.into_iter().enumerate() {
                    let before = self.term(t, c.get(t));
                    self.gone[t as usize] += 1;
                    self.sums[i] = self.sums[i] - before + self.term(t, c.get(t));
                    self.gone[t as usize] -= 1;
                }
                self.gone[t as usize] += 1;
                self.next_gone += 1;
            }
        }
        // Own points count only before `y` (every other thread's points a
        // clock covers are earlier).
        let own = sync.thread[s as usize];
        let below = sync.local[s as usize] - 1;
        for (i, c) in clocks.into_iter().enumerate() {
            let mine = c.get(own);
            let n = self.sums[i] - self.term(own, mine) + self.term(own, mine.min(below));
            if i == 0 {
                self.hb += n;
            } else {
                self.cp += n;
            }
        }
    }
}
