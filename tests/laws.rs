//! The laws theory fixes between the relations, on generated traces larger than
//! the oracles can handle: HB races within K ⊆ windowed CP races ⊆ exact CP
//! races ⊆ WCP races, and CP races only grow with K.

use cprace::analyze::{Options, Relation, analyze_trace};
use cprace::generate::{Config, trace};
use cprace::trace::Trace;

fn racy(t: &Trace, relation: Relation, window: Option<u64>) -> Vec<u32> {
    let mut opts = Options::new(relation);
    opts.window = window;
    analyze_trace(t, &opts)
        .expect("analysis runs")
        .racy_events()
}

fn subset(a: &[u32], b: &[u32]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

#[test]
fn containment_and_monotonicity() {
    let mut strict = [0usize; 4];
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
        let exact = racy(&t, Relation::Cp, None);
        let mut previous: Vec<u32> = Vec::new();
        for k in [1, 2, 5, 10, 30, 100, 300, 1000] {
            let hb = racy(&t, Relation::Hb, Some(k));
            let cp = racy(&t, Relation::Cp, Some(k));
            assert!(
                subset(&hb, &cp),
                "seed {seed} K={k}: HB races not within CP races"
            );
            assert!(
                subset(&cp, &exact),
                "seed {seed} K={k}: windowed CP races not within exact CP"
            );
            assert!(
                subset(&previous, &cp),
                "seed {seed} K={k}: CP races shrank as K grew"
            );
            strict[0] += (hb.len() < cp.len()) as usize;
            strict[1] += (cp.len() < exact.len()) as usize;
            previous = cp;
        }
        let wcp = racy(&t, Relation::Wcp, None);
        assert!(
            subset(&exact, &wcp),
            "seed {seed}: exact CP races not within WCP races"
        );
        strict[3] += (exact.len() < wcp.len()) as usize;
        let hb_all = racy(&t, Relation::Hb, None);
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
