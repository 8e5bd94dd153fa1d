//! The paper figures shipped in data/figures, traces written out for failure
//! messages, and generated traces on disk.

use std::path::{Path, PathBuf};

use cprace::trace::{Trace, load};

/// The figures' CSV files, sorted.
pub fn figure_paths() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/figures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("data/figures exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 14,
        "expected the paper figures in data/figures, found {}",
        paths.len()
    );
    paths
}

/// Every figure, loaded.
pub fn figures() -> Vec<(PathBuf, Trace)> {
    figure_paths()
        .into_iter()
        .map(|p| {
            let t = load(&p, None).unwrap_or_else(|e| panic!("{e}"));
            (p, t)
        })
        .collect()
}

/// The path of the figure file `name`.
pub fn figure(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/figures")
        .join(name)
        .display()
        .to_string()
}

/// One line per event (`id: thread op target`), for failure messages.
pub fn dump(t: &Trace) -> String {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // The bytes touched, when not the whole variable.
            let bytes = match e.mask {
                0 | 0xff => String::new(),
                m => format!(" bytes {m:#04x}"),
            };
            format!(
                "{i}: {} {} {}{bytes}\n",
                t.names.thread(e.thread),
                e.op.as_str(),
                t.names.target(e)
            )
        })
        .collect()
}

/// `cprace gen --profile small -n N --seed S` into `dir`.
pub fn generated(dir: &Path, n: u64, seed: u64) -> PathBuf {
    let path = dir.join(format!("small-{n}-{seed}.csv"));
    let o = super::cli::output(&[
        "gen",
        "--profile",
        "small",
        "-n",
        &n.to_string(),
        "--seed",
        &seed.to_string(),
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "gen failed: {}", super::cli::stderr(&o));
    path
}
