//! Issue 14 acceptance: SHB and sync-preserving races against the exhaustive
//! correct-reordering oracle, every witness checked twice (by
//! `cprace::witness::verify` and by the oracle's own checker), and the laws
//! relating HB, SHB and syncp.
//!
//! What theory promises (and these tests check):
//! - every SHB race is a predictable race (OOPSLA 2018): its pair is in the
//!   oracle's race set, and its sync-preserving witness exists;
//! - syncp is sound and complete for sync-preserving races (POPL 2021): its
//!   racy events are exactly the oracle's, restricted to sync-preserving
//!   reorderings, and every reported pair is such a race;
//! - SHB ⊇ HB as orders, so SHB-racy ⊆ HB-racy; HB's first race is an SHB
//!   race, so a trace has an HB race iff it has an SHB race;
//! - an SHB race's witness is sync-preserving, so SHB-racy ⊆ syncp-racy; HB's
//!   first racy event is sync-preserving racy (the HB-downward closure of the
//!   first race is a sync-preserving reordering).
//!
//! The claims about HB's first race need every atomic read of another
//! thread's atomic write to be HB-ordered after it (always without relaxed
//! atomics); with relaxed atomics they are checked where that holds
//! ([`common::laws::hb_orders_atomic_reads_from`]). The traces of
//! `generated_traces_with_atomics_agree_with_the_oracle` mix plain and atomic
//! accesses of the same variables, half of them with byte masks.
//!
//! `cargo test --test it provable::` runs a few hundred generated traces;
//! `scripts/provable.sh` (or `cargo test --release --test it provable:: -- --ignored`)
//! runs thousands.

use crate::common;
use crate::oracle;

use std::collections::BTreeSet;

use cprace::race::{Options, analyze_trace};
use cprace::relation::Relation;
use cprace::report::Report;
use cprace::trace::{Format, Trace, load_str};
use cprace::witness::verify;
use oracle::{Mode, explore};

fn run(t: &Trace, relation: Relation) -> Report {
    let mut opts = Options::new(relation);
    opts.window = None;
    let mut r = analyze_trace(t, &opts).unwrap_or_else(|e| panic!("{e}"));
    cprace::witness::attach(&mut r, t);
    r
}

/// Plain and atomic (relaxed and synchronizing) accesses of the same
/// variables; every other trace with random byte masks.
fn generated_with_atomics(seed: u64) -> Trace {
    let cfg = cprace::tools::generate::Config {
        events: 12 + seed % 24,
        threads: 2 + (seed % 3) as u32,
        locks: 1 + (seed % 2) as u32,
        vars: 1 + (seed % 3) as u32,
        volatiles: 0,
        p_atomic: 0.3,
        masks: seed % 2 == 1,
        seed,
        ..cprace::tools::generate::Config::default()
    };
    cprace::tools::generate::trace(&cfg)
}

fn generated(seed: u64) -> Trace {
    let cfg = cprace::tools::generate::Config {
        events: 12 + seed % 28,
        threads: 2 + (seed % 3) as u32,
        locks: 1 + (seed % 3) as u32,
        vars: 2 + (seed % 3) as u32,
        volatiles: 1,
        p_volatile: 0.1,
        seed,
        ..cprace::tools::generate::Config::default()
    };
    cprace::tools::generate::trace(&cfg)
}

