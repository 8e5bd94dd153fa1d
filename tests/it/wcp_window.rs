//! Windows restrict which pairs are checked, never the relation: racy events
//! grow with K, stay inside the unwindowed set, and both engines agree for
//! every K.

use cprace::race::wcp::{reference, vc};
use cprace::tools::generate::{Config, trace};

#[test]
fn racy_events_monotone_in_window_and_within_unwindowed() {
    for seed in 0..150u64 {
        let cfg = Config {
            events: 60 + seed % 60,
            threads: 2 + (seed % 4) as u32,
            locks: 1 + (seed % 3) as u32,
            vars: 3,
            max_nesting: 2 + (seed % 2) as u32,
            fork_join: seed.is_multiple_of(2),
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        let full = vc::analyze(&t, None).racy_events();
        let d = reference::derive(&t);
        let mut prev: Vec<u32> = Vec::new();
        for k in [1u64, 2, 3, 5, 8, 13, 21, 40, 80, 1000] {
            let v = vc::analyze(&t, Some(k));
            let racy = v.racy_events();
            let r = reference::races(&t, &d.wcp, Some(k));
            assert_eq!(v.races, r, "seed {seed} K {k}: engines disagree");
            assert!(
                prev.iter().all(|e| racy.contains(e)),
                "seed {seed}: K {k} lost racy events of a smaller K"
            );
            assert!(
                racy.iter().all(|e| full.contains(e)),
                "seed {seed}: K {k} reports events the whole trace does not"
            );
            for race in &v.races {
                assert!(
                    u64::from(race.second.id - race.first.id) < k,
                    "seed {seed}: witness {race:?} outside K {k}"
                );
            }
            if k == 1 {
                assert!(racy.is_empty(), "K = 1 pairs nothing");
            }
            if k >= t.len() as u64 {
                assert_eq!(
                    racy, full,
                    "seed {seed}: a window covering the trace is the whole trace"
                );
            }
            prev = racy;
        }
    }
}
