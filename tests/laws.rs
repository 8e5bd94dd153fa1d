//! The laws theory fixes between the relations, on generated traces larger than
//! the oracles can handle: HB races ⊆ windowed CP races ⊆ exact CP races ⊆ WCP
//! races for every window K (a window bounds CP's reasoning, not the report),
//! CP races grow with K, and the same containments hold among the reports
//! limited to pairs less than D apart (`--max-distance D`).

use cprace::analyze::{Options, Relation, analyze_trace};
use cprace::generate::{Config, trace};
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

fn subset(a: &[u32], b: &[u32]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

#[test]
fn containment_and_monotonicity() {
    let mut strict = [0usize; 5];
    for seed in 0..150u64 {
        let cfg = Config {
            events: 200 + seed * 3,
            threads: 2 + (seed % 5) as u32,
            locks: 1 + (seed % 4) as u32,
            vars: 3 + (seed % 6) as u32,
            max_nesting: 1 + (seed % 3) as u32,
            fork_join: seed % 2 == 0,
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        let exact = racy(&t, Relation::Cp, None, None);
        let hb_all = racy(&t, Relation::Hb, None, None);
        let mut previous: Vec<u32> = Vec::new();
        for k in [1, 2, 5, 10, 30, 100, 300, 1000] {
            let cp = racy(&t, Relation::Cp, Some(k), None);
            assert!(
                subset(&hb_all, &cp),
                "seed {seed} K={k}: HB races not within windowed CP races"
            );
            assert!(
                subset(&cp, &exact),
                "seed {seed} K={k}: windowed CP races not within exact CP"
            );
            assert!(
                subset(&previous, &cp),
                "seed {seed} K={k}: CP races shrank as K grew"
            );
            // The CP paper's report (--window K --max-distance K) and HB's
            // within K: the same containments among nearby pairs.
            let hb_near = racy(&t, Relation::Hb, None, Some(k));
            let cp_near = racy(&t, Relation::Cp, Some(k), Some(k));
            let exact_near = racy(&t, Relation::Cp, None, Some(k));
            assert!(
                subset(&hb_near, &cp_near) && subset(&cp_near, &exact_near),
                "seed {seed} K={k}: HB ⊆ CP ⊆ exact CP fails within distance K"
            );
            assert!(
                subset(&cp_near, &cp),
                "seed {seed} K={k}: --max-distance added races"
            );
            strict[0] += (hb_all.len() < cp.len()) as usize;
            strict[1] += (cp.len() < exact.len()) as usize;
            strict[4] += (cp_near.len() < cp.len()) as usize;
            previous = cp;
        }
        let wcp = racy(&t, Relation::Wcp, None, None);
        assert!(
            subset(&exact, &wcp),
            "seed {seed}: exact CP races not within WCP races"
        );
        strict[3] += (exact.len() < wcp.len()) as usize;
        assert!(
            subset(&hb_all, &exact),
            "seed {seed}: HB races not within exact CP"
        );
        strict[2] += (hb_all.len() < exact.len()) as usize;
    }
    // The laws must be tested on traces where the relations differ.
    assert!(
        strict.iter().all(|&n| n > 20),
        "too few traces separate the relations: {strict:?}"
    );
}