/// Check every promise on one trace; returns (HB racy?, syncp racy count).
fn check_trace(t: &Trace, label: &str) -> (bool, usize) {
    let ctx = || format!("{label}\n{}", common::traces::dump(t));
    let all = explore(t, Mode::All);
    let sp = explore(t, Mode::SyncPreserving);
    if !all.complete || !sp.complete {
        return (false, 0);
    }
    let hb = run(t, Relation::Hb);
    let shb = run(t, Relation::Shb);
    let syncp = run(t, Relation::Syncp);
    let wcp = run(t, Relation::Wcp);
    let cp = run(t, Relation::Cp);

    let hb_first_holds = common::laws::hb_orders_atomic_reads_from(t);
    // Every witness, of every relation, is valid (two independent checkers).
    for r in [&hb, &shb, &syncp, &wcp, &cp] {
        let ws = r.witnesses.as_ref().expect("attached");
        for (race, w) in r.races.iter().zip(ws) {
            let (a, b) = (race.first.id, race.second.id);
            if let Some(w) = w {
                let v = verify::check(t, a, b, w).unwrap_or_else(|e| {
                    panic!(
                        "{} witness of ({a}, {b}) invalid: {e}\n{}",
                        r.relation,
                        ctx()
                    )
                });
                let mode = if v.sync_preserving {
                    Mode::SyncPreserving
                } else {
                    Mode::All
                };
                assert!(
                    v.sync_preserving || (!matches!(r.relation, Relation::Shb | Relation::Syncp)),
                    "{}: witness not sync-preserving\n{}",
                    r.relation,
                    ctx()
                );
                oracle::check(t, mode, w, Some((a, b))).unwrap_or_else(|e| {
                    panic!(
                        "oracle rejects {} witness of ({a}, {b}): {e}\n{}",
                        r.relation,
                        ctx()
                    )
                });
            } else {
                assert!(
                    !matches!(r.relation, Relation::Shb | Relation::Syncp),
                    "{} race ({a}, {b}) without a witness\n{}",
                    r.relation,
                    ctx()
                );
                // The search is exhaustive on these small traces.
                assert!(
                    !all.is_race(a, b),
                    "{} race ({a}, {b}) is predictable but got no witness\n{}",
                    r.relation,
                    ctx()
                );
            }
        }
        // The soundness theorems of HB, CP and WCP: the first race is
        // predictable or the trace has a predictable deadlock (where every
        // atomic read reads from an HB-earlier write: none of the three
        // orders relaxed atomics).
        if ws.first().is_some_and(|w| w.is_none()) && hb_first_holds {
            assert!(
                all.deadlock,
                "{}'s first race has no witness and no deadlock\n{}",
                r.relation,
                ctx()
            );
            let n = r.notes.iter().any(|n| n.contains("predictable deadlock"));
            assert!(
                n,
                "{}: the report does not name the deadlock\n{}",
                r.relation,
                ctx()
            );
        }
    }

    // SHB: every reported pair is predictable.
    for race in &shb.races {
        assert!(
            all.is_race(race.first.id, race.second.id),
            "SHB race not predictable\n{}",
            ctx()
        );
    }
    // syncp: sound (pairs) and exact (racy events).
    for race in &syncp.races {
        assert!(
            sp.is_race(race.first.id, race.second.id),
            "syncp pair not sync-preserving\n{}",
            ctx()
        );
    }
    let syncp_racy: BTreeSet<u32> = syncp.racy_events().into_iter().collect();
    assert_eq!(
        syncp_racy,
        sp.racy_events(),
        "syncp racy events differ from the oracle\n{}",
        ctx()
    );

    // Laws.
    let hb_racy: BTreeSet<u32> = hb.racy_events().into_iter().collect();
    let shb_racy: BTreeSet<u32> = shb.racy_events().into_iter().collect();
    assert!(
        shb_racy.is_subset(&hb_racy),
        "SHB-racy ⊄ HB-racy\n{}",
        ctx()
    );
    assert!(
        !hb_first_holds || hb_racy.is_empty() == shb_racy.is_empty(),
        "HB race iff SHB race\n{}",
        ctx()
    );
    assert!(
        shb_racy.is_subset(&syncp_racy),
        "SHB-racy ⊄ syncp-racy\n{}",
        ctx()
    );
    if let Some(first) = hb_racy.first().filter(|_| hb_first_holds) {
        assert!(
            syncp_racy.contains(first),
            "HB's first racy event not sync-preserving\n{}",
            ctx()
        );
    }
    assert!(syncp_racy.is_subset(&all.racy_events()));
    (!hb_racy.is_empty(), syncp_racy.len())
}

fn sweep(seeds: std::ops::Range<u64>) {
    sweep_on(seeds, generated)
}

fn sweep_on(seeds: std::ops::Range<u64>, generated: fn(u64) -> Trace) {
    let (mut with_hb, mut with_syncp, mut beyond_hb) = (0, 0, 0);
    for seed in seeds.clone() {
        let t = generated(seed);
        let (hb, n) = check_trace(&t, &format!("seed {seed}"));
        with_hb += hb as usize;
        with_syncp += (n > 0) as usize;
        let hb_racy = run(&t, Relation::Hb).racy_events().len();
        beyond_hb += (n > hb_racy) as usize;
    }
    let total = seeds.count();
    assert!(
        with_hb * 4 > total,
        "only {with_hb} of {total} traces had an HB race"
    );
    assert!(with_syncp >= with_hb);
    // Sync-preserving races strictly contain HB races on some traces.
    assert!(beyond_hb > 0, "no trace had more syncp than HB racy events");
}

