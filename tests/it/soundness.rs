//! Soundness, tested against the ground truth: the exhaustive explorer of
//! correct reorderings (tests/oracle) on small generated traces with
//! volatiles, nested and re-entrant locks, out-of-nesting releases, fork/join
//! and (in every fourth trace, cut short) critical sections never released.
//!
//! What theory promises, and exactly what is checked (docs/src/semantic-decisions.md "Semantic
//! decisions"):
//! - **CP** (CP paper, Theorem 1 and the paragraph after it) and **WCP** (WCP
//!   paper, Theorem 1 and its proof): the *first* race -- the earliest racy
//!   event e2 with its witness e1, the latest conflicting access before e2 the
//!   relation leaves unordered -- is a predictable race, or the trace has a
//!   predictable deadlock. Checked for CP exact, at several windows K (the
//!   window rule only adds HBv-ordered pairs), through `--first-race` on the
//!   library and on the command line, and for WCP (exact; its `--window` only
//!   limits reporting).
//! - **CP `--order-races`** (the paragraph after Theorem 1: every reported race
//!   becomes a CP edge, so the theorem applies to the next): *every* reported
//!   race is predictable, or the trace has a predictable deadlock.
//! - **HB**: a race (e1, e2) is predictable whenever no read strictly
//!   HB-before e1 or e2 reads (a byte) from a write it is HB-unordered with:
//!   then the events strictly HB-before e1 or e2, in trace order, are a
//!   correct reordering prefix after which both are next. Checked for every
//!   such HB-unordered pair, witnesses or not. The first race always
//!   qualifies (its past reads only from HB-ordered writes: any other would be
//!   an earlier race) unless an atomic read reads from another thread's
//!   atomic write without synchronizing (a relaxed access on either side):
//!   HB then reports a data race in the C11 sense that no correct reordering
//!   exhibits (a relaxed flag publishing plain data), counted, not asserted.
//! - Beyond these, CP's and WCP's other reports carry no guarantee; they are
//!   counted (printed with `--nocapture`), not asserted.
//! - The laws, on the same traces: HBv races ⊆ CP(K) races ⊆ exact CP races ⊆
//!   WCP races, HBv races ⊆ HB races, CP races grow with K, HB races ⊆ CP
//!   races where HBv = HB; and the streaming HBv races equal the brute-force
//!   HBv matrix's.
//!
//! `soundness_on_generated_traces` runs in CI (a few hundred traces), and
//! `soundness_with_atomics_and_masks` as many more that mix plain and atomic
//! (relaxed and synchronizing) accesses of the same variables, half of them
//! with random byte masks; `soundness_on_many_generated_traces` (ignored;
//! `scripts/soundness.sh`) runs thousands.

#![allow(clippy::needless_range_loop)]

use crate::common;
use crate::oracle;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::cli::cprace;
use common::laws::{hbv_is_hb, hbv_racy, subset};
use common::oracle as defs;
use common::traces::dump;
use cprace::race::cp::{Reporting, analyze as cp_analyze};
use cprace::report::{Race, Report};
use cprace::tools::generate::{Config, Rng, trace as generate};
use cprace::trace::{EventId, Format, Op, Trace, load_str};
use oracle::{Exploration, Mode, explore_with};
use serde_json::Value;

/// Windows CP is checked at (besides exact): tiny ones make the window rule
/// do most of the work, the default one is what users get.
const WINDOWS: [u64; 6] = [2, 3, 5, 8, 13, cprace::race::cp::DEFAULT_WINDOW];

/// Explorer budget per trace; traces beyond it are skipped (and counted).
const BUDGET: usize = 300_000;

