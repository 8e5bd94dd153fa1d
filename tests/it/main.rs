//! Every integration test of cprace, in one test binary.
//!
//! Why one binary: each `tests/*.rs` file used to link its own copy of the
//! library and its dependencies, about 100 MB apiece; 33 of them filled the
//! CI machine's disk. Each module below is what one of those files was;
//! `cargo test --test it <module>::` runs one of them.

// Shared helpers: the CLI runner, the brute-force HB/CP/WCP oracle, traces.
mod common;
// The exhaustive explorer of correct reorderings, every soundness test's truth.
mod oracle;

mod atomics;
// Malformed input: exit 2 with file, line and problem, nothing on stdout.
mod bad_input;
// gzip, zstd and xz traces load exactly like plain text.
mod compressed;
// CP `datalog` against the brute-force Definition-2 oracle.
mod cp_engine;
// Streaming windowed CP against the whole-trace engine.
mod cp_stream;
// Every shell example of README.md and the book runs as the page shows.
mod docs;
// Deadlock prediction: the command, the shapes in data/deadlocks, the oracle.
mod deadlock_cli;
mod deadlock_shapes;
mod deadlocks;
// The paper figures in data/figures with their hand-derived verdicts.
mod figures;
// CSV, STD and RAPID CSV load to the same trace; writers round-trip.
mod formats;
// Random and mutated inputs never panic the loaders.
mod fuzz_load;
// `cprace gen`: well-formed, reproducible, exactly the size asked.
mod gen_cli;
// The generator's traces validate and follow its knobs.
mod generate;
// `analyze --relation hb|lockset` end to end.
mod hb_cli;
// HB's `reference` rules and `datalog` closure agree with `vc`.
mod hb_datalog;
// Hand-written traces with known HB verdicts, through every engine.
mod hb_examples;
// HB engines against the oracle and each other on generated traces.
mod hb_props;
// A recorded program's races in JSON and JSON Lines carry stacks and TSan's fields.
mod json_stacks;
// The laws between relations stated in docs/src/semantic-decisions.md "Semantic decisions".
mod laws;
// CP and WCP against their references on nested, never-released sections.
mod nested;
// The reordering explorer on traces with worked-out answers.
mod oracle_selftest;
// Running out of memory is exit 2 with a sentence.
mod out_of_memory;
// Outputs replaced only on success; closed pipes end quietly.
mod outputs;
// `sweep --plot`: the SVG and PNG figures.
mod plot;
// The C/C++ program suite (tests/programs): verdicts under hb, cp and wcp.
mod programs;
// The progress display on a terminal, and its absence elsewhere.
mod progress;
// SHB and syncp races against the exhaustive explorer, with witnesses.
mod provable;
// `query` for HB and CP: chains replayed against the reference relations.
mod query;
// `query --relation shb`: answers and dumps against SHB.
mod query_shb;
// `query --relation wcp`: dumps and chains against the reference WCP.
mod query_wcp;
// RapidBin round trips, limits and side files.
mod rapidbin;
// `cprace cc` and `cprace record` on real C programs.
mod record;
mod record_deadlocks;
mod reduce;
// Corrupted event files: a clear error or a loadable trace, memory bounded.
mod record_mutation;
// `analyze` with the reference engines: wiring, window, size limit.
mod reference_cli;
// The reference engines on the CP paper's figures.
mod reference_figures;
// The reference engines against the optimized ones on generated traces.
mod reference_props;
// The output contract of `analyze`: text, JSON, JSONL, CSV, summary.
mod reports;
// `--format html`: the page's data, and the page in a headless browser.
mod html;
// Recorded programs' race reports carry every field ThreadSanitizer prints.
mod suppressions;
mod tsan_report;
// `--format sarif` validates against the SARIF 2.1.0 schema.
mod sarif;
// Each relation's soundness theorem, checked against the explorer.
mod soundness;
// `cprace stats` counts and validation notes.
mod stats;
// `cprace sweep`: the table's laws, formats and recommendation.
mod sweep;
// Volatile accesses: the data/volatile traces and their verdicts.
mod volatile;
// `analyze --relation wcp` end to end.
mod wcp_cli;
// WCP's vector clocks compute exactly Definition 3.
mod wcp_engines;
// The example traces of the WCP paper with its verdicts.
mod wcp_figures;
// WCP windows restrict the pairs checked, never the relation.
mod wcp_window;
// Window values end to end, up to `none`.
mod windows;
