//! Every integration test of cprace, in one test binary.
//!
//! Why one binary: each `tests/*.rs` file used to link its own copy of the
//! library and its dependencies, about 100 MB apiece; 33 of them filled the
//! CI machine's disk. Each module below is what one of those files was;
//! `cargo test --test it <module>::` runs one of them.

mod common;
mod hb_common;
mod oracle;

mod atomics;
mod bad_input;
mod compressed;
mod cp_engine;
mod cp_stream;
mod figures;
mod formats;
mod fuzz_load;
mod gen_cli;
mod generate;
mod hb_cli;
mod hb_datalog;
mod hb_examples;
mod hb_props;
mod laws;
mod oracle_selftest;
mod out_of_memory;
mod outputs;
mod plot;
mod progress;
mod provable;
mod query;
mod query_shb;
mod query_wcp;
mod rapidbin;
mod record;
mod reference_cli;
mod reference_figures;
mod reference_props;
mod reports;
mod sarif;
mod soundness;
mod stats;
mod sweep;
mod volatile;
mod wcp_cli;
mod wcp_engines;
mod wcp_figures;
mod wcp_window;
mod windows;
