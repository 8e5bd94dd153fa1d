#!/usr/bin/env bash
# Build every program of tests/programs/ with ThreadSanitizer, run it, and
# compare TSan's verdict, the way the program ended and the lines TSan blames
# with tests/programs/MANIFEST.tsv. Prints one row per program, compiler and
# optimization level; exits 1 on any mismatch.
#
#   scripts/tsan_suite.sh [--cc gcc|clang|all] [--opt -O1[,-O0,-O2]] [--runs N]
#                         [--only REGEX] [--build DIR] [--keep-logs] [-v]
#
# --cc all (the default) uses gcc and, when it can build and run a TSan
# program, clang. Each program is built once per compiler and level and run
# --runs times; every run must match.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
progs="$here/tests/programs"
manifest=${TSAN_SUITE_MANIFEST:-$progs/MANIFEST.tsv}
ccs=all
opts=-O1
runs=1
only=.
build=
keep=0
verbose=0
hang_timeout=${TSAN_SUITE_HANG_TIMEOUT:-3}
run_timeout=${TSAN_SUITE_RUN_TIMEOUT:-10}

while [ $# -gt 0 ]; do
    case "$1" in
        --cc) ccs=$2; shift 2 ;;
        --opt) opts=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        --keep-logs) keep=1; shift ;;
        -v) verbose=1; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "tsan_suite: unknown argument $1" >&2; exit 2 ;;
    esac
done

if [ -z "$build" ]; then
    build=$(mktemp -d /tmp/tsan_suite.XXXXXX)
    [ "$keep" = 1 ] || trap 'rm -rf "$build"' EXIT
fi
mkdir -p "$build"

# Does COMPILER build and run a trivial TSan program?
tsan_works() {
    command -v "$1" >/dev/null 2>&1 || return 1
    printf 'int main(void){return 0;}\n' >"$build/probe.c"
    "$1" -fsanitize=thread -g "$build/probe.c" -o "$build/probe.$1" >/dev/null 2>&1 &&
        "$build/probe.$1" >/dev/null 2>&1
}

compilers=()
case "$ccs" in
    all)
        compilers=(gcc)
        if tsan_works clang; then compilers+=(clang)
        else echo "note: clang with a working TSan runtime not found; gcc only" >&2; fi ;;
    gcc|clang) compilers=("$ccs") ;;
    *) echo "tsan_suite: --cc must be gcc, clang or all" >&2; exit 2 ;;
esac
IFS=, read -r -a levels <<<"$opts"

# Classify TSan's stderr: the sorted set of report kinds, '+'-joined, or clean.
# A data race, a race on a vptr and a heap-use-after-free (a race whose free
# came first) are all "race".
verdict_of() {
    awk '
        /WARNING: ThreadSanitizer: / {
            s = $0; sub(/.*WARNING: ThreadSanitizer: /, "", s); sub(/ \(pid=.*/, "", s)
            if (s ~ /^data race/ || s ~ /^heap-use-after-free/) k = "race"
            else if (s ~ /^lock-order-inversion/) k = "lock-order-inversion"
            else if (s ~ /^destroy of a locked mutex/) k = "destroy-locked-mutex"
            else if (s ~ /^use of an invalid mutex/) k = "invalid-mutex"
            else if (s ~ /^unlock of an unlocked mutex/) k = "bad-unlock"
            else if (s ~ /^thread leak/) k = "thread-leak"
            else if (s ~ /^signal-unsafe call/) k = "signal-unsafe"
            else if (s ~ /^double lock/) k = "double-lock"
            else { k = tolower(s); gsub(/[^a-z0-9]+/, "-", k) }
            seen[k] = 1
        }
        /ERROR: ThreadSanitizer: SEGV/ { seen["segv"] = 1 }
        /ERROR: ThreadSanitizer: [A-Z]/ && !/SEGV/ { seen["deadly-signal"] = 1 }
        /FATAL: ThreadSanitizer/ { seen["fatal"] = 1 }
        END {
            n = 0
            for (k in seen) keys[++n] = k
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (keys[j] < keys[i]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
            out = ""
            for (i = 1; i <= n; i++) out = out (i > 1 ? "+" : "") keys[i]
            print (n ? out : "clean")
        }' "$1"
}

# Lines TSan blames that carry no marker: for each access of a race report
# (and each acquisition of a lock-order-inversion), the first stack frame in
# the program's own file must be on a line marked // RACE (// DEADLOCK).
unmarked_lines() {
    local log=$1 src=$2
    awk -v src="$src" '
        FNR == NR { line[FNR] = $0; next }
        /WARNING: ThreadSanitizer: / {
            kind = ($0 ~ /data race|heap-use-after-free/) ? "RACE" : ($0 ~ /lock-order-inversion/) ? "DEADLOCK" : ""
            want = 0; next
        }
        kind == "RACE" && /^  (Previous )?(Atomic )?([Rr]ead|[Ww]rite) of size/ { want = 1; next }
        kind == "DEADLOCK" && /^  Mutex M[0-9]+ (acquired here|previously acquired)/ { want = 1; next }
        want && /^ *#[0-9]+ / && !/<null>/ { symbolized = 1 }
        want && /^ *#[0-9]+ / {
            i = index($0, src ":")
            if (i) {
                rest = substr($0, i + length(src) + 1); sub(/[^0-9].*/, "", rest)
                if (line[rest + 0] !~ ("// " kind)) bad[rest] = 1
                want = 0; symbolized = 0
            }
            next
        }
        want && /^$/ { if (symbolized) bad["?"] = 1; want = 0; symbolized = 0 }
        END { for (l in bad) printf "%s ", l }' "$src" "$log"
}

# Does the exit status RC agree with the run mode MODE?
mode_ok() {
    local mode=$1 rc=$2 log=$3
    case "$mode" in
        *) [ "$rc" = timeout ] && return 0 ;;&  # already part of the verdict
        normal) [ "$rc" = 0 ] || [ "$rc" = 66 ] ;;
        exits-nonzero) [ "$rc" != 0 ] && [ "$rc" -lt 124 ] ;;
        crashes) [ "$rc" -gt 128 ] || { [ "$rc" = 66 ] && grep -q 'DEADLYSIGNAL' "$log"; } ;;
        hangs) [ "$rc" = 124 ] || [ "$rc" = 137 ] ;;
        *) return 1 ;;
    esac
}

