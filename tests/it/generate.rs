//! The generator emits well-formed traces (the builder validates them) with the
//! features property tests rely on.

use cprace::tools::generate::{Config, trace};
use cprace::trace::Op;

#[test]
fn generated_traces_are_valid_and_varied() {
    let mut saw = [false; 10];
    for seed in 0..300 {
        let cfg = Config {
            events: 60 + seed % 80,
            threads: 2 + (seed % 5) as u32,
            seed,
            ..Config::default()
        };
        let t = trace(&cfg);
        assert!(
            t.len() as u64 >= cfg.events,
            "seed {seed}: {} events",
            t.len()
        );
        for e in &t.events {
            saw[e.op as usize] = true;
        }
    }
    // Loading marks an acquire of a lock its thread holds as re-entrant.
    for op in cprace::tools::generate::EMITTED_OPS
        .into_iter()
        .chain([Op::ReentrantAcquire])
    {
        assert!(saw[op as usize], "no {op:?} in 300 generated traces");
    }
}

#[test]
fn generation_is_reproducible() {
    let cfg = Config {
        seed: 42,
        ..Config::default()
    };
    assert_eq!(trace(&cfg).events, trace(&cfg).events);
    for p in Config::PROFILES {
        let mut c = Config::profile(p).unwrap();
        c.events = 5000;
        let t = trace(&c);
        assert!(t.len() >= 5000, "profile {p}");
    }
}

#[test]
fn arrays_profile_names_a_new_element_in_about_a_third_of_the_events() {
    use cprace::tools::generate::{TextFormat, write};
    let cfg = Config {
        events: 30_000,
        seed: 3,
        ..Config::profile("arrays").unwrap()
    };
    let t = trace(&cfg);
    let share = t.num_vars() as f64 / t.len() as f64;
    assert!((0.25..0.45).contains(&share), "{share}");
    let elements = t.names.vars.iter().filter(|n| n.contains('[')).count();
    assert!(elements as f64 > 0.9 * t.num_vars() as f64 - 1004.0);
    // The streamed text names the same elements as the in-memory trace.
    let mut text = Vec::new();
    write(&cfg, TextFormat::Std, &mut text).unwrap();
    let loaded = cprace::trace::load_str(&String::from_utf8(text).unwrap(), None).unwrap();
    assert_eq!(loaded.events, t.events);
    assert!(loaded.names.vars.iter().eq(t.names.vars.iter()));
}
