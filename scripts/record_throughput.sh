#!/usr/bin/env bash
# Recording throughput of `cprace record` on scripts/record/throughput.c:
# events per second through the runtime alone (binary event files), the trace
# writing alone (`cprace record --from-events` on those files), and the whole
# record (run + merge + symbolize + trace written: RapidBin with `-o t.bin`,
# STD text with `-o t.std`), against the native and ThreadSanitizer builds of
# the same program. Every figure is the median of RUNS runs (default 5) of
# wall time and, separately, of CPU time (user + sys), since on a loaded
# machine wall time measures the load; the load average is printed too.
# Usage: scripts/record_throughput.sh [THREADS ITERS] (default 2 10000: ~41M events)
# CPRACE=/path/to/cprace measures another build (its runtime next to it).
set -euo pipefail
cd "$(dirname "$0")/.."
CPRACE=${CPRACE:-$PWD/target/release/cprace}
[ -x "$CPRACE" ] || { echo "build first: cargo build --release" >&2; exit 2; }
ARGS=("${1:-2}" "${2:-10000}")
RUNS=${RUNS:-5}
# Traces go to memory (/dev/shm) when it exists, so the numbers measure the
# recorder rather than the disk (this VM's disk writes ~110 MB/s); set
# TRACE_DIR=/tmp to include the disk.
WORK=$(mktemp -d -p "${TRACE_DIR:-$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp)}")
export TMPDIR=$WORK
trap 'rm -rf "$WORK"' EXIT
SRC=scripts/record/throughput.c
gcc -O1 -g "$SRC" -o "$WORK/native" -pthread
"$CPRACE" cc gcc -O1 -g "$SRC" -o "$WORK/rec" -pthread
HAVE_TSAN=1
gcc -O1 -g -fsanitize=thread "$SRC" -o "$WORK/tsan" -pthread 2>/dev/null || HAVE_TSAN=0

# measure NAME CMD...: RUNS runs; prints "NAME WALL CPU" (medians, seconds).
# A command containing @RAW@ gets a fresh, empty event directory each run.
measure() {
    local name=$1; shift
    local walls=() cpus=() i
    for ((i = 0; i < RUNS; i++)); do
        rm -rf "$WORK/raw"; mkdir "$WORK/raw"
        local cmd=("${@//@RAW@/$WORK/raw}")
        local t
        t=$(/usr/bin/time -f "%e %U %S" "${cmd[@]}" 2>&1 >/dev/null | tail -1)
        read -r e u s <<<"$t"
        walls+=("$e"); cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
    done
    local m=$(( (RUNS + 1) / 2 ))
    echo "$name $(printf '%s\n' "${walls[@]}" | sort -n | sed -n ${m}p) $(printf '%s\n' "${cpus[@]}" | sort -n | sed -n ${m}p)"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
RESULTS=$(
    measure native "$WORK/native" "${ARGS[@]}"
    [ "$HAVE_TSAN" = 1 ] && measure tsan "$WORK/tsan" "${ARGS[@]}"
    measure runtime env CPRACE_RECORD_DIR=@RAW@ "$WORK/rec" "${ARGS[@]}"
    # The event files of one run, for the trace writing alone.
    rm -rf "$WORK/events"; mkdir "$WORK/events"
    CPRACE_RECORD_DIR="$WORK/events" "$WORK/rec" "${ARGS[@]}" >/dev/null
    measure from-events "$CPRACE" record --from-events "$WORK/events" -o "$WORK/f.bin"
    measure record-bin "$CPRACE" record -o "$WORK/t.bin" -- "$WORK/rec" "${ARGS[@]}"
    measure record-std "$CPRACE" record -o "$WORK/t.std" -- "$WORK/rec" "${ARGS[@]}"
)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
EVENTS=$(wc -l < "$WORK/t.std")
echo "program: throughput ${ARGS[*]}; $EVENTS events, event files $(du -sh "$WORK/events" | cut -f1), RapidBin $(du -h "$WORK/t.bin" | cut -f1), STD $(du -h "$WORK/t.std" | cut -f1); medians of $RUNS runs"
# A native run under 10 ms reads as 0.00: count it as 0.01 s (slowdowns are then lower bounds).
echo "$RESULTS" | awk -v e="$EVENTS" '
    { wall[$1] = $2; cpu[$1] = $3; order[NR] = $1 }
    END {
        n = wall["native"] < 0.01 ? 0.01 : wall["native"]
        printf "%-12s %8s %8s %10s %10s %14s\n", "run", "wall s", "CPU s", "vs native", "vs TSan", "M events/s"
        for (i = 1; i <= NR; i++) {
            r = order[i]
            vt = ("tsan" in wall) ? sprintf("%.2fx", wall[r] / wall["tsan"]) : "-"
            rate = (r == "native" || r == "tsan") ? "-" : sprintf("%.1f", e / wall[r] / 1e6)
            vn = r == "native" ? 1 : wall[r] / n
            printf "%-12s %8.2f %8.2f %9.1fx %10s %14s\n", r, wall[r], cpu[r], vn, vt, rate
        }
    }'