fail=0
total=0
printf '%-36s %-6s %-4s %-22s %-26s %s\n' program cc opt expected observed result
while IFS=$'\t' read -r file lang hb cp tsan flags mode desc; do
    case "$file" in ''|'#'*|file) continue ;; esac
    [[ "$file" =~ $only ]] || continue
    src="$progs/$file"
    [ "$flags" = "-" ] && flags=
    for cc in "${compilers[@]}"; do
        # C++17 for std::shared_mutex and std::scoped_lock (clang 14
        # defaults to C++14; gcc 12 already uses C++17).
        if [ "$lang" = c++ ]; then
            comp="$([ "$cc" = gcc ] && echo g++ || echo clang++) -std=gnu++17"
        else
            comp=$cc
        fi
        for opt in "${levels[@]}"; do
            total=$((total + 1))
            bin="$build/$cc$opt/${file%.*}"
            mkdir -p "$(dirname "$bin")"
            # shellcheck disable=SC2086
            if ! $comp -fsanitize=thread $opt -g -pthread "$src" $flags -o "$bin" 2>"$bin.build.log"; then
                printf '%-36s %-6s %-4s %-22s %-26s %s\n' "$file" "$cc" "$opt" "$tsan" "build-failed" FAIL
                [ "$verbose" = 1 ] && cat "$bin.build.log"
                fail=$((fail + 1)); continue
            fi
            declare -A counts=()
            problems=
            for ((r = 1; r <= runs; r++)); do
                log="$bin.run$r.log"
                limit=$run_timeout
                [ "$mode" = hangs ] && limit=$hang_timeout
                # In a subshell whose stderr is discarded, so that the shell's
                # "Aborted" / "Terminated" notes stay out of the table.
                rc=$( (timeout -k 2 "$limit" "$bin" >/dev/null 2>"$log" </dev/null; echo $?) 2>/dev/null)
                v=$(verdict_of "$log")
                # A program that should end but had to be stopped: say so in
                # the verdict (TSan hangs some programs that end natively).
                if [ "$mode" != hangs ] && { [ "$rc" = 124 ] || [ "$rc" = 137 ]; }; then
                    v="$v+timeout"; rc=timeout
                fi
                counts[$v]=$(( ${counts[$v]:-0} + 1 ))
                if ! mode_ok "$mode" "$rc" "$log"; then problems+=" exit=$rc"; fi
                um=
                [ "$hb" = race ] && um=$(unmarked_lines "$log" "$src")
                [ -n "$um" ] && problems+=" unmarked:$um"
                if [ "$v" != "$tsan" ] && [ "$verbose" = 1 ]; then
                    echo "---- $file ($cc $opt run $r): $v" >&2; cat "$log" >&2
                fi
            done
            observed=
            for v in "${!counts[@]}"; do observed+="${observed:+,}$v"; [ "$runs" -gt 1 ] && observed+="x${counts[$v]}"; done
            result=ok
            if [ "${#counts[@]}" != 1 ] || [ -z "${counts[$tsan]:-}" ] || [ -n "$problems" ]; then
                result="FAIL$problems"; fail=$((fail + 1))
            fi
            printf '%-36s %-6s %-4s %-22s %-26s %s\n' "$file" "$cc" "$opt" "$tsan" "$observed" "$result"
            unset counts
        done
    done
done <"$manifest"

echo "$((total - fail)) of $total program builds matched the manifest (runs per program: $runs; compilers: ${compilers[*]}; levels: ${levels[*]})"
[ "$fail" = 0 ]
