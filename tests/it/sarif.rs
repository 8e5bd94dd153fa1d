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
