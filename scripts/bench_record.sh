#!/usr/bin/env bash
# What recording costs on real programs, beside ThreadSanitizer: pigz
# compressing a ~20 MB file with 4 threads (`pigz -p 4 -c input`), and a
# C++17 std::thread worker pool (scripts/bench/pool.cpp: a mutex and
# condition-variable job queue, atomic counters, sorting and hashing).
# Each is built three ways: native `gcc -O2`, `gcc -O2 -g
# -fsanitize=thread`, and `cprace cc gcc -O2 -g`; then run native, under
# TSan, under `cprace record -o t.cpt` and under `cprace record -o t.cpt
# --analyze hb`; then a record's two halves apart: the program under the
# runtime alone (CPRACE_RECORD_DIR set: it writes the event files) and the
# trace writing alone (`record --from-events` on those files). Each row is
# the median of RUNS runs (default 3) of
# /usr/bin/time -v: wall seconds, CPU seconds (user + sys) and peak RSS,
# with the events record wrote and the last run's exit status (1 from
# `--analyze` means races reported, 66 is TSan's after a warning).
#
# Peak memory of a record: `record` runs the program as its child and waits
# for it, and /usr/bin/time -v reports the largest RSS of record and of the
# program it waited for (Linux's wait4 gives the larger of the two), not
# their sum. So the program is also run under a second /usr/bin/time -v
# inside record, and the rows give both: "peak MiB" (record's figure) and
# "program MiB" (the program's own, under the runtime). The two overlap
# only while the program runs, when record holds only its own binary (a
# few MB): the program ends before record reads the events.
#
# pigz's sources are not part of this repository: get them with
#   git clone https://github.com/madler/pigz /tmp/pigz
# (this measured pigz 2.8) and name the directory:
#   PIGZ_SRC=/tmp/pigz scripts/bench_record.sh
#   RUNS=5 PIGZ_SRC=/tmp/pigz scripts/bench_record.sh
#   PIGZ_SRC=/tmp/pigz POOL_ARGS="4 512 2048 400" scripts/bench_record.sh
#   BIN=/path/to/cprace PIGZ_SRC=... scripts/bench_record.sh   # another build
# Without PIGZ_SRC only the pool is measured. The input is made from
# pigz.c, each copy's lines numbered (deterministic for a pigz version),
# cut to 20 MiB. Traces go to /dev/shm when it exists (TRACE_DIR=/tmp
# includes the disk).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/cprace
fi
BIN=$(realpath "$BIN")
runs=${RUNS:-3}
pool_args=${POOL_ARGS:-4 512 2048 400}
work=$(mktemp -d -p "${TRACE_DIR:-$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp)}")
trap 'rm -rf "$work"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
wall_of() { awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$1"; }
cpu_of() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$1"; }
rss_of() { awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"; }

# measure NAME CMD...: RUNS runs of CMD (stdout to /dev/null); prints a row.
# A command run by record is wrapped in a second /usr/bin/time -v for the
# program's own peak RSS; record's summary line gives the events.
measure() {
  local name=$1 walls=() cpus=() rsss=() progs=() events=- code; shift
  local cmd=("$@")
  for _ in $(seq "$runs"); do
    rm -f "$work/prog.time"
    code=0
    /usr/bin/time -v -o "$work/time" "${cmd[@]}" > /dev/null 2> "$work/err" || code=$?
    # 1: `--analyze` found races; 66: TSan warned. Anything else failed.
    if [ "$code" -ne 0 ] && [ "$code" -ne 1 ] && [ "$code" -ne 66 ]; then
      echo "$name failed (exit $code):" >&2; cat "$work/err" >&2; exit 1
    fi
    walls+=("$(wall_of "$work/time")")
    cpus+=("$(cpu_of "$work/time")")
    rsss+=("$(rss_of "$work/time")")
    [ -f "$work/prog.time" ] && progs+=("$(rss_of "$work/prog.time")")
    local e
    e=$(sed -n 's/^cprace record: \([0-9]*\) events.*/\1/p' "$work/err")
    [ -n "$e" ] && events=$e
  done
  local prog=-
  [ ${#progs[@]} -gt 0 ] && prog=$(median "${progs[@]}")
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(median "${walls[@]}")" \
    "$(median "${cpus[@]}")" "$(median "${rsss[@]}")" "$prog" "$events" "$code"
}

# bench LABEL NATIVE TSAN RECORDED ARGS...: the four rows of one program.
bench() {
  local label=$1 native=$2 tsan=$3 rec=$4; shift 4
  local inner=(/usr/bin/time -v -o "$work/prog.time" "$rec" "$@")
  measure "$label native" "$native" "$@"
  measure "$label TSan" "$tsan" "$@"
  measure "$label cprace record -o t.cpt" "$BIN" record -o "$work/t.cpt" -- "${inner[@]}"
  measure "$label cprace record -o t.cpt --analyze hb" \
    "$BIN" record -o "$work/t.cpt" --analyze hb -- "${inner[@]}"
  # Where a record's time goes: the program under the runtime alone (it
  # writes the event files), then the trace writing alone from those files.
  measure "$label  runtime only (event files)" sh -c \
    'rm -rf "$0" && mkdir "$0" && CPRACE_RECORD_DIR="$0" exec "$@"' "$work/events" "$rec" "$@"
  measure "$label  trace writing only (record --from-events)" \
    "$BIN" record --from-events "$work/events" -o "$work/t.cpt"
}

echo "cprace $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(gcc --version | head -1), $(nproc) cores, RUNS=$runs"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | wall s | CPU s | peak MiB | program MiB | events | exit |"
echo "|---|---|---|---|---|---|---|"

if [ -n "${PIGZ_SRC:-}" ]; then
  [ -f "$PIGZ_SRC/pigz.c" ] || { echo "PIGZ_SRC=$PIGZ_SRC holds no pigz.c" >&2; exit 2; }
  for kind in native tsan rec; do
    mkdir -p "$work/pigz-$kind"
    cp -r "$PIGZ_SRC"/. "$work/pigz-$kind"
  done
  make -s -C "$work/pigz-native" CC=gcc CFLAGS="-O2" pigz > /dev/null
  make -s -C "$work/pigz-tsan" CC=gcc CFLAGS="-O2 -g -fsanitize=thread" \
    LDFLAGS="-fsanitize=thread" pigz > /dev/null
  make -s -C "$work/pigz-rec" CC="$BIN cc gcc" CFLAGS="-O2 -g" pigz > /dev/null
  input=$work/input
  i=0
  while [ ! -f "$input" ] || [ "$(stat -c %s "$input")" -lt $((20 << 20)) ]; do
    i=$((i + 1))
    awk -v c="$i" '{ print c "." NR ": " $0 }' "$PIGZ_SRC/pigz.c" >> "$input"
  done
  truncate -s $((20 << 20)) "$input"
  bench "pigz -p 4" "$work/pigz-native/pigz" "$work/pigz-tsan/pigz" "$work/pigz-rec/pigz" \
    -p 4 -c "$input"
fi

src=scripts/bench/pool.cpp
g++ -std=c++17 -O2 "$src" -o "$work/pool-native" -pthread
g++ -std=c++17 -O2 -g -fsanitize=thread "$src" -o "$work/pool-tsan" -pthread
"$BIN" cc g++ -std=c++17 -O2 -g "$src" -o "$work/pool-rec" -pthread
# shellcheck disable=SC2086 # POOL_ARGS is a list of numbers
bench "pool $pool_args" "$work/pool-native" "$work/pool-tsan" "$work/pool-rec" $pool_args

echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