/// The generator's knobs for `seed`: 2-4 threads, at most ~40 events. Every
/// other trace is sync-heavy (long, nested critical sections, few accesses
/// outside them): where CP and WCP predict races HB misses, and where lock
/// order inversions make predictable deadlocks; every fourth is
/// volatile-heavy.
fn config(seed: u64) -> Config {
    if seed % 4 == 2 {
        // Volatile-heavy, race-poor: short traces on one data variable where
        // volatile accesses inside and between critical sections decide
        // whether CP and WCP may reorder them (the shape of data/volatile/issue11.std).
        return Config {
            events: 10 + seed % 15,
            threads: 2 + (seed / 4 % 2) as u32,
            locks: 1 + (seed / 8 % 2) as u32,
            vars: 1,
            volatiles: 1 + (seed / 16 % 2) as u32,
            max_nesting: 1 + (seed / 32 % 2) as u32,
            p_acquire: 0.35,
            p_release: 0.3,
            p_unlocked_access: 0.3,
            locked_share: Some(0.6),
            p_volatile: 0.35,
            fork_join: false,
            p_reentrant: 0.03,
            p_out_of_order_release: 0.2,
            locs_per_thread: 4,
            seed,
            ..Config::default()
        };
    }
    if seed % 2 == 1 {
        return Config {
            events: 16 + seed % 25,
            threads: 2 + (seed / 2 % 2) as u32,
            locks: 2 + (seed / 4 % 2) as u32,
            vars: 1 + (seed / 8 % 2) as u32,
            volatiles: 1,
            max_nesting: 2 + (seed / 16 % 2) as u32,
            p_acquire: 0.45,
            p_release: 0.2,
            p_unlocked_access: 0.25,
            locked_share: Some(0.8),
            p_volatile: 0.12,
            fork_join: !seed.is_multiple_of(3),
            p_reentrant: 0.05,
            p_out_of_order_release: 0.25,
            locs_per_thread: 4,
            seed,
            ..Config::default()
        };
    }
    let threads = 2 + (seed % 3) as u32;
    let events = if threads == 4 {
        12 + seed % 17
    } else {
        12 + seed % 29
    };
    Config {
        events,
        threads,
        locks: 1 + (seed % 3) as u32,
        vars: 1 + (seed / 3 % 3) as u32,
        volatiles: 1 + (seed % 2) as u32,
        max_nesting: 1 + (seed / 2 % 3) as u32,
        p_acquire: 0.3,
        p_release: 0.3,
        p_unlocked_access: 0.6,
        p_volatile: 0.1 + 0.05 * (seed % 4) as f64,
        fork_join: !seed.is_multiple_of(3),
        p_reentrant: 0.08,
        p_out_of_order_release: 0.3,
        locs_per_thread: 4,
        seed,
        ..Config::default()
    }
}

/// The STD text of `t`.
fn std_text(t: &Trace) -> String {
    let mut out = Vec::new();
    cprace::trace::std_format::write(t, &mut out).expect("write STD");
    String::from_utf8(out).expect("utf-8")
}

