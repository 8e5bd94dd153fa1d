#!/usr/bin/env bash
# Real C/C++ programs recorded and analysed by cprace beside their native
# and ThreadSanitizer builds (issue 28): zstd's command-line tool (its
# sources: Debian's source package, fetched with apt into the work
# directory, or ZSTD_SRC) compressing a tar of /usr/include with 2 worker
# threads, and the test program of BS::thread_pool (POOL_SRC: a checkout of
# https://github.com/bshoshany/thread-pool; skipped without it). Nothing
# fetched is kept or committed.
#
# Usage: scripts/bench_real_programs.sh
#   BIN=target/release/cprace  the cprace to measure (cargo build --release)
#   CASES="zstd3 zstd19 pool"  which runs (zstd -T2 -3 on 30 MiB, zstd -T2
#                              -19 on 1 MiB, the thread pool's tests)
#   RELATIONS="hb cp wcp"      the `record --analyze R` rows
#   ZSTD_SRC=DIR               zstd's sources (a directory with lib/, programs/)
#   POOL_SRC=DIR               BS::thread_pool's sources
#   LIMIT=600                  seconds before a run is stopped (reported as such)
#   WORKDIR=DIR                where traces and builds go (default /dev/shm)
#   OUT=FILE                   also write the table between the `real` markers
#                              of FILE (e.g. BENCHMARKS.md)
# Prints one markdown table: wall seconds and peak memory (/usr/bin/time) of
# each run, and cprace's factors against the TSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-$ROOT/target/release/cprace}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 2; }
CASES=${CASES:-zstd3 zstd19 pool}
RELATIONS=${RELATIONS:-hb cp wcp}
LIMIT=${LIMIT:-600}
# In memory when possible: the disk would time the traces' writing.
# WORKDIR=/tmp keeps them on disk: the thread pool's event files are 7 GB,
# and its analysis needs 12 GB of memory beside them.
WORK=$(mktemp -d -p "${WORKDIR:-$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp)}")
trap 'rm -rf "$WORK"' EXIT
export TMPDIR=$WORK

zstd_src() {
    if [ -n "${ZSTD_SRC:-}" ]; then echo "$ZSTD_SRC"; return; fi
    # Debian's source package, with a private apt state (no change to the
    # machine's sources).
    local apt=$WORK/apt
    mkdir -p "$apt/lists/partial"
    cat > "$apt/src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    local opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt"
                -o Dir::State::Lists="$apt/lists")
    apt-get "${opts[@]}" update >/dev/null 2>&1
    (cd "$apt" && apt-get "${opts[@]}" source --download-only libzstd >/dev/null 2>&1)
    tar xf "$(ls "$apt"/libzstd_*.orig.tar.* | grep -v '\.asc$' | head -1)" -C "$WORK"
    echo "$WORK"/zstd-*/
}

# name, seconds, peak KiB of a command ("-" when it was stopped after
# LIMIT seconds or failed: exit status 2 or more; 1 is "races found")
measure() {
    local name=$1; shift
    local t=$WORK/time rc=0 s=- k=-
    timeout "$LIMIT" /usr/bin/time -o "$t" -f "%e %M" "$@" >/dev/null 2>"$WORK/err" || rc=$?
    if [ "$rc" -lt 2 ] && [ -s "$t" ]; then
        read -r s k < <(tail -1 "$t")
    fi
    rm -f "$t"
    echo "$name $s $k"
}

ROWS=$WORK/rows
: > "$ROWS"
row() { # case, run, seconds, KiB, tsan seconds, tsan KiB
    awk -v c="$1" -v r="$2" -v s="$3" -v k="$4" -v ts="$5" -v tk="$6" 'BEGIN {
        mib = (k == "-") ? "-" : sprintf("%.0f", k / 1024);
        fs = (s == "-" || ts == "-" || ts == 0) ? "-" : sprintf("%.1fx", s / ts);
        fm = (k == "-" || tk == "-" || tk == 0) ? "-" : sprintf("%.1fx", k / tk);
        printf "| %s | %s | %s | %s | %s | %s |\n", c, r, s, mib, fs, fm }' >> "$ROWS"
}

