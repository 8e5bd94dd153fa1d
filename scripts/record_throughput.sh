#!/usr/bin/env bash
# Recording throughput of `cprace record` on scripts/record/throughput.c:
# events per second through the runtime alone (binary event files) and through
# the whole record (run + merge + symbolize + trace written: RapidBin with
# `-o t.bin`, STD text with `-o t.std`), against the native and
# ThreadSanitizer builds of the same program. Wall times are medians of 3;
# CPU (user + sys) is printed too, since on a loaded machine wall time
# measures the load.
# Usage: scripts/record_throughput.sh [THREADS ITERS] (default 2 10000: ~41M events)
set -euo pipefail
cd "$(dirname "$0")/.."
CPRACE=$PWD/target/release/cprace
[ -x "$CPRACE" ] || { echo "build first: cargo build --release" >&2; exit 2; }
ARGS=("${1:-2}" "${2:-10000}")
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

med() { sort -n | sed -n 2p; }
t() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
cpu() { /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB" "$@" 2>&1 >/dev/null | tail -1; }
NATIVE=$(for _ in 1 2 3; do t "$WORK/native" "${ARGS[@]}"; done | med)
TSAN=0
[ "$HAVE_TSAN" = 1 ] && TSAN=$(for _ in 1 2 3; do t "$WORK/tsan" "${ARGS[@]}"; done | med)
RAW=$(for _ in 1 2 3; do rm -rf "$WORK/raw"; mkdir "$WORK/raw"; t env CPRACE_RECORD_DIR="$WORK/raw" "$WORK/rec" "${ARGS[@]}"; done | med)
BIN=$(for _ in 1 2 3; do t "$CPRACE" record -o "$WORK/t.bin" -- "$WORK/rec" "${ARGS[@]}"; done | med)
REC=$(for _ in 1 2 3; do t "$CPRACE" record -o "$WORK/t.std" -- "$WORK/rec" "${ARGS[@]}"; done | med)
EVENTS=$(wc -l < "$WORK/t.std")
[ "$HAVE_TSAN" = 1 ] && echo "one TSan run, CPU: $(cpu "$WORK/tsan" "${ARGS[@]}")"
echo "one run into event files, CPU: $(cpu env CPRACE_RECORD_DIR="$WORK/raw" "$WORK/rec" "${ARGS[@]}")"
echo "one record -o t.bin, CPU: $(cpu "$CPRACE" record -o "$WORK/t.bin" -- "$WORK/rec" "${ARGS[@]}")"
echo "one record -o t.std, CPU: $(cpu "$CPRACE" record -o "$WORK/t.std" -- "$WORK/rec" "${ARGS[@]}")"
echo "program: throughput ${ARGS[*]}; $EVENTS events, RapidBin $(du -h "$WORK/t.bin" | cut -f1), STD $(du -h "$WORK/t.std" | cut -f1)"
# A native run under 10 ms reads as 0.00: count it as 0.01 s (slowdowns are then lower bounds).
awk -v e="$EVENTS" -v n="$(awk -v n="$NATIVE" 'BEGIN { print (n < 0.01 ? 0.01 : n) }')" -v ts="$TSAN" -v r="$RAW" -v b="$BIN" -v c="$REC" 'BEGIN {
    printf "native %.2fs; TSan %.2fs (%.1fx); runtime only %.2fs (%.1fx native, %.0fM events/s); record -o t.bin %.2fs (%.1fx native, %.1fM events/s written); record -o t.std %.2fs (%.1fx native, %.1fM events/s written)\n",
        n, ts, ts / n, r, r / n, e / r / 1e6, b, b / n, e / b / 1e6, c, c / n, e / c / 1e6 }'
