//! The generator emits well-formed traces (the builder validates them) with the
//! features property tests rely on.

use cprace::tools::generate::{Config, trace};
use cprace::trace::Op;

#[test]
fn generated_traces_are_valid_and_varied() {
    let mut saw = [false; 12];
    for seed in 0..300 {
        let cfg = Config {
            events: 60 + seed % 80,
            threads: 2 + (seed % 5) as u32,
            p_atomic: if seed % 3 == 0 { 0.2 } else { 0.0 },
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

#[test]
fn atomics_share_variables_with_plain_accesses_and_masks_are_aligned() {
    let cfg = Config {
        events: 3000,
        p_atomic: 0.3,
        masks: true,
        seed: 9,
        ..Config::default()
    };
    let t = trace(&cfg);
    let memory: Vec<_> = t.events.iter().filter(|e| e.op.is_memory()).collect();
    // 1, 2, 4 or 8 bytes at an offset of a multiple of the size.
    for e in &memory {
        let n = e.mask.count_ones();
        assert!([1, 2, 4, 8].contains(&n), "{:#x}", e.mask);
        assert_eq!(e.mask.trailing_zeros() % n, 0, "{:#x}", e.mask);
        assert_eq!(e.mask >> e.mask.trailing_zeros(), ((1u16 << n) - 1) as u8);
    }
    // Relaxed and synchronizing atomics, on variables accessed plainly too.
    let mixed = |op: Op| {
        memory.iter().any(|a| {
            a.op == op
                && memory
                    .iter()
                    .any(|p| p.target == a.target && p.op.is_access())
        })
    };
    for op in [
        Op::AtomicRead,
        Op::AtomicWrite,
        Op::VolatileRead,
        Op::VolatileWrite,
    ] {
        assert!(mixed(op), "no {op:?} on a plainly accessed variable");
    }
    let share = memory.iter().filter(|e| e.op.is_atomic()).count() as f64 / memory.len() as f64;
    assert!((0.2..0.45).contains(&share), "{share}");
    // Text has no masks: the streamed trace is the in-memory one without them.
    let mut text = Vec::new();
    cprace::tools::generate::write(&cfg, cprace::tools::generate::TextFormat::Std, &mut text)
        .unwrap();
    let loaded = cprace::trace::load_str(&String::from_utf8(text).unwrap(), None).unwrap();
    let unmasked: Vec<_> = t
        .events
        .iter()
        .map(|e| cprace::trace::Event { mask: 0, ..*e })
        .collect();
    assert_eq!(loaded.events, unmasked);
}
