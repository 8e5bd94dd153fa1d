//! Write a generated trace in STD to stdout: `cargo run --release --example gen_std -- PROFILE EVENTS SEED`.
//! (Until `cprace gen` lands; used by scripts/bench.sh.)

use std::io::{BufWriter, Write};

use cprace::generate::{Config, Generator};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut cfg = Config::profile(args.get(1).map_or("bench", |s| s)).expect("known profile");
    cfg.events = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    cfg.seed = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let names = Generator::names(&cfg);
    let mut out = BufWriter::new(std::io::stdout().lock());
    for ev in Generator::new(cfg) {
        writeln!(
            out,
            "{}|{}({})|{}",
            names.thread(ev.thread),
            ev.op.as_str(),
            names.target(&ev),
            names.loc(ev.loc)
        )
        .unwrap();
    }
}
