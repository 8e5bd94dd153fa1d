//! The vector-clock engine must compute exactly Definition 3: compare it with the
//! Datalog reference on thousands of generated traces (nested locks, several
//! threads per lock, fork/join, volatiles, re-entrant and out-of-nesting
//! releases). Any difference is a bug in one of them.

use cprace::race::wcp::{reference, vc};
use cprace::tools::generate::{Config, Rng, trace};
use cprace::trace::model::TargetKind;
use cprace::trace::{EventId, Trace, load_str};

fn describe(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let m = if e.mask == 0 {
                String::new()
            } else {
                format!("[{:#04x}]", e.mask)
            };
            format!(
                "{i}:{}.{}({}){m}",
                t.names.thread(e.thread),
                e.op.as_str(),
                t.names.target(e)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn config(seed: u64) -> Config {
    // Mostly 2..=6 threads; every 16th trace has 9..=12 (wider than the
    // engine's initial clock width, so its tables get re-laid out).
    let threads = if seed % 16 == 15 {
        9 + (seed / 16 % 4) as u32
    } else {
        2 + (seed % 5) as u32
    };
    Config {
        events: 25 + seed % 100,
        threads,
        locks: 1 + (seed / 5 % 4) as u32, // 1..=4
        vars: 2 + (seed / 3 % 3) as u32,
        volatiles: (seed % 3) as u32,
        max_nesting: 2 + (seed / 7 % 2) as u32, // 2..=3
        fork_join: !seed.is_multiple_of(4),
        p_acquire: 0.25,
        p_release: 0.3,
        p_unlocked_access: 0.5,
        p_volatile: 0.08,
        p_reentrant: 0.03,
        p_out_of_order_release: 0.15,
        p_hot: 0.5,
        seed,
        ..Config::default()
    }
}

fn check(seed: u64) {
    check_trace(seed, &trace(&config(seed)));
}

fn check_trace(seed: u64, t: &Trace) {
    let t = t.clone();
    let v = vc::analyze(&t, None);
    let d = reference::derive(&t);
    let r = reference::races(&t, &d.wcp, None);
    let rv: Vec<EventId> = {
        let mut x: Vec<EventId> = r.iter().map(|r| r.second.id).collect();
        x.dedup();
        x
    };
    if v.racy_events() != rv || v.races != r {
        panic!(
            "seed {seed}: vc racy {:?}\nreference racy {:?}\nvc witnesses {:?}\nref witnesses {:?}\ntrace: {}",
            v.racy_events(),
            rv,
            v.races
                .iter()
                .map(|r| (r.first.id, r.second.id))
                .collect::<Vec<_>>(),
            r.iter()
                .map(|r| (r.first.id, r.second.id))
                .collect::<Vec<_>>(),
            describe(&t)
        );
    }
    // Law of the derived relation: WCP ⊆ HBv (it composes with HBv), so
    // HBv-races ⊆ WCP-races.
    for p in &d.wcp {
        assert!(
            d.hbv.contains(p),
            "seed {seed}: WCP pair {p:?} not in HBv\ntrace: {}",
            describe(&t)
        );
    }
}

fn compare(t: &Trace, what: &str) {
    let v = vc::analyze(t, None);
    let d = reference::derive(t);
    let r = reference::races(t, &d.wcp, None);
    if v.races != r {
        panic!(
            "{what}: vc witnesses {:?}\nref witnesses {:?}\ntrace: {}",
            v.races
                .iter()
                .map(|r| (r.first.id, r.second.id))
                .collect::<Vec<_>>(),
            r.iter()
                .map(|r| (r.first.id, r.second.id))
                .collect::<Vec<_>>(),
            describe(t)
        );
    }
}

#[test]
fn vc_equals_reference_on_generated_traces() {
    for seed in 0..2500 {
        check(seed);
    }
}

/// Volatile-heavy traces (up to 8 volatile variables, up to 60% of the
/// accesses volatile): a thread's `H` shared by the atomics it accessed
/// since it last learned something, then joined into other threads.
#[test]
fn vc_equals_reference_on_volatile_heavy_traces() {
    for seed in 0..1500 {
        let cfg = Config {
            volatiles: 2 + (seed % 7) as u32,
            p_volatile: [0.2, 0.4, 0.6][(seed % 3) as usize],
            ..config(seed)
        };
        check_trace(seed, &trace(&cfg));
    }
}

/// Plain and atomic (relaxed and synchronizing) accesses of the same
/// variables, every other trace with random byte masks: rule (a) pairs a
/// plain and an atomic access, HBv's hard edges join atomic ones.
#[test]
fn vc_equals_reference_with_atomics_and_masks() {
    for seed in 0..1200 {
        let cfg = Config {
            p_atomic: 0.3,
            masks: seed % 2 == 1,
            ..config(seed + 10_000)
        };
        check_trace(cfg.seed, &trace(&cfg));
    }
}

/// Hand-made traces where WCP is subtle (the two corner cases below, the
/// paper's Figures 3 and 4 with `sync(x)` expanded), as `thread op target`.
const MOTIFS: &[&str] = &[
    "t acq l|t acq n|t w y|t rel n|v acq n|v w y|v rel n|u w z|u acq m|u rel m|t acq m|t rel m|t rel l|\
     v acq k|v rel k|t acq l|t acq k|t rel k|t rel l|t w z",
    "u w z|u acq m|u rel m|t acq l|t w x|t acq m|t rel m|t rel l|t acq l|t r x|t rel l|t w z",
    "a acq l|a acq s|a r q|a w q|a rel s|a r z|a rel l|b acq s|b r q|b w q|b rel s|b acq l|b acq n|b rel n|\
     b rel l|c acq n|c rel n|c w z",
    "a acq l|a acq m|a rel m|a r z|a rel l|b acq m|b acq n|b acq s|b r q|b w q|b rel s|b rel n|b rel m|\
     c acq n|c acq l|c rel l|c acq s|c r q|c w q|c rel s|c w z|c rel n",
];

/// The events of `t` as CSV rows; thread names get `prefix`, lock and variable
/// ids index `locks`/`vars` (the shared names), else get `prefix` too.
fn rows(t: &Trace, prefix: &str, locks: &[&str], vars: &[&str]) -> Vec<(String, String, String)> {
    t.events
        .iter()
        .map(|e| {
            let own = |n: &str| format!("{prefix}{n}");
            let target = match e.op.target_kind() {
                TargetKind::Thread => own(t.names.thread(e.target)),
                TargetKind::Lock => locks
                    .get(e.target as usize)
                    .map_or_else(|| own(t.names.lock(e.target)), |s| s.to_string()),
                TargetKind::Variable => vars
                    .get(e.target as usize)
                    .map_or_else(|| own(&t.names.var(e.target)), |s| s.to_string()),
            };
            (
                own(t.names.thread(e.thread)),
                e.op.as_str().to_string(),
                target,
            )
        })
        .collect()
}

/// A motif interleaved with a generated trace that shares some of its locks
/// and variables; the interleaving respects mutual exclusion. None when the
/// two deadlock.
fn motif_in_noise(seed: u64) -> Option<Trace> {
    let mut rng = Rng::new(seed);
    let motif: Vec<(String, String, String)> = MOTIFS[(seed % MOTIFS.len() as u64) as usize]
        .split('|')
        .map(|l| {
            let p: Vec<&str> = l.split_whitespace().collect();
            (p[0].to_string(), p[1].to_string(), p[2].to_string())
        })
        .collect();
    let cfg = Config {
        events: 15 + seed % 40,
        threads: 1 + (seed % 3) as u32,
        locks: 3,
        vars: 3,
        volatiles: 1,
        max_nesting: 2,
        fork_join: seed.is_multiple_of(3),
        p_acquire: 0.3,
        p_release: 0.3,
        p_reentrant: 0.0,
        seed,
        ..Config::default()
    };
    let shared_locks = ["l", "m", "n", "k", "s"];
    let shared_vars = ["x", "y", "z", "q"];
    let locks: Vec<&str> = (0..3)
        .map(|_| shared_locks[rng.below(5) as usize])
        .collect();
    let vars: Vec<&str> = (0..3).map(|_| shared_vars[rng.below(4) as usize]).collect();
    let noise = rows(&trace(&cfg), "n", &locks, &vars);
    let sources = [motif, noise];
    let mut next = [0usize, 0];
    let mut holder: std::collections::HashMap<String, String> = Default::default();
    let mut csv = String::from("thread,op,target\n");
    loop {
        let ready: Vec<usize> = (0..2)
            .filter(|&s| {
                sources[s]
                    .get(next[s])
                    .is_some_and(|(t, op, l)| op != "acq" || holder.get(l).is_none_or(|h| h == t))
            })
            .collect();
        if ready.is_empty() {
            return if next[0] == sources[0].len() && next[1] == sources[1].len() {
                load_str(&csv, None).ok()
            } else {
                None
            };
        }
        let s = ready[rng.below(ready.len() as u64) as usize];
        let (t, op, target) = &sources[s][next[s]];
        next[s] += 1;
        match op.as_str() {
            "acq" => {
                holder.insert(target.clone(), t.clone());
            }
            "rel" => {
                holder.remove(target);
            }
            _ => {}
        }
        csv.push_str(&format!("{t},{op},{target}\n"));
    }
}

#[test]
fn vc_equals_reference_on_motifs_in_noise() {
    let mut checked = 0;
    for seed in 0..1500 {
        if let Some(t) = motif_in_noise(seed) {
            compare(&t, &format!("motif seed {seed}"));
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} motif traces were valid");
}

/// Trimming the release logs (here after every release) must not change the
/// result: entries are only dropped once every live thread has dequeued them,
/// and forked threads start from their parent's queue position. Only a thread
/// appearing out of nowhere after a trim could miss history, and the report
/// says so in a note.
#[test]
fn trimmed_logs_equal_reference() {
    let mut noted = 0;
    for seed in 0..600 {
        let cfg = config(seed);
        let t = trace(&cfg);
        let mut engine = vc::WcpVc::with_trim_threshold(None, 1);
        for (i, e) in t.events.iter().enumerate() {
            engine.event(i as EventId, e);
        }
        let v = engine.finish();
        if !v.notes.is_empty() {
            assert!(
                !cfg.fork_join,
                "seed {seed}: forked threads never start before a trimmed log: {:?}",
                v.notes
            );
            noted += 1;
            continue;
        }
        let d = reference::derive(&t);
        assert_eq!(
            v.races,
            reference::races(&t, &d.wcp, None),
            "seed {seed}: trimmed vc differs\ntrace: {}",
            describe(&t)
        );
    }
    assert!(
        noted < 60,
        "{noted} of 600 traces had threads appearing after a trim"
    );
}

/// Threads that first appear after others have built up state (without a
/// fork): eight of them, so the engine's clock tables must be re-laid out
/// while holding data.
#[test]
fn late_threads_equal_reference() {
    for seed in 0..300u64 {
        // The first part mostly reads, the second mostly writes, so the read
        // clocks recorded before the re-layout are the ones later joined.
        let base = |threads: u32, fork_join: bool, s: u64| Config {
            p_write: if threads == 3 { 0.15 } else { 0.85 },
            events: 40,
            threads,
            locks: 2,
            vars: 3,
            volatiles: 1,
            max_nesting: 2,
            fork_join,
            p_acquire: 0.25,
            p_release: 0.3,
            p_volatile: 0.08,
            seed: s,
            ..Config::default()
        };
        let first = trace(&base(3, seed.is_multiple_of(3), seed));
        let second = trace(&base(8, seed.is_multiple_of(2), seed + 10_000));
        let mut csv = String::from("thread,op,target\n");
        let same = ["l0", "l1"];
        let vars = ["x0", "x1", "x2", "v0"];
        for (t, prefix) in [(&first, "a"), (&second, "b")] {
            for (th, op, target) in rows(t, prefix, &same, &vars) {
                csv.push_str(&format!("{th},{op},{target}\n"));
            }
        }
        let t = load_str(&csv, None).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        compare(&t, &format!("late threads seed {seed}"));
    }
}

/// Rule (a) needs a conflicting event, i.e. one of another thread. Algorithm 1
/// as printed would let t's r(x) join its own earlier release of l, whose HB
/// time carries u's w(z) (via lock m), and so miss the race on z.
#[test]
fn own_release_does_not_order_via_rule_a() {
    let t = load_str(
        "thread,op,target\n\
         u,w,z\nu,acq,m\nu,rel,m\n\
         t,acq,l\nt,w,x\nt,acq,m\nt,rel,m\nt,rel,l\n\
         t,acq,l\nt,r,x\nt,rel,l\nt,w,z\n",
        None,
    )
    .unwrap();
    let v = vc::analyze(&t, None);
    let r = reference::analyze(&t, None);
    assert_eq!(v.races, r.races);
    assert_eq!(
        v.racy_events(),
        vec![11],
        "u's w(z) and t's w(z) are only HB-ordered"
    );
}

/// Rule (b) applies to two releases of the same thread too: here
/// rel(l)@12 ≺WCP rel(l)@18 because rel(n)@3 ≺WCP acq(k)@16, so u's w(z),
/// which happens before rel(l)@13 through lock m, is WCP-ordered before t's w(z).
#[test]
fn same_thread_rule_b_orders() {
    let t = load_str(
        "thread,op,target\n\
         t,acq,l\nt,acq,n\nt,w,y\nt,rel,n\n\
         v,acq,n\nv,w,y\nv,rel,n\n\
         u,w,z\nu,acq,m\nu,rel,m\n\
         t,acq,m\nt,rel,m\nt,rel,l\n\
         v,acq,k\nv,rel,k\n\
         t,acq,l\nt,acq,k\nt,rel,k\nt,rel,l\nt,w,z\n",
        None,
    )
    .unwrap();
    let d = reference::derive(&t);
    assert!(
        d.wcp.contains(&(3, 16)),
        "rule (a) + HB: rel(n)@3 before acq(k)@16"
    );
    assert!(d.wcp.contains(&(12, 18)), "rule (b) within one thread");
    assert!(d.wcp.contains(&(7, 19)));
    let v = vc::analyze(&t, None);
    assert!(
        v.races.is_empty(),
        "vc must order u's w(z) before t's w(z): {:?}",
        v.races
    );
}
