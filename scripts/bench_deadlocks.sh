#!/usr/bin/env bash
# `cprace deadlocks` speed and memory: the Java Grande traces, then generated
# traces with nested locks and every deadlock shape (`gen --profile
# deadlocks`) at 1M and 10M events, to show memory flat in the trace length.
# Each row is the median of RUNS runs (default 3): wall seconds (to the
# microsecond), events per second, peak RSS (/usr/bin/time -v); `stats`
# on the same file is the cost of reading it (parsing, decompressing) for
# comparison.
#
#   scripts/bench_deadlocks.sh                 # JGF + 1M + 10M, 3 runs each
#   RUNS=5 scripts/bench_deadlocks.sh
#   JGF=/path/to/jgf SIZES="1M 10M 30M" scripts/bench_deadlocks.sh
#   BIN=/path/to/cprace scripts/bench_deadlocks.sh
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME and awk with a decimal point
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/cprace
fi
runs=${RUNS:-3}
jgf=${JGF:-../shared/traces/jgf}
[ -d "$jgf" ] || jgf=/work/shared/traces/jgf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# measure CMD...: RUNS runs; prints "wall_s rss_mb" medians. Each run is
# timed bare to the microsecond (bash's EPOCHREALTIME: /usr/bin/time
# rounds to 10 ms, a fifth of the smallest trace's time), then run again
# under /usr/bin/time -v for its peak RSS.
measure() {
  local walls=() rsss=() t0 t1
  for _ in $(seq "$runs"); do
    t0=$EPOCHREALTIME
    "$@" > "$tmp/out" 2> /dev/null || true
    t1=$EPOCHREALTIME
    walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')")
    /usr/bin/time -v -o "$tmp/time" "$@" > "$tmp/out" 2> /dev/null || true
    rsss+=("$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$tmp/time")")
  done
  echo "$(median "${walls[@]}") $(median "${rsss[@]}")"
}

row() { # NAME EVENTS FILE
  local name=$1 events=$2 file=$3
  read -r sw _ <<< "$(measure "$BIN" stats "$file")"
  read -r dw dm <<< "$(measure "$BIN" deadlocks "$file" --format summary)"
  "$BIN" deadlocks "$file" --format summary > "$tmp/summary" 2> /dev/null || true
  local found
  found=$(sed -n 's/^SUMMARY: \([0-9]*\) actual deadlocks\{0,1\}, \([0-9]*\) predicted deadlocks\{0,1\}, \([0-9]*\) lock-order inversions\{0,1\}.*/\1 \/ \2 \/ \3/p' "$tmp/summary")
  local eps
  eps=$(awk -v e="$events" -v w="$dw" 'BEGIN { printf "%.1fM", e / w / 1e6 }')
  echo "| $name | $events | $sw | $dw | $eps | $dm | $found |"
}

echo "| trace | events | stats s | deadlocks s | events/s | peak RSS MB | actual / predicted / inversions |"
echo "|---|---|---|---|---|---|---|"
for f in "$jgf"/*.std.xz; do
  [ -e "$f" ] || continue
  n=$("$BIN" stats "$f" | sed -n 's/^events: //p')
  row "$(basename "$f" .std.xz)" "$n" "$f"
done
for size in ${SIZES:-1M 10M}; do
  f="$tmp/deadlocks-$size.std"
  "$BIN" gen --profile deadlocks -n "$size" --seed 1 --format std -o "$f"
  n=$("$BIN" stats "$f" | sed -n 's/^events: //p')
  row "gen deadlocks $size (std)" "$n" "$f"
  rm -f "$f"
done