#[test]
fn generated_traces_agree_with_the_oracle() {
    sweep(0..300);
}

#[test]
fn generated_traces_with_atomics_agree_with_the_oracle() {
    sweep_on(0..300, generated_with_atomics);
}

#[test]
#[ignore = "thousands of traces; run by scripts/provable.sh"]
fn many_generated_traces_agree_with_the_oracle() {
    sweep(300..5300);
    sweep_on(300..3300, generated_with_atomics);
}

fn std_trace(text: &str) -> Trace {
    load_str(text, Some(Format::Std)).unwrap_or_else(|e| panic!("{e}"))
}

/// The case the engine's candidate walk exists for: the earliest candidate of
/// T1 is inside a section whose lock T2 takes later (not sync-preserving),
/// the latest is too; the first one outside is the race.
#[test]
fn syncp_finds_a_partner_between_candidates() {
    let t = std_trace(
        "T1|acq(l)\nT1|w(x)\nT1|rel(l)\nT1|w(x)\nT1|acq(l)\nT1|w(x)\nT1|rel(l)\n\
         T2|acq(l)\nT2|rel(l)\nT2|r(x)\n",
    );
    check_trace(&t, "hand");
    let r = run(&t, Relation::Syncp);
    assert_eq!(r.racy_events(), vec![9]);
    assert_eq!(r.races[0].first.id, 3);
    assert_eq!(
        r.witnesses.unwrap()[0].as_deref(),
        Some(&[0, 1, 2, 7, 8][..])
    );
}

/// Figures: every SHB and syncp race, and the CP PolarCoord race and the WCP
/// Figure 1-4 races, get valid witnesses (Figure 4's reorders critical
/// sections).
#[test]
fn figures_races_get_witnesses() {
    for (path, t) in common::traces::figures() {
        let label = path.display().to_string();
        if t.len() <= 40 {
            check_trace(&t, &label);
        }
        for rel in [Relation::Shb, Relation::Syncp] {
            let r = run(&t, rel);
            assert!(r.witnesses.unwrap().iter().all(|w| w.is_some()), "{label}");
        }
    }
    let first = |name: &str, rel: Relation| {
        let t =
            cprace::trace::load(std::path::Path::new(&common::traces::figure(name)), None).unwrap();
        let r = run(&t, rel);
        let w = r.witnesses.as_ref().unwrap()[0].clone().expect("a witness");
        verify::check(&t, r.races[0].first.id, r.races[0].second.id, &w).unwrap();
        (r.races[0].first.id, r.races[0].second.id, w)
    };
    assert_eq!(
        first("cp-fig3-polarcoord.csv", Relation::Cp),
        (1, 8, vec![0, 5, 6, 7])
    );
    assert_eq!(first("wcp-fig1b.csv", Relation::Wcp), (0, 7, vec![4, 5, 6]));
    assert_eq!(first("wcp-fig2b.csv", Relation::Wcp), (0, 5, vec![4]));
    assert_eq!(
        first("wcp-fig3.csv", Relation::Wcp),
        (5, 17, vec![0, 1, 2, 3, 4, 15, 16])
    );
}

#[test]
fn verify_rejects_incorrect_witnesses() {
    let t = std_trace(
        "T1|acq(l)\nT1|w(x)\nT1|rel(l)\nT2|acq(l)\nT2|r(x)\nT2|rel(l)\nT2|w(y)\nT1|r(y)\n",
    );
    // Not a conflicting pair.
    assert!(verify::check(&t, 1, 6, &[]).is_err());
    // T2's acquire while T1 holds l.
    assert!(
        verify::check(&t, 1, 4, &[0, 3])
            .unwrap_err()
            .contains("held")
    );
    // Out of thread order.
    assert!(
        verify::check(&t, 6, 7, &[3, 5, 4])
            .unwrap_err()
            .contains("next event")
    );
    // The read of x sees the initial value instead of event 1.
    assert!(verify::check(&t, 6, 7, &[0, 2, 3, 4, 5]).is_err());
    // The racy event itself listed.
    assert!(
        verify::check(&t, 1, 4, &[0, 1, 2, 3])
            .unwrap_err()
            .contains("not enabled")
    );
    // A valid one.
    assert!(verify::check(&t, 6, 7, &[0, 1, 2, 3, 4, 5]).is_ok());
}

