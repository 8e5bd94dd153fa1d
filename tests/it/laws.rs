//! The laws docs/src/semantic-decisions.md "Semantic decisions" states between the relations, on
//! generated traces (volatiles included) larger than the oracles can handle.
//! A window bounds CP's reasoning, not the report, so for every K:
//! - HBv races ⊆ windowed CP races ⊆ exact CP races ⊆ WCP races;
//! - HBv races ⊆ HB races (HBv has every HB edge);
//! - CP races only grow with K;
//! - HB races ⊆ CP races on traces where HBv adds no edge to HB (every two
//!   atomic accesses of a variable by different threads, one a write, are a
//!   volatile write and a later volatile read);
//! - the same containments among the reports limited to pairs less than K
//!   apart (`--max-distance K`, the CP paper's report).

use crate::common;

use common::laws::{hbv_is_hb, hbv_racy, subset};
use cprace::race::{Options, analyze_trace};
use cprace::relation::Relation;
use cprace::tools::generate::{Config, trace};
use cprace::trace::Trace;

/// Racy events of `relation` with reasoning window `window` (CP only) and
/// reporting distance `distance`.
fn racy(t: &Trace, relation: Relation, window: Option<u64>, distance: Option<u64>) -> Vec<u32> {
    let mut opts = Options::new(relation);
    opts.window = window;
    opts.max_distance = distance;
    analyze_trace(t, &opts)
        .expect("analysis runs")
        .racy_events()
}

#[test]
fn containment_and_monotonicity() {
    // [HBv < CP(K), CP(K) < exact, HB < exact (HB = HBv traces), exact < WCP,
    //  HBv < HB, traces where HB = HBv, traces where not, CP(K) within K <
    //  CP(K)]
    let mut strict = [0usize; 8];
    for seed in 0..200u64 {
        // Every fourth trace mixes plain and atomic accesses of the same
        // variables (relaxed and synchronizing), half of those with masks.
        let atomics = seed % 4 == 3;
        let cfg = Config {
            p_atomic: if atomics { 0.2 } else { 0.0 },
            masks: atomics && seed % 8 == 7,
            events: 200 + seed * 3,
            threads: 2 + (seed % 5) as u32,
            locks: 1 + (seed % 4) as u32,
            vars: 3 + (seed % 6) as u32,
            max_nesting: 1 + (seed % 3) as u32,
            fork_join: seed % 2 == 0,
            volatiles: (seed % 3) as u32,
            p_volatile: if seed % 3 == 2 { 0.1 } else { 0.03 },
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        let plain = hbv_is_hb(&t);
        strict[5 + usize::from(!plain)] += 1;
        let exact = racy(&t, Relation::Cp, None, None);
        let hb_all = racy(&t, Relation::Hb, None, None);
        let hbv_all = hbv_racy(&t, None);
        let mut previous: Vec<u32> = Vec::new();
        for k in [1, 2, 5, 10, 30, 100, 300, 1000] {
            let cp = racy(&t, Relation::Cp, Some(k), None);
            assert!(
                subset(&hbv_all, &cp),
                "seed {seed} K={k}: HBv races not within CP races"
            );
            if plain {
                assert!(
                    subset(&hb_all, &cp),
                    "seed {seed} K={k}: HB races not within CP races (HB = HBv here)"
                );
            }
            // The CP paper's report (--window K --max-distance K): the same
            // containments among pairs less than K apart.
            let hbv_near = hbv_racy(&t, Some(k));
            let cp_near = racy(&t, Relation::Cp, Some(k), Some(k));
            let exact_near = racy(&t, Relation::Cp, None, Some(k));
            assert!(
                subset(&hbv_near, &cp_near) && subset(&cp_near, &exact_near),
                "seed {seed} K={k}: HBv ⊆ CP ⊆ exact CP fails within distance K"
            );
            assert!(
                subset(&cp_near, &cp),
                "seed {seed} K={k}: --max-distance added races"
            );
            if plain {
                let hb = racy(&t, Relation::Hb, None, Some(k));
                assert_eq!(
                    hb, hbv_near,
                    "seed {seed} K={k}: HB != HBv without extra edges"
                );
            }
            strict[7] += (cp_near.len() < cp.len()) as usize;
            assert!(
                subset(&cp, &exact),
                "seed {seed} K={k}: windowed CP races not within exact CP"
            );
            assert!(
                subset(&previous, &cp),
                "seed {seed} K={k}: CP races shrank as K grew"
            );
            strict[0] += (hbv_all.len() < cp.len()) as usize;
            strict[1] += (cp.len() < exact.len()) as usize;
            previous = cp;
        }
        let wcp = racy(&t, Relation::Wcp, None, None);
        assert!(
            subset(&exact, &wcp),
            "seed {seed}: exact CP races not within WCP races"
        );
        strict[3] += (exact.len() < wcp.len()) as usize;
        assert!(
            subset(&hbv_all, &hb_all),
            "seed {seed}: HBv races not within HB races"
        );
        strict[4] += (hbv_all.len() < hb_all.len()) as usize;
        assert!(
            subset(&hbv_all, &exact),
            "seed {seed}: HBv races not within exact CP"
        );
        if plain {
            assert!(
                subset(&hb_all, &exact),
                "seed {seed}: HB races not within exact CP (HB = HBv here)"
            );
            strict[2] += (hb_all.len() < exact.len()) as usize;
        }
    }
    // The laws must be tested on traces where the relations differ, and on
    // both kinds of trace for the conditional one.
    assert!(
        strict[..4].iter().all(|&n| n > 20)
            && strict[4] > 5
            && strict[5] > 20
            && strict[6] > 20
            && strict[7] > 20,
        "too few traces separate the relations: {strict:?}"
    );
}
