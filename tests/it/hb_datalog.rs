//! The HB rule file `rules/hb.dl` (evaluated by the `reference` engine) and the
//! `datalog` closure over synchronization events agree with `vc` on small
//! generated traces: racy events and witnesses, with and without a window.

use crate::hb_common;

use hb_common::{dump, generated, run};

#[test]
fn rules_and_sync_closure_agree_with_vc() {
    for seed in 0..250 {
        let t = generated(seed, 15 + seed % 50);
        for window in [None, Some(3), Some(10)] {
            let vc = run("vc", window, &t);
            let rules = cprace::reference::hb::analyze(&t, window).expect("small trace");
            if let Err(d) = cprace::reference::compare(&vc, &rules) {
                panic!("seed {seed} window {window:?}: {d}\n{}", dump(&t));
            }
            let closure = cprace::cp::hb_closure::analyze(&t, window);
            if let Err(d) = cprace::reference::compare(&vc, &closure) {
                panic!("seed {seed} window {window:?}: {d}\n{}", dump(&t));
            }
        }
    }
}
