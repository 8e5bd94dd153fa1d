//! The HB rule file `rules/hb.dl` (evaluated by the `reference` engine) and the
//! `datalog` closure over synchronization events agree with `vc` on small
//! generated traces: racy events and witnesses, with and without a window.

use crate::common::hb::{dump, generated, run};

#[test]
fn rules_and_sync_closure_agree_with_vc() {
    for seed in 0..250 {
        let t = generated(seed, 15 + seed % 50);
        for window in [None, Some(3), Some(10)] {
            let vc = run("vc", window, &t);
            let rules = cprace::race::hb::reference::analyze(&t, window).expect("small trace");
            if let Err(d) = cprace::engine::reference::compare(&vc, &rules) {
                panic!("seed {seed} window {window:?}: {d}\n{}", dump(&t));
            }
            let closure = cprace::race::hb::datalog::analyze(&t, window);
            if let Err(d) = cprace::engine::reference::compare(&vc, &closure) {
                panic!("seed {seed} window {window:?}: {d}\n{}", dump(&t));
            }
        }
    }
}

/// 20,000 threads passing one lock along: the HB pairs among their sync
/// events number 8·10^8 (several GB), so an engine that materialises them
/// runs out of memory under the limit. The on-demand evaluation answers
/// within it, with `vc`'s races.
#[cfg(target_os = "linux")]
#[test]
fn many_threads_passing_a_lock_fit_in_bounded_memory() {
    use std::process::Command;
    let dir = std::env::temp_dir().join(format!("cprace-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("chain.std");
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!("T{i}|acq(L)|1\nT{i}|w(x)|2\nT{i}|rel(L)|3\n"));
    }
    // One racy write at the end: T0 writes x again without the lock.
    text.push_str("T0|w(x)|4\n");
    std::fs::write(&trace, text).unwrap();
    let bin = crate::common::cli::BIN;
    let run = |engine: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 500000 && exec '{bin}' analyze '{}' --relation hb --engine {engine} --format csv",
                trace.display()
            ))
            .output()
            .unwrap()
    };
    let (datalog, vc) = (run("datalog"), run("vc"));
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&datalog.stderr);
    assert_eq!(datalog.status.code(), Some(1), "one race; stderr: {err}");
    let racy = |out: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(racy(&datalog.stdout), racy(&vc.stdout));
    assert_eq!(racy(&vc.stdout).len(), 2, "header and the one race");
}
