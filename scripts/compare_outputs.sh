#!/usr/bin/env bash
# Runs every subcommand and output format of two cprace binaries on the traces
# in data/ and diffs what they print (stdout, stderr, exit code) and the files
# they write. Wall-clock times and peak memory are masked; everything else
# must be byte-identical.
#
# Usage: scripts/compare_outputs.sh OLD_CPRACE NEW_CPRACE
# Exit 0 when every output matches, 1 otherwise (the differences are listed).
set -uo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Times, durations and heap sizes differ from run to run.
mask() {
    sed -E \
        -e 's/"(seconds|total|inputs|fixpoint|load|analysis|peak_bytes)": [0-9.e+-]+/"\1": T/g' \
        -e 's/[0-9]+(\.[0-9]+)? ?(ms|s|B|KiB|MiB|GiB)\b/T/g' \
        -e 's/(seconds|total|inputs|fixpoint),? [0-9.e+-]+/\1 T/g' \
        -e 's/^(([^,]*,){9})[0-9.e+-]+,[0-9]*,/\1T,T,/'
}

n=0
failed=0
# run NAME MASK ARGS...: run both binaries in their own directory, compare.
run() {
    local name=$1 masked=$2
    shift 2
    n=$((n + 1))
    for side in old new; do
        local bin=$old
        [ "$side" = new ] && bin=$new
        local d="$work/$side/$n"
        mkdir -p "$d/files"
        (cd "$d/files" && "$bin" "$@" >"$d/stdout" 2>"$d/stderr" </dev/null; echo $? >"$d/code")
        # Paths of this run's directory appear in messages.
        sed -i "s#$d/files#DIR#g" "$d/stdout" "$d/stderr"
        if [ "$masked" = mask ]; then
            for f in "$d/stdout" "$d/stderr"; do mask <"$f" >"$f.m" && mv "$f.m" "$f"; done
        fi
    done
    if ! diff -r "$work/old/$n" "$work/new/$n" >"$work/diff" 2>&1; then
        failed=$((failed + 1))
        echo "DIFFERS: $name: cprace $*"
        head -20 "$work/diff"
    fi
}

root=$(pwd)
traces=("$root"/data/figures/*.csv "$root"/data/formats/example.* "$root"/data/volatile/*.std)

for t in "${traces[@]}"; do
    b=$(basename "$t")
    for f in text json; do run "stats $b $f" plain stats "$t" --format "$f"; done
    for to in csv std; do run "convert $b $to" plain convert "$t" --to "$to"; done
    run "convert $b rapid" plain convert "$t" --to std --rapid -o out.std
    run "convert $b rapidbin" plain convert "$t" --to rapidbin -o out.bin
    for rel in po hb lockset cp wcp shb syncp; do
        engines=$("$old" analyze "$t" --relation "$rel" --engine '?' 2>&1 | sed -n 's/.*expected one of: //p' | tr -d ,)
        for e in $engines; do
            for f in text json jsonl csv sarif summary; do
                run "analyze $b $rel/$e $f" mask analyze "$t" --relation "$rel" --engine "$e" --format "$f"
            done
            run "analyze $b $rel/$e --all window" mask analyze "$t" --relation "$rel" --engine "$e" --all --window 4
        done
        run "analyze $b $rel witness" mask analyze "$t" --relation "$rel" --witness --format json --witness-out w
        "$old" analyze "$t" --relation "$rel" --witness --format json >"$work/w.json" 2>/dev/null
        run "verify $b $rel" plain verify "$t" --witness "$work/w.json"
    done
    run "analyze $b cp first" mask analyze "$t" --relation cp --first-race
    run "analyze $b cp order" mask analyze "$t" --relation cp --order-races --window none
    run "analyze $b tc" mask analyze "$t" --relation hb --engine tc --max-distance 3
    run "analyze $b HB" mask analyze "$t" --relation HB --window 3 --max-distance 2
    run "analyze $b lenient" mask --lenient analyze "$t" --relation cp --max-reports 1
    for rel in hb cp wcp shb syncp; do
        for f in csv json; do run "query $b $rel $f" plain query "$t" --relation "$rel" --format "$f"; done
        for p in 0,1 0,5 1,7 2,9; do
            for f in text json; do run "query $b $rel $p $f" plain query "$t" --relation "$rel" --pair "$p" --format "$f"; done
        done
    done
    run "query $b window" plain query "$t" --relation cp --window 3
    for f in csv json; do run "query $b facts $f" plain query "$t" --facts --format "$f"; done
    run "query $b facts-dir" plain query "$t" --facts-dir facts
    for f in text json csv; do run "sweep $b $f" mask sweep "$t" --windows 1,3,10,none --format "$f"; done
    run "sweep $b auto" mask sweep "$t" --windows auto
done

for p in small ftpserver long-cs many-threads threads-256 bench arrays; do
    for f in csv std; do run "gen $p $f" plain gen --profile "$p" -n 300 --seed 3 --format "$f"; done
    run "gen $p rapidbin" plain gen --profile "$p" -n 300 --volatiles 0 --format rapidbin -o g.bin
done
run "gen knobs" plain gen -n 2k --threads 5 --locks 2 --vars 3 --nesting 2 --cs-length 4 --locked-share 0.5 \
    --write-share 0.4 --fork-join false --reentrant 0.1 --out-of-nesting 0.2 --locations 3 --hot 0.3
for sh in bash zsh fish elvish powershell; do run "completions $sh" plain completions "$sh"; done
run "man" plain man
run "help" plain --help
run "version" plain --version
for c in stats convert analyze verify gen sweep query completions man cc record; do
    run "help $c" plain "$c" --help
done

# Usage and input errors: message and exit code.
ex="$root/data/formats/example.csv"
run "err engine" plain analyze "$ex" --relation hb --engine nope
run "err reporting" plain analyze "$ex" --relation hb --first-race
run "err window alias" plain analyze "$ex" --relation hb --window 3 --max-distance 3
run "err wcp ref" plain analyze "$ex" --relation wcp --engine reference --window 0
run "err missing" plain analyze missing.csv --relation hb
run "err plot" plain sweep "$ex" --plot x.gif
run "err query pair" plain query "$ex" --relation cp --pair 0,99
run "err query csv pair" plain query "$ex" --relation cp --pair 0,1 --format csv
run "err query text" plain query "$ex" --relation cp --format text
run "err query syncp" plain query "$ex" --relation syncp
run "err convert rapid" plain convert "$ex" --to csv --rapid -o x
run "err convert rapidbin" plain convert "$ex" --to rapidbin
run "err gen threads" plain gen --threads 0
run "err gen profile" plain gen --profile nope
run "err gen rapidbin" plain gen --format rapidbin -n 10
run "err verify" plain verify "$ex" --witness "$ex"
run "err record" plain record -o t.std --from-events nowhere

echo "$n comparisons, $failed differ"
[ "$failed" = 0 ]
