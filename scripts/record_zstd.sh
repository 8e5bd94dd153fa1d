#!/usr/bin/env bash
# Records zstd's multithreaded compressor (C sources from the zstd-sys crate,
# fetched by cargo into ~/.cargo/registry, never copied into this repository)
# driven by scripts/record/zstd_harness.c, and compares it with the native
# build and gcc's ThreadSanitizer. Prints the numbers BENCHMARKS.md quotes.
#
# Usage: scripts/record_zstd.sh [THREADS KIB_PER_THREAD WORKERS LEVEL] (default 2 1024 2 1)
# Needs: gcc, a release build (cargo build --release), network access to
# crates.io for the first `cargo fetch`; libtsan for the TSan column.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ARGS=("${1:-2}" "${2:-1024}" "${3:-2}" "${4:-1}")
CPRACE=$ROOT/target/release/cprace
[ -x "$CPRACE" ] || { echo "build first: cargo build --release" >&2; exit 2; }
# Work (traces included) in memory (/dev/shm) when it exists: this VM's disk
# writes ~110 MB/s, which would dominate; TRACE_DIR=/tmp includes the disk.
WORK=$(mktemp -d -p "${TRACE_DIR:-$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp)}")
export TMPDIR=$WORK
trap 'rm -rf "$WORK"' EXIT

# 1. zstd's sources: a throwaway crate depending on zstd-sys, fetched.
mkdir -p "$WORK/fetch/src"
cat > "$WORK/fetch/Cargo.toml" <<'TOML'
[package]
name = "fetch-zstd"
version = "0.0.0"
edition = "2021"
[dependencies]
zstd-sys = "=2.1.3"
TOML
echo 'fn main() {}' > "$WORK/fetch/src/main.rs"
(cd "$WORK/fetch" && cargo fetch -q)
CRATE=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/zstd-sys-2.1.3*.crate | head -1)
tar xzf "$CRATE" -C "$WORK"
LIB=$(echo "$WORK"/zstd-sys-*/zstd/lib)
SRCS=("$LIB"/common/*.c "$LIB"/compress/*.c "$LIB"/decompress/*.c)
DEFS=(-DZSTD_MULTITHREAD -DZSTD_DISABLE_ASM -I"$LIB")
echo "zstd $(basename "$(dirname "$(dirname "$LIB")")"), harness ${ARGS[*]}"

# 2. Three builds of the same sources: native, ThreadSanitizer, cprace.
build() { # name, compiler command...
    local name=$1; shift
    mkdir -p "$WORK/$name"
    local objs=()
    for s in "${SRCS[@]}" scripts/record/zstd_harness.c; do
        local o="$WORK/$name/$(basename "$(dirname "$s")")-$(basename "$s" .c).o"
        "$@" -O1 -g "${DEFS[@]}" -c "$s" -o "$o"
        objs+=("$o")
    done
    "$@" "${objs[@]}" -o "$WORK/$name/harness" -pthread
}
build native gcc
HAVE_TSAN=1
build tsan gcc -fsanitize=thread 2>/dev/null || HAVE_TSAN=0
build cprace "$CPRACE" cc gcc

secs() { # median wall seconds of 3 runs of a command
    for _ in 1 2 3; do
        /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1
    done | sort -n | sed -n 2p
}
NATIVE=$(secs "$WORK/native/harness" "${ARGS[@]}")
echo "native:                      ${NATIVE}s"
if [ "$HAVE_TSAN" = 1 ]; then
    TSAN=$(secs "$WORK/tsan/harness" "${ARGS[@]}")
    echo "ThreadSanitizer:             ${TSAN}s"
    "$WORK/tsan/harness" "${ARGS[@]}" 2>&1 >/dev/null | grep -c 'WARNING: ThreadSanitizer' \
        | sed 's/^/ThreadSanitizer warnings:    /' || true
else
    echo "ThreadSanitizer:             not available (libtsan missing)"
fi
UNREC=$(secs "$WORK/cprace/harness" "${ARGS[@]}")
echo "cprace cc, not recording:    ${UNREC}s"
# The runtime alone (binary event files), then the whole record (run + STD).
mkdir -p "$WORK/raw"
RAW=$( { /usr/bin/time -f %e env CPRACE_RECORD_DIR="$WORK/raw" "$WORK/cprace/harness" "${ARGS[@]}" >/dev/null; } 2>&1 | tail -1)
echo "runtime only (event files):  ${RAW}s, $(du -sh "$WORK/raw" | cut -f1)"
rm -rf "$WORK/raw"
REC=$( { /usr/bin/time -f %e "$CPRACE" record -o "$WORK/zstd.std" -- "$WORK/cprace/harness" "${ARGS[@]}" >/dev/null; } 2>&1 | tail -2)
echo "$REC" | head -1
RECS=$(echo "$REC" | tail -1)
EVENTS=$(wc -l < "$WORK/zstd.std")
echo "cprace record (run + STD):   ${RECS}s, $EVENTS events, $(du -h "$WORK/zstd.std" | cut -f1)"
awk -v e="$EVENTS" -v t="$RECS" -v n="$NATIVE" -v r="$RAW" -v u="$UNREC" -v ts="${TSAN:-0}" 'BEGIN {
    printf "events/s written (whole record): %.1fM\n", e / t / 1e6;
    printf "slowdown vs native: not recording %.1fx, runtime only %.1fx, record %.1fx\n", u / n, r / n, t / n;
    if (ts > 0) printf "slowdown vs TSan:   runtime only %.2fx, record %.2fx (TSan itself %.1fx native)\n", r / ts, t / ts, ts / n;
}'
"$CPRACE" stats "$WORK/zstd.std" | grep -E '^(events|threads|locks|variables|acquires|reads|writes|volatile_accesses|forks)'
for rel in hb wcp cp; do
    OUT=$( { /usr/bin/time -f "%e s %M KB" "$CPRACE" analyze "$WORK/zstd.std" --relation "$rel" --format json > "$WORK/$rel.json"; } 2>&1 || true)
    python3 - "$WORK/$rel.json" "$rel" "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
locs = sorted({(r["first_loc"], r["second_loc"]) for r in d["races"]})
print(f"{sys.argv[2]}: {len(d['racy_events'])} racy events, {len(d['racy_variables'])} racy variables, "
      f"{d['location_pairs']} location pairs ({sys.argv[3].strip()})")
for a, b in locs[:8]:
    print(f"    {a} / {b}")
PY
done
