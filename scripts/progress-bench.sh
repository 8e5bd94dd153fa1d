#!/usr/bin/env bash
# What the progress display costs: the same runs on the 10M-event trace of
# scripts/bench.sh with standard error a file (no display), on a terminal
# (`script` gives the run a pseudo-terminal: display on) and on a terminal
# with --quiet. Prints one Markdown row per case: median and all wall times.
#
#   scripts/progress-bench.sh [RUNS]     # default 5 runs per case
#
# Traces live in $BENCH_DIR (default /tmp/cprace-bench), as for bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
dir=${BENCH_DIR:-/tmp/cprace-bench}
mkdir -p "$dir"
cargo build --release --quiet
bin=$PWD/target/release/cprace
trace=$dir/bench-10M.std
[ -s "$trace" ] || "$bin" gen --profile bench -n 10M --seed 1 --format std -o "$trace"
command -v script > /dev/null || { echo "needs script(1) from util-linux" >&2; exit 2; }

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "| run | stderr | median wall s | runs (s) |"
echo "|---|---|---|---|"
for cmd in "stats $trace" \
           "analyze $trace --relation hb --engine epoch --format summary" \
           "analyze $trace --relation cp --window 1000 --format summary"; do
  for mode in file tty tty-quiet; do
    times=()
    for _ in $(seq "$runs"); do
      t=$dir/progress-time.txt
      case $mode in
        file) /usr/bin/time -f %e -o "$t" "$bin" $cmd > /dev/null 2> "$dir/progress-err.txt" || true ;;
        tty) script -q -e -c "/usr/bin/time -f %e -o $t $bin $cmd > /dev/null" /dev/null > "$dir/progress-tty.txt" || true ;;
        tty-quiet) script -q -e -c "/usr/bin/time -f %e -o $t $bin --quiet $cmd > /dev/null" /dev/null > "$dir/progress-tty.txt" || true ;;
      esac
      times+=("$(tail -n 1 "$t")")
    done
    med=$(printf '%s\n' "${times[@]}" | median)
    echo "| \`cprace ${cmd/$trace/bench-10M.std}\` | $mode | $med | ${times[*]} |"
  done
done