/// The command line: `--witness` JSON, `verify` on it (valid, tampered, bad
/// input), `--witness-out` files that load as traces.
#[test]
fn witness_and_verify_on_the_command_line() {
    use common::cli::cprace;
    let fig = common::traces::figure("wcp-fig3.csv");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w");
    let (code, json, err) = cprace(&[
        "analyze",
        &fig,
        "--relation",
        "wcp",
        "--witness",
        "--format",
        "json",
        "--witness-out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["races"][0]["witness"],
        serde_json::json!([0, 1, 2, 3, 4, 15, 16])
    );
    let file = dir.path().join("r.json");
    std::fs::write(&file, &json).unwrap();
    let (code, text, _) = cprace(&["verify", &fig, "--witness", file.to_str().unwrap()]);
    assert_eq!(
        (code, text.as_str()),
        (
            0,
            "(5, 17): valid (7 events, sync-preserving)\nSUMMARY: 1 valid, 0 invalid, 0 without a witness\n"
        )
    );
    // Drop event 0: T1's acquire is missing, so its event 1 is not next.
    std::fs::write(
        &file,
        r#"{"first": 5, "second": 17, "witness": [1, 2, 3, 4, 15, 16]}"#,
    )
    .unwrap();
    let (code, text, _) = cprace(&["verify", &fig, "--witness", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(text.contains("INVALID"), "{text}");
    std::fs::write(&file, "not json").unwrap();
    let (code, _, err) = cprace(&["verify", &fig, "--witness", file.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not JSON"), "{err}");
    // The reordered trace: witness, then the two racy events.
    let std = out.join("race-5-17.std");
    let t = cprace::trace::load(&std, None).unwrap();
    assert_eq!(t.len(), 9);
    // Without --witness the JSON has no witness field.
    let (_, json, _) = cprace(&["analyze", &fig, "--relation", "wcp", "--format", "json"]);
    assert!(!json.contains("witness"));
}

/// `verify` never passes having checked nothing: races without a witness
/// are still checked to be conflicting accesses of the trace, and when no
/// race has a witness the exit code is 1.
#[test]
fn verify_without_a_witness_checks_the_pair_and_is_no_pass() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.std");
    std::fs::write(&trace, "T0|w(x)|1\nT1|w(x)|2\nT1|r(y)|3\n").unwrap();
    let trace = trace.to_str().unwrap();
    let file = dir.path().join("r.json");
    let f = file.to_str().unwrap();
    for (json, code, want) in [
        (
            r#"{"first": 0, "second": 1, "witness": null}"#,
            1,
            "(0, 1): no witness (the events are conflicting accesses)\nSUMMARY: 0 valid, 0 invalid, 1 without a witness\n",
        ),
        (
            r#"{"first": 0, "second": 7, "witness": null}"#,
            1,
            "(0, 7): INVALID: event 7 is not in the trace (3 events)\nSUMMARY: 0 valid, 1 invalid, 0 without a witness\n",
        ),
        (
            r#"{"first": 0, "second": 2, "witness": null}"#,
            1,
            "(0, 2): INVALID: events 0 and 2 do not conflict\nSUMMARY: 0 valid, 1 invalid, 0 without a witness\n",
        ),
        (
            r#"{"races": [{"first": 0, "second": 1, "witness": []}, {"first": 0, "second": 1, "witness": null}]}"#,
            0,
            "(0, 1): valid (0 events, sync-preserving)\n(0, 1): no witness (the events are conflicting accesses)\nSUMMARY: 1 valid, 0 invalid, 1 without a witness\n",
        ),
    ] {
        std::fs::write(&file, json).unwrap();
        let (c, out, err) = common::cli::cprace(&["verify", trace, "--witness", f]);
        assert_eq!((c, out.as_str()), (code, want), "{json}: {err}");
    }
}