/// The trace of `seed`; every fourth one is cut at a random point, which
/// leaves critical sections never released (re-validated through STD).
fn trace(seed: u64) -> Trace {
    let t = generate(&config(seed));
    if seed % 4 != 3 || t.len() < 4 {
        return t;
    }
    let mut cut = t.clone();
    let mut rng = Rng::new(seed);
    let n = t.len() as u64;
    cut.events.truncate((n / 2 + rng.below(n / 2)) as usize);
    load_str(&std_text(&cut), Some(Format::Std)).unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

/// The knobs of `atomic_trace(seed)`: short traces whose data variables are
/// also accessed atomically (relaxed and synchronizing), inside and outside
/// critical sections; every other one with random byte masks.
fn atomic_config(seed: u64) -> Config {
    Config {
        events: 12 + seed % 20,
        threads: 2 + (seed / 3 % 2) as u32,
        locks: 1 + (seed % 2) as u32,
        vars: 1 + u32::from(seed / 2 % 2 == 1 || seed / 4 % 2 == 1),
        volatiles: 0,
        max_nesting: 1 + (seed / 8 % 2) as u32,
        p_acquire: 0.3,
        p_release: 0.3,
        // Every other trace keeps most accesses in critical sections, where
        // CP and WCP predict: their first races are then often HB-ordered.
        p_unlocked_access: if (seed / 2).is_multiple_of(2) {
            0.5
        } else {
            0.05
        },
        p_atomic: 0.25 + 0.1 * (seed % 3) as f64,
        masks: seed % 2 == 1,
        fork_join: !seed.is_multiple_of(3),
        p_reentrant: 0.03,
        p_out_of_order_release: 0.2,
        locs_per_thread: 4,
        seed,
        ..Config::default()
    }
}

/// The trace of `atomic_config(seed)`, cut like [`trace`]'s every fourth.
fn atomic_trace(seed: u64) -> Trace {
    let t = generate(&atomic_config(seed));
    if seed % 4 != 3 || t.len() < 4 {
        return t;
    }
    let n = t.len() as u64;
    let mut cut = t.clone();
    cut.events
        .truncate((n / 2 + Rng::new(seed).below(n / 2)) as usize);
    let mut back =
        load_str(&std_text(&cut), Some(Format::Std)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    // STD has no masks: give the events theirs back.
    for (e, c) in back.events.iter_mut().zip(&cut.events) {
        e.mask = c.mask;
    }
    back
}

/// The first race of a report: the witness of its earliest racy event.
fn first(r: &Report) -> Option<(EventId, EventId)> {
    r.races
        .iter()
        .min_by_key(|r| r.second.id)
        .map(|r| (r.first.id, r.second.id))
}

fn pairs(races: &[Race]) -> Vec<(EventId, EventId)> {
    races.iter().map(|r| (r.first.id, r.second.id)).collect()
}

/// What the run saw, so the test can refuse to pass vacuously.
#[derive(Default, Debug)]
struct Tally {
    traces: usize,
    skipped_budget: usize,
    deadlocks: usize,
    hb_first: usize,
    /// HB first races whose past reads an unsynchronized atomic write.
    hb_first_relaxed: usize,
    /// CP and WCP first races whose past reads from an HB-unordered write
    /// or holds an atomic write an unordered atomic read did not see
    /// ([`Checker::cp_dirty_past`]).
    first_relaxed: usize,
    hb_beyond: usize,
    cp_first: usize,
    /// CP and WCP first races HB orders (their own predictions).
    cp_first_not_hb: usize,
    wcp_first_not_hb: usize,
    wcp_first: usize,
    order_races: usize,
    /// Traces where HBv orders more than HB.
    hbv_not_hb: usize,
    /// Reports beyond the guarantees, and how many of them the oracle refutes.
    cp_later: usize,
    cp_later_unpredictable: usize,
    wcp_later: usize,
    wcp_later_unpredictable: usize,
}

/// Checks one trace; failures are pushed as messages.
struct Checker<'a> {
    seed: u64,
    t: &'a Trace,
    x: &'a Exploration,
    fails: &'a mut Vec<String>,
    tally: &'a mut Tally,
}

impl Checker<'_> {
    fn fail(&mut self, what: String) {
        self.fails
            .push(format!("seed {}: {what}\n{}", self.seed, dump(self.t)));
    }

    /// A first race (or an --order-races report): predictable, or the trace
    /// has a predictable deadlock.
    fn race_or_deadlock(&mut self, what: &str, pair: (EventId, EventId)) {
        if !self.x.is_race(pair.0, pair.1) && !self.x.deadlock {
            self.fail(format!(
                "{what} reports {pair:?}, which is no predictable race, and there is no predictable \
                 deadlock (predictable races: {:?})",
                self.x.races
            ));
        }
    }

    /// Per event, whether its strict HB past holds a read of some
    /// byte from an HB-unordered write (through a relaxed atomic, say): a
    /// pair with such a past is a data race of the execution as it ran (C11
    /// defines races on the execution), but no correct reordering need keep
    /// it apart, so the theorems below do not speak of it.
    fn dirty_past(t: &Trace) -> Vec<bool> {
        let n = t.len();
        let hb = defs::hb_matrix(t);
        let mut last_write: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        let mut dirty_read = vec![false; n];
        for (i, ev) in t.events.iter().enumerate() {
            let bytes = (0..8u32).filter(|b| ev.bytes() >> b & 1 == 1);
            match ev.op {
                op if op.is_write() => bytes.for_each(|b| {
                    last_write.insert((ev.target, b), i);
                }),
                op if op.is_memory() => {
                    dirty_read[i] = bytes
                        .filter_map(|b| last_write.get(&(ev.target, b)))
                        .any(|&w| !hb[w][i]);
                }
                _ => {}
            }
        }
        (0..n)
            .map(|e| (0..e).any(|r| dirty_read[r] && hb[r][e]))
            .collect()
    }

    /// What the CP and WCP theorems leave out besides [`Self::dirty_past`]
    /// (docs/src/semantic-decisions.md): per event, whether its strict HB
    /// past holds an atomic write that an earlier atomic read of another
    /// thread, of a common byte, precedes without HBv ordering it, one of
    /// the two relaxed. The read did not see the write, so a correct
    /// reordering that runs both keeps the read first; two atomic accesses
    /// never race, so such a pair is no earlier race either, and CP and WCP,
    /// which move critical sections, may run the write first.
    fn cp_dirty_past(t: &Trace) -> Vec<bool> {
        let n = t.len();
        let hb = defs::hb_matrix(t);
        let hbv = defs::hbv_matrix(t);
        let relaxed = |e: &cprace::trace::Event| matches!(e.op, Op::AtomicRead | Op::AtomicWrite);
        let unseen: Vec<bool> = (0..n)
            .map(|w| {
                let ew = &t.events[w];
                ew.op.is_atomic()
                    && ew.op.is_write()
                    && (0..w).any(|r| {
                        let er = &t.events[r];
                        er.op.is_atomic()
                            && !er.op.is_write()
                            && er.thread != ew.thread
                            && er.target == ew.target
                            && er.bytes() & ew.bytes() != 0
                            && (relaxed(er) || relaxed(ew))
                            && !hbv[r][w]
                    })
            })
            .collect();
        let dirty = Self::dirty_past(t);
        (0..n)
            .map(|e| dirty[e] || (0..e).any(|w| unseen[w] && hb[w][e]))
            .collect()
    }

    fn hb(&mut self) {
        let t = self.t;
        let n = t.len();
        let hb = defs::hb_matrix(t);
        let dirty = Self::dirty_past(t);
        let reads_dirty = |e: usize| dirty[e];
        let hb_report = crate::common::hb::run("vc", None, t);
        if let Some(p) = first(&hb_report) {
            self.tally.hb_first += 1;
            if reads_dirty(p.0 as usize) || reads_dirty(p.1 as usize) {
                self.tally.hb_first_relaxed += 1;
            } else if !self.x.is_race(p.0, p.1) {
                self.fail(format!("HB's first race {p:?} is not predictable"));
            }
        }
        for j in 0..n {
            for i in 0..j {
                if !defs::conflict(t, i, j) || hb[i][j] || reads_dirty(i) || reads_dirty(j) {
                    continue;
                }
                self.tally.hb_beyond += 1;
                if !self.x.is_race(i as u32, j as u32) {
                    self.fail(format!(
                        "HB race ({i}, {j}) with a clean HB past is not predictable"
                    ));
                }
            }
        }
    }

    fn cp(&mut self) {
        let hb = defs::hb_matrix(self.t);
        let dirty = Self::cp_dirty_past(self.t);
        for k in WINDOWS.iter().map(|&k| Some(k)).chain([None]) {
            let all = cp_analyze(self.t, k, Reporting::All);
            let fr = cp_analyze(self.t, k, Reporting::FirstRace);
            if first(&all) != first(&fr) {
                self.fail(format!(
                    "CP K={k:?}: --first-race {:?} is not the first of all races {:?}",
                    first(&fr),
                    first(&all)
                ));
            }
            if let Some(p) = first(&fr) {
                self.tally.cp_first += 1;
                self.tally.cp_first_not_hb += usize::from(hb[p.0 as usize][p.1 as usize]);
                if dirty[p.0 as usize] || dirty[p.1 as usize] {
                    self.tally.first_relaxed += 1;
                } else {
                    self.race_or_deadlock(&format!("CP K={k:?} --first-race"), p);
                }
            }
            for p in pairs(&all.races)
                .into_iter()
                .filter(|&p| Some(p) != first(&all))
            {
                if k.is_none() {
                    self.tally.cp_later += 1;
                    self.tally.cp_later_unpredictable += usize::from(!self.x.is_race(p.0, p.1));
                }
            }
            let ordered = cp_analyze(self.t, k, Reporting::OrderRaces);
            for p in pairs(&ordered.races) {
                self.tally.order_races += 1;
                if !(dirty[p.0 as usize] || dirty[p.1 as usize]) {
                    self.race_or_deadlock(&format!("CP K={k:?} --order-races"), p);
                }
            }
        }
    }

    fn wcp(&mut self) {
        let r = cprace::race::wcp::vc::analyze(self.t, None);
        if let Some(p) = first(&r) {
            self.tally.wcp_first += 1;
            let hb = defs::hb_matrix(self.t);
            self.tally.wcp_first_not_hb += usize::from(hb[p.0 as usize][p.1 as usize]);
            let dirty = Self::cp_dirty_past(self.t);
            if dirty[p.0 as usize] || dirty[p.1 as usize] {
                self.tally.first_relaxed += 1;
            } else {
                self.race_or_deadlock("WCP's first race", p);
            }
        }
        for p in pairs(&r.races)
            .into_iter()
            .filter(|&p| Some(p) != first(&r))
        {
            self.tally.wcp_later += 1;
            self.tally.wcp_later_unpredictable += usize::from(!self.x.is_race(p.0, p.1));
        }
    }

    fn laws(&mut self) {
        let t = self.t;
        let hbv = hbv_racy(t, None);
        let brute = defs::racy(t, &defs::hbv_matrix(t), None);
        if hbv != brute {
            self.fail(format!(
                "HBv races {hbv:?} but the HBv matrix says {brute:?}"
            ));
        }
        let hb = crate::common::hb::run("vc", None, t).racy_events();
        let exact = cp_analyze(t, None, Reporting::All).racy_events();
        let wcp = cprace::race::wcp::vc::analyze(t, None).racy_events();
        let plain = hbv_is_hb(t);
        self.tally.hbv_not_hb += usize::from(!plain);
        let mut laws = vec![
            ("HBv ⊆ HB", subset(&hbv, &hb)),
            ("HBv ⊆ exact CP", subset(&hbv, &exact)),
            ("exact CP ⊆ WCP", subset(&exact, &wcp)),
            (
                "HB ⊆ exact CP where HBv = HB",
                !plain || subset(&hb, &exact),
            ),
        ];
        let mut previous: Vec<EventId> = Vec::new();
        for k in WINDOWS {
            let cp = cp_analyze(t, Some(k), Reporting::All).racy_events();
            let hbv_k = hbv_racy(t, Some(k));
            laws.push(("HBv(K) ⊆ CP(K)", subset(&hbv_k, &cp)));
            laws.push(("CP(K) ⊆ exact CP", subset(&cp, &exact)));
            laws.push(("CP grows with K", subset(&previous, &cp)));
            if plain {
                let hb_k = crate::common::hb::run("vc", Some(k), t).racy_events();
                laws.push(("HB(K) ⊆ CP(K) where HBv = HB", subset(&hb_k, &cp)));
            }
            previous = cp;
        }
        for (law, holds) in laws {
            if !holds {
                self.fail(format!("law {law} fails"));
            }
        }
    }
}

