#!/usr/bin/env bash
# shb and syncp beside hb and wcp on the bench profile (BENCHMARKS.md,
# "Provable relations"). Pairs each run with hb on the same trace, so the
# ratio stays meaningful on a loaded machine.
#
#   scripts/bench_provable.sh        # 1M and 2M events
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/cprace-bench}
mkdir -p "$dir"
cargo build --release --quiet
bin=target/release/cprace
for n in 1M 2M; do
  [ -s "$dir/bench-$n.std" ] || "$bin" gen --profile bench -n "$n" --seed 1 --format std -o "$dir/bench-$n.std"
  for r in hb shb syncp wcp; do
    echo "== bench-$n.std $r"
    "$bin" analyze "$dir/bench-$n.std" --relation "$r" --format summary | grep SUMMARY || true
    /usr/bin/time -f "wall %e s, cpu %U s, peak %M KiB" "$bin" analyze "$dir/bench-$n.std" --relation "$r" --format summary > /dev/null || true
  done
done
