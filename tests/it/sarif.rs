//! `--format sarif` is valid SARIF 2.1.0: checked against the published
//! schema (tests/data/sarif-schema-2.1.0.json, from SchemaStore, Apache-2.0).

use crate::common;

use common::cli::cprace;
use serde_json::Value;

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(include_str!("../data/sarif-schema-2.1.0.json"))
        .expect("schema parses");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn sarif_output_validates_against_the_schema() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.std");
    std::fs::write(
        &p,
        "T1|w(x)|src/A.java:7\nT2|w(x)|src/B b.java:9\nT1|w(y)|no-line-here\nT2|r(y)|\nT1|w(z)\nT2|w(z)|C:\\w\\D.java:3\n",
    )
    .unwrap();
    let p = p.to_str().unwrap();
    for relation in ["hb", "cp", "wcp", "lockset", "po"] {
        let (code, out, err) = cprace(&["analyze", p, "--relation", relation, "--format", "sarif"]);
        assert_eq!(code, 1, "{relation}: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_valid(&v, &doc, relation);
        assert_eq!(doc["version"], "2.1.0");
        let run = &doc["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "cprace");
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "{relation}: one result per location pair");
        let first = &results[0];
        assert_eq!(first["ruleId"], format!("race/{relation}"));
        let loc = &first["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/B%20b.java");
        assert_eq!(loc["region"]["startLine"], 9);
        let rel = &first["relatedLocations"][0]["physicalLocation"];
        assert_eq!(rel["artifactLocation"]["uri"], "src/A.java");
        assert_eq!(rel["region"]["startLine"], 7);
        // A location that is not file:line stays as a logical location.
        assert_eq!(
            results[1]["relatedLocations"][0]["logicalLocations"][0]["name"],
            "no-line-here"
        );
        assert!(results[1].get("locations").is_none());
        assert_eq!(
            results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "C%3A/w/D.java"
        );
    }
    // No race: a valid log with no results.
    std::fs::write(dir.path().join("ok.std"), "T1|w(x)|a:1\nT1|r(x)|a:2\n").unwrap();
    let ok = dir.path().join("ok.std");
    let (code, out, _) = cprace(&[
        "analyze",
        ok.to_str().unwrap(),
        "--relation",
        "hb",
        "--format",
        "sarif",
    ]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_valid(&v, &doc, "no race");
    assert_eq!(doc["runs"][0]["results"], serde_json::json!([]));
}

#[test]
fn the_schema_rejects_what_it_should() {
    // Guard against a validator that accepts anything.
    let v = validator();
    let bad = serde_json::json!({"version": "2.1.0", "runs": [{"tool": {}}]});
    assert!(!v.is_valid(&bad));
    let bad = serde_json::json!({"version": "9", "runs": []});
    assert!(!v.is_valid(&bad));
}

/// The results of a recorded program's SARIF log (validated).
fn recorded_results(
    v: &jsonschema::Validator,
    trace: &std::path::Path,
    args: &[&str],
) -> Vec<Value> {
    use crate::common::recorded::analyze;
    let mut all = vec!["--format", "sarif"];
    all.extend(args);
    let doc: Value = serde_json::from_str(&analyze(trace, &all)).unwrap();
    assert_valid(v, &doc, &format!("{} {args:?}", trace.display()));
    doc["runs"][0]["results"].as_array().unwrap().clone()
}

/// A location's file name and line, when physical.
fn file_line(l: &Value) -> Option<(String, u64)> {
    let p = &l["physicalLocation"];
    let uri = p["artifactLocation"]["uri"].as_str()?;
    Some((
        uri.rsplit('/').next()?.to_string(),
        p["region"]["startLine"].as_u64()?,
    ))
}

/// A recorded program's SARIF: every stack as a SARIF stack (frames with
/// file, line, function, module), the allocation, mutex and creation sites
/// as related locations; valid against the schema.
#[test]
fn recorded_program_sarif_carries_stacks_and_sites() {
    use crate::common::recorded::{compilers, line_no, record};
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    for cc in compilers() {
        let name = "tsan_heap";
        let trace = record(dir.path(), name, cc);
        let results = recorded_results(&v, &trace, &["--relation", "hb"]);
        assert_eq!(results.len(), 1, "{cc}: {results:#?}");
        let r = &results[0];
        let file = format!("{name}.c");
        let (write, read) = (
            line_no(name, "RACE", 0) as u64,
            line_no(name, "RACE", 1) as u64,
        );
        // Both accesses' stacks, the later first, then the allocation's and
        // the thread's creation.
        let stacks = r["stacks"].as_array().unwrap();
        let top = |s: &Value| file_line(&s["frames"][0]["location"]).unwrap();
        let lines: Vec<u64> = stacks.iter().map(|s| top(s).1).collect();
        assert_eq!(stacks.len(), 4, "{cc}: {stacks:#?}");
        let mut accesses = [lines[0], lines[1]];
        accesses.sort();
        assert_eq!(accesses, [write.min(read), write.max(read)], "{cc}");
        assert_eq!(lines[2], line_no(name, "ALLOC", 0) as u64, "{cc}");
        assert_eq!(lines[3], line_no(name, "CREATE", 0) as u64, "{cc}");
        for s in stacks {
            let f = &s["frames"][0];
            assert_eq!(top(s).0, file, "{cc}");
            assert_eq!(f["module"], format!("{name}-{cc}"), "{cc}");
            let function = f["location"]["logicalLocations"][0]["name"]
                .as_str()
                .unwrap();
            assert!(["main", "writer"].contains(&function), "{cc}: {f}");
            assert!(
                f["location"]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap()
                    .starts_with("file:///"),
                "{cc}: {f}"
            );
        }
        assert!(
            stacks[2]["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Location is heap block of size 4 at 0x"),
            "{cc}"
        );
        // The primary location is the racy access's innermost frame.
        assert_eq!(
            file_line(&r["locations"][0]),
            Some((file.clone(), lines[0]))
        );
        // Related: the earlier access, the allocation, the creation.
        let related = r["relatedLocations"].as_array().unwrap();
        let ids: Vec<u64> = related.iter().map(|l| l["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3], "{cc}: {related:#?}");
        assert_eq!(file_line(&related[0]), Some((file.clone(), lines[1])));
        assert_eq!(file_line(&related[1]).unwrap().1, lines[2], "{cc}");
        assert_eq!(file_line(&related[2]).unwrap().1, lines[3], "{cc}");
        assert!(
            related[2]["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Thread T1 (")
        );
        assert!(
            r["properties"]["summary"]
                .as_str()
                .unwrap()
                .starts_with("data race /")
        );

        // Mutexes: each acquire as a stack and a related location.
        let name = "tsan_mutexes";
        let trace = record(dir.path(), name, cc);
        let results = recorded_results(&v, &trace, &["--relation", "hb"]);
        let r = &results[0];
        for (id, marker) in [(0, "LOCK-OUTER"), (1, "LOCK-INNER")] {
            let prefix = format!("Mutex M{id} (");
            let at = |l: &Value| {
                l["message"]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(&prefix))
            };
            let related = r["relatedLocations"].as_array().unwrap();
            let site = related.iter().find(|l| at(l)).unwrap();
            let want = Some((format!("{name}.c"), line_no(name, marker, 0) as u64));
            assert_eq!(file_line(site), want, "{cc}: {related:#?}");
            let stack = r["stacks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| at(s))
                .unwrap();
            assert_eq!(file_line(&stack["frames"][0]["location"]), want);
        }
        assert!(r["relatedLocations"].as_array().unwrap().iter().any(|l| {
            l["logicalLocations"][0]["name"] == "total"
                && l["logicalLocations"][0]["kind"] == "variable"
        }));
    }
}

/// A predicted race with --witness: the witness as a code flow, one thread
/// flow per thread, its steps numbered across threads (`executionOrder`
/// 1, 2, ...), the two accesses last and essential; valid against the
/// schema.
#[test]
fn recorded_witness_is_a_code_flow() {
    use crate::common::recorded::{compilers, line_no, record};
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    let name = "polarcoord";
    for cc in compilers() {
        let trace = record(dir.path(), name, cc);
        let results = recorded_results(&v, &trace, &["--relation", "cp", "--witness"]);
        let r = results
            .iter()
            .find(|r| r.get("codeFlows").is_some())
            .unwrap_or_else(|| panic!("{cc}: no code flow: {results:#?}"));
        let flows = r["codeFlows"][0]["threadFlows"].as_array().unwrap();
        // One flow per thread, in order of first appearance: main first
        // (it creates the others), then as the schedule found.
        let mut ids: Vec<&str> = flows.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids[0], "T0", "{cc}: {flows:#?}");
        ids.sort();
        assert_eq!(ids, ["T0", "T1", "T2"], "{cc}: {flows:#?}");
        let mut steps: Vec<(u64, &Value)> = flows
            .iter()
            .flat_map(|f| f["locations"].as_array().unwrap())
            .map(|l| (l["executionOrder"].as_u64().unwrap(), l))
            .collect();
        steps.sort_by_key(|s| s.0);
        let orders: Vec<u64> = steps.iter().map(|s| s.0).collect();
        assert_eq!(orders, (1..=steps.len() as u64).collect::<Vec<_>>(), "{cc}");
        // Each thread's own steps in order.
        for f in flows {
            let o: Vec<u64> = f["locations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["executionOrder"].as_u64().unwrap())
                .collect();
            assert!(o.is_sorted(), "{cc}: {f}");
        }
        let n = steps.len();
        let file = format!("{name}.c");
        for (step, marker) in steps[n - 2..].iter().zip(["INCREMENT-1", "INCREMENT-2"]) {
            let l = step.1;
            assert_eq!(l["importance"], "essential", "{cc}: {l}");
            let want = Some((file.clone(), line_no(name, marker, 0) as u64));
            assert_eq!(file_line(&l["location"]), want, "{cc}: {l}");
            assert_eq!(file_line(&l["stack"]["frames"][0]["location"]), want);
        }
        assert!(
            steps[..n - 2]
                .iter()
                .all(|s| s.1.get("importance").is_none())
        );
        // Each step's message names its thread.
        for f in flows {
            let who = f["message"]["text"].as_str().unwrap();
            assert!(who.ends_with(f["id"].as_str().unwrap()), "{cc}: {who}");
            for l in f["locations"].as_array().unwrap() {
                let text = l["location"]["message"]["text"].as_str().unwrap();
                assert!(text.contains(&format!("{who} ")), "{cc}: {text}");
            }
        }
    }
}