# case name, native, tsan, cprace program commands (arrays by name)
bench_case() {
    local case=$1 native=$2 tsan=$3 cprace=$4; shift 4
    local args=("$@")
    read -r _ ns nk < <(measure native "$native" "${args[@]}")
    read -r _ ts tk < <(measure tsan "$tsan" "${args[@]}")
    row "$case" native "$ns" "$nk" "$ts" "$tk"
    row "$case" "gcc -fsanitize=thread" "$ts" "$tk" "$ts" "$tk"
    read -r _ rs rk < <(measure record "$BIN" record -o "$WORK/t.cpt" -- "$cprace" "${args[@]}")
    rm -f "$WORK/t.cpt"
    row "$case" "\`cprace record -o t.cpt\`" "$rs" "$rk" "$ts" "$tk"
    for r in $RELATIONS; do
        read -r _ as ak < <(measure "$r" "$BIN" record --analyze "$r" -- "$cprace" "${args[@]}")
        row "$case" "\`cprace record --analyze $r\`" "$as" "$ak" "$ts" "$tk"
    done
}

if [[ " $CASES " == *" zstd"* ]]; then
    SRC=$(zstd_src)
    for v in native tsan cprace; do
        cp -r "$SRC" "$WORK/zstd-$v"
        case $v in
            native) cc=(gcc); flags="-O1 -g";;
            tsan) cc=(gcc); flags="-O1 -g -fsanitize=thread";;
            cprace) cc=("$BIN" cc gcc); flags="-O1 -g";;
        esac
        make -C "$WORK/zstd-$v/programs" -j2 zstd CC="${cc[*]}" CFLAGS="$flags" \
            LDFLAGS="$( [ $v = tsan ] && echo -fsanitize=thread )" >/dev/null 2>&1
    done
    tar cf - /usr/include 2>/dev/null | head -c $((30 << 20)) > "$WORK/in30" || true
    head -c $((1 << 20)) "$WORK/in30" > "$WORK/in1"
    z() { echo "$WORK/zstd-$1/programs/zstd"; }
    [[ " $CASES " == *" zstd3 "* ]] && bench_case "zstd -T2 -3, 30 MiB" \
        "$(z native)" "$(z tsan)" "$(z cprace)" -T2 -3 -q -c "$WORK/in30"
    [[ " $CASES " == *" zstd19 "* ]] && bench_case "zstd -T2 -19, 1 MiB" \
        "$(z native)" "$(z tsan)" "$(z cprace)" -T2 -19 -q -c "$WORK/in1"
fi
if [[ " $CASES " == *" pool "* ]]; then
    if [ -z "${POOL_SRC:-}" ]; then
        echo "pool: skipped (POOL_SRC=a checkout of https://github.com/bshoshany/thread-pool)" >&2
    else
        for v in native tsan cprace; do
            case $v in
                native) cxx=(g++); extra=();;
                tsan) cxx=(g++); extra=(-fsanitize=thread);;
                cprace) cxx=("$BIN" cc g++); extra=();;
            esac
            "${cxx[@]}" -std=c++17 -O1 -g -pthread "${extra[@]}" -I "$POOL_SRC/include" \
                "$POOL_SRC/tests/BS_thread_pool_test.cpp" -o "$WORK/pool-$v"
        done
        bench_case "BS::thread_pool tests" "$WORK/pool-native" "$WORK/pool-tsan" \
            "$WORK/pool-cprace" stdout tests
    fi
fi

TABLE=$WORK/table
{
    echo "<!-- real:begin -->"
    echo "Generated by \`scripts/bench_real_programs.sh\` on $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg); single runs, \`/usr/bin/time\`; \"-\": stopped after ${LIMIT} s or failed."
    echo
    echo "| program | run | wall s | peak MiB | wall / TSan | memory / TSan |"
    echo "|---|---|---|---|---|---|"
    cat "$ROWS"
    echo "<!-- real:end -->"
} > "$TABLE"
cat "$TABLE"
[ -n "${OUT:-}" ] && python3 scripts/replace_section.py real "$TABLE" "$OUT" >/dev/null
exit 0
