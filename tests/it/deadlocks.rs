//! Deadlocks against the ground truth: the exhaustive explorer of correct
//! reorderings (tests/it/oracle) on thousands of small generated traces with
//! nested locks taken in random orders, forks, joins (some while holding a
//! lock) and blocked requests.
//!
//! What is promised, and checked on every trace:
//! - every actual and predicted deadlock has a witness the oracle accepts as
//!   a correct reordering prefix after which the deadlock's threads wait in
//!   that cycle (sound), and the independent checker of `cprace verify`
//!   accepts it too;
//! - every deadlock a sync-preserving reordering reaches is reported as
//!   actual or predicted (complete for that class);
//! - every deadlock any reordering reaches is reported (as actual, predicted
//!   or lock-order inversion: the default filters drop nothing reachable);
//! - `--all` lists every cycle of locks the default report lists.
//!
//! Deadlocks are compared by their cycle of locks (the locks requested
//! around the cycle, rotated to start at the smallest), the unit each report
//! lists once.

use std::collections::BTreeSet;

use crate::common::deadlock_gen::trace_text;
use crate::common::traces::dump;
use crate::oracle::{Mode, deadlock_after, deadlock_cycles};
use cprace::deadlock::{Options, analyze_trace};
use cprace::report::{Deadlock, DeadlockKind, Report};
use cprace::trace::{Trace, load_str};

/// Traces checked in CI.
const TRACES: u64 = 6_000;

/// Explorer budget per trace (traces beyond it are skipped and counted).
const BUDGET: usize = 200_000;

/// A deadlock's cycle of locks, as the oracle names cycles.
fn key(d: &Deadlock) -> Vec<u32> {
    let mut v = d.lock_cycle();
    let i = (0..v.len()).min_by_key(|&i| v[i]).unwrap_or(0);
    v.rotate_left(i);
    v
}

fn keys(r: &Report, kinds: &[DeadlockKind]) -> BTreeSet<Vec<u32>> {
    r.deadlocks
        .iter()
        .filter(|d| kinds.contains(&d.kind))
        .map(key)
        .collect()
}

/// Tallies over the traces checked.
#[derive(Debug, Default)]
struct Tally {
    traces: u64,
    skipped: u64,
    reachable: u64,
    sync_preserving: u64,
    predicted: u64,
    actual: u64,
    inversions: u64,
    through_joins: u64,
    missed_without_joins: u64,
}

/// Check one trace; the error says what failed.
fn check(t: &Trace, tally: &mut Tally) -> Result<(), String> {
    let (all, done_all) = deadlock_cycles(t, Mode::All, BUDGET);
    let (sp, done_sp) = deadlock_cycles(t, Mode::SyncPreserving, BUDGET);
    if !(done_all && done_sp) {
        tally.skipped += 1;
        return Ok(());
    }
    tally.traces += 1;
    tally.reachable += all.len() as u64;
    tally.sync_preserving += sp.len() as u64;
    let r = analyze_trace(t, &Options::default());
    for d in &r.deadlocks {
        match d.kind {
            DeadlockKind::Actual => tally.actual += 1,
            DeadlockKind::Predicted => tally.predicted += 1,
            DeadlockKind::Inversion => {
                tally.inversions += 1;
                continue;
            }
        }
        if d.links.iter().any(|l| !l.holder.joins.is_empty()) {
            tally.through_joins += 1;
        }
        let w = d
            .witness
            .as_ref()
            .ok_or_else(|| format!("{:?} deadlock {:?} has no witness", d.kind, d.events()))?;
        let cycles = deadlock_after(t, w, &d.events())
            .map_err(|e| format!("witness of {:?} rejected by the oracle: {e}", d.events()))?;
        if !cycles.contains(&key(d)) {
            return Err(format!(
                "after the witness of {:?}, the threads wait in cycles {cycles:?}, not {:?}",
                d.events(),
                key(d)
            ));
        }
        if !all.contains(&key(d)) {
            return Err(format!("reported cycle {:?} is not reachable", key(d)));
        }
        cprace::witness::deadlock::check(t, &d.events(), None, w)
            .map_err(|e| format!("verify rejects the witness of {:?}: {e}", d.events()))?;
    }
    let sound = keys(&r, &[DeadlockKind::Actual, DeadlockKind::Predicted]);
    if let Some(k) = sp.iter().find(|k| !sound.contains(*k)) {
        return Err(format!(
            "sync-preserving deadlock on locks {k:?} not reported as predicted (reported: {sound:?})"
        ));
    }
    let listed = keys(
        &r,
        &[
            DeadlockKind::Actual,
            DeadlockKind::Predicted,
            DeadlockKind::Inversion,
        ],
    );
    if let Some(k) = all.iter().find(|k| !listed.contains(*k)) {
        return Err(format!(
            "reachable deadlock on locks {k:?} missing from the report (listed: {listed:?})"
        ));
    }
    let every = analyze_trace(
        t,
        &Options {
            all: true,
            ..Options::default()
        },
    );
    let every = keys(
        &every,
        &[
            DeadlockKind::Actual,
            DeadlockKind::Predicted,
            DeadlockKind::Inversion,
        ],
    );
    if let Some(k) = listed.iter().find(|k| !every.contains(*k)) {
        return Err(format!("--all does not list {k:?}"));
    }
    // What SPDOffline's per-thread lock sets alone would miss.
    let spd = analyze_trace(
        t,
        &Options {
            through_joins: false,
            ..Options::default()
        },
    );
    let spd = keys(&spd, &[DeadlockKind::Actual, DeadlockKind::Predicted]);
    tally.missed_without_joins += sp.iter().filter(|k| !spd.contains(*k)).count() as u64;
    Ok(())
}

#[test]
fn deadlocks_agree_with_the_oracle_on_generated_traces() {
    let mut tally = Tally::default();
    for seed in 0..TRACES {
        let text = trace_text(seed);
        let t = load_str(&text, None).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        if let Err(e) = check(&t, &mut tally) {
            panic!("seed {seed}: {e}\ntrace:\n{}", dump(&t));
        }
    }
    println!("{tally:?}");
    assert!(tally.traces >= 5_000, "too few traces checked: {tally:?}");
    // The generator makes every kind common enough to matter.
    assert!(
        tally.predicted > 500 && tally.actual > 100 && tally.inversions > 100,
        "{tally:?}"
    );
    assert!(
        tally.through_joins > 0 && tally.missed_without_joins > 0,
        "{tally:?}"
    );
}
