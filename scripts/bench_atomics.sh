#!/usr/bin/env bash
# What millions of atomics cost the analyses (issue 28, item 2): the
# program scripts/bench/atomic_flags.cpp (THREADS workers increment their
# own blocks of FLAGS std::atomic counters, then main reads them all, the
# shape of BS::thread_pool's loop tests) built with `cprace cc g++ -O1 -g`,
# recorded once, then `cprace analyze TRACE --relation R` for each
# analysis in ANALYSES, with BIN and, when given, BASE (another cprace
# build, e.g. an older commit's) on the same trace. Prints one markdown
# table: wall seconds and peak RSS (/usr/bin/time), median of RUNS runs.
#
# Usage: scripts/bench_atomics.sh
#   BIN=target/release/cprace   the cprace to measure (cargo build --release)
#   BASE=/path/to/cprace        a second build to compare with (optional)
#   THREADS=96 FLAGS=2000000    the program's arguments
#   ANALYSES="hb hb:epoch hb:treeclock wcp shb"   relation[:engine]
#   RUNS=3
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-$ROOT/target/release/cprace}
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 2; }
THREADS=${THREADS:-96}
FLAGS=${FLAGS:-2000000}
ANALYSES=${ANALYSES:-hb hb:epoch hb:treeclock wcp shb}
RUNS=${RUNS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$BIN" cc g++ -std=c++17 -O1 -g -pthread scripts/bench/atomic_flags.cpp -o "$WORK/flags"
"$BIN" record -o "$WORK/flags.cpt" -- "$WORK/flags" "$THREADS" "$FLAGS" >/dev/null 2>"$WORK/record.err" ||
    { cat "$WORK/record.err" >&2; exit 2; }

# One analysis: median wall seconds and peak MiB of RUNS runs.
measure() {
    local bin=$1 rel=${2%%:*} engine=
    [[ $2 == *:* ]] && engine="--engine ${2#*:}"
    for _ in $(seq "$RUNS"); do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$bin" analyze "$WORK/flags.cpt" \
            --relation "$rel" $engine --format summary >/dev/null 2>&1 || true
        cat "$WORK/time"
    done | sort -n | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { printf "%.2f s, %.0f MiB", $1, $2 / 1024 }'
}

echo "atomic_flags, $THREADS threads, $FLAGS flags: $("$BIN" stats "$WORK/flags.cpt" | awk '/^events:/ {print $2}') events"
if [ -n "${BASE:-}" ]; then
    echo "| analysis | BIN | BASE |"
    echo "|---|---|---|"
else
    echo "| analysis | BIN |"
    echo "|---|---|"
fi
for a in $ANALYSES; do
    row="| $a | $(measure "$BIN" "$a")"
    [ -n "${BASE:-}" ] && row="$row | $(measure "$BASE" "$a")"
    echo "$row |"
done
