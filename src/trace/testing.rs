//! Helpers for the loaders' unit tests, which compare each fast path with
//! the general one on random edge-case input.

use super::Names;
use crate::tools::generate::Rng;

/// One of `good` mostly, sometimes one of `odd`: the fast-path tests build
/// lines from such choices.
pub fn pick<'a>(r: &mut Rng, good: &[&'a str], odd: &[&'a str]) -> &'a str {
    if r.below(8) == 0 {
        odd[r.below(odd.len() as u64) as usize]
    } else {
        good[r.below(good.len() as u64) as usize]
    }
}

/// The name tables (threads, locks, variables, locations) as plain strings.
pub fn tables(n: &Names) -> Vec<Vec<String>> {
    [&n.threads, &n.locks, &n.vars, &n.locs]
        .iter()
        .map(|t| t.iter().map(|s| s.to_string()).collect())
        .collect()
}