/// Run every check on the traces of `seeds`; the command line gets every
/// `cli_every`-th trace. Returns the tally; panics with the first failures.
fn run(seeds: impl Iterator<Item = u64>, cli_every: u64) -> Tally {
    run_on(seeds, cli_every, trace)
}

/// [`run`] on the traces `make` gives (the command line only gets those
/// without byte masks, which no text format holds).
fn run_on(seeds: impl Iterator<Item = u64>, cli_every: u64, make: fn(u64) -> Trace) -> Tally {
    let mut tally = Tally::default();
    let mut fails = Vec::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("soundness");
    std::fs::create_dir_all(&dir).expect("temp dir");
    for seed in seeds {
        let t = make(seed);
        let x = explore_with(&t, Mode::All, BUDGET);
        if !x.complete {
            tally.skipped_budget += 1;
            continue;
        }
        tally.traces += 1;
        tally.deadlocks += usize::from(x.deadlock);
        let mut c = Checker {
            seed,
            t: &t,
            x: &x,
            fails: &mut fails,
            tally: &mut tally,
        };
        c.hb();
        c.cp();
        c.wcp();
        c.laws();
        if seed % cli_every == 0 && t.events.iter().all(|e| e.mask == 0) {
            cli_first_race(seed, &t, &x, &dir, &mut fails);
        }
    }
    if !fails.is_empty() {
        panic!(
            "{} failures over {} traces; the first ones:\n{}",
            fails.len(),
            tally.traces,
            fails.iter().take(3).cloned().collect::<Vec<_>>().join("\n")
        );
    }
    eprintln!("{tally:?}");
    tally
}

/// `cprace analyze --relation cp --first-race` (default window and exact):
/// its race is the library's, and predictable or there is a deadlock.
fn cli_first_race(
    seed: u64,
    t: &Trace,
    x: &Exploration,
    dir: &std::path::Path,
    fails: &mut Vec<String>,
) {
    let path = dir.join(format!("seed-{seed}.std"));
    std::fs::write(&path, std_text(t)).expect("write trace");
    let f = path.display().to_string();
    for window in [None, Some(5)] {
        let mut args = vec![
            "analyze",
            &f,
            "--relation",
            "cp",
            "--first-race",
            "--format",
            "json",
        ];
        let k = window.map(|k: u64| k.to_string());
        match &k {
            Some(k) => args.extend(["--window", k]),
            None => args.extend(["--window", "none"]),
        }
        let (code, out, err) = cprace(&args);
        let j: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {err}"));
        let races: Vec<(EventId, EventId)> = j["races"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["first"].as_u64().unwrap() as u32,
                    r["second"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        let lib = first(&cp_analyze(t, window, Reporting::FirstRace));
        if races.first().copied() != lib || races.len() > 1 || code != i32::from(lib.is_some()) {
            fails.push(format!(
                "seed {seed}: {args:?} exits {code} with {races:?}, the library says {lib:?}"
            ));
        }
        let dirty = Checker::dirty_past(t);
        if let Some(&(a, b)) = races.first()
            && !(dirty[a as usize] || dirty[b as usize])
            && !x.is_race(a, b)
            && !x.deadlock
        {
            fails.push(format!(
                "seed {seed}: {args:?} reports ({a}, {b}), no predictable race and no deadlock\n{}",
                dump(t)
            ));
        }
    }
}

#[test]
fn soundness_on_generated_traces() {
    let t = run(0..600, 10);
    // Not vacuous: the traces race, deadlock, separate CP from HB and HBv
    // from HB, and the explorer finished on nearly all of them.
    assert!(t.skipped_budget * 20 < t.traces, "{t:?}");
    assert!(
        t.hb_first > 100 && t.cp_first > 300 && t.wcp_first > 100,
        "{t:?}"
    );
    assert!(
        t.cp_first_not_hb > 5 && t.wcp_first_not_hb > 2 && t.deadlocks > 5 && t.hbv_not_hb > 50,
        "{t:?}"
    );
    assert!(t.hb_beyond > 300 && t.order_races > 500, "{t:?}");
}

/// The volatile-heavy traces alone (the shape of data/volatile/issue11.std), many of them: small,
/// so cheap to explore.
#[test]
fn soundness_on_volatile_heavy_traces() {
    let t = run((0..2500).map(|i| 4 * i + 2), 50);
    assert!(t.cp_first > 500 && t.hbv_not_hb > 500, "{t:?}");
}

/// Plain and atomic accesses of the same variables, with and without byte
/// masks: the theorems hold as for Java traces (relaxed atomics give HB no
/// edge, so some HB first races are data races no reordering exhibits; they
/// are counted).
#[test]
fn soundness_with_atomics_and_masks() {
    let t = run_on(0..500, 10, atomic_trace);
    assert!(t.skipped_budget * 20 < t.traces, "{t:?}");
    assert!(
        t.hb_first > 100 && t.cp_first > 100 && t.wcp_first > 100,
        "{t:?}"
    );
    assert!(
        t.hb_first_relaxed > 5 && t.hbv_not_hb > 100 && t.hb_beyond > 100,
        "{t:?}"
    );
}

#[test]
#[ignore = "thousands of traces; run by scripts/soundness.sh"]
fn soundness_on_many_generated_traces() {
    run(300..5300, 50);
    run_on(500..3500, 50, atomic_trace);
}
