#!/usr/bin/env bash
# Stream N generated events (default 1G) from `cprace gen` straight into
# `cprace analyze -` (never stored) for HB epoch, WCP and CP at K = 1000, one
# run at a time; print wall seconds, events/s and the analyzer's peak RSS.
#
#   scripts/bench_stream.sh            # 1 billion events (minutes per run)
#   scripts/bench_stream.sh 100M       # a shorter check
#   RUNS="cp" scripts/bench_stream.sh 60M   # only some of hb, wcp, cp
#   BIN=/path/to/cprace scripts/bench_stream.sh
#   FORMAT=rapidbin scripts/bench_stream.sh 100M   # binary through the pipe
#       (RapidBin has no volatiles: the bench profile with --volatiles 0,
#       another trace than the STD runs')
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1G}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/cprace
fi
events=$(awk -v n="$n" 'BEGIN { m = 1; if (n ~ /k$/) m = 1e3; if (n ~ /M$/) m = 1e6; if (n ~ /G$/) m = 1e9; sub(/[kMG]$/, "", n); printf "%d", n * m }')
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "| relation | engine | events | wall s | events/s | analyzer peak RSS MB | racy events |"
echo "|---|---|---|---|---|---|---|"
for run in ${RUNS:-hb wcp cp}; do
  case $run in
    hb) set -- hb epoch ;;
    wcp) set -- wcp vc ;;
    cp) set -- cp datalog --window 1000 ;;
    *) echo "unknown run $run (hb, wcp, cp)" >&2; exit 2 ;;
  esac
  start=$(date +%s.%N)
  if [ "${FORMAT:-std}" = rapidbin ]; then
    gen_args=(--volatiles 0 --format rapidbin)
  else
    gen_args=(--format "${FORMAT:-std}")
  fi
  racy=$("$BIN" gen --profile bench -n "$n" --seed 1 "${gen_args[@]}" \
    | /usr/bin/time -f "%M" -o "$tmp" "$BIN" analyze - --relation "$1" --engine "$2" "${@:3}" --format summary \
    | sed -n 's/^SUMMARY: \([0-9]*\) racy events.*/\1/p') || true
  end=$(date +%s.%N)
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  eps=$(awk -v e="$events" -v w="$wall" 'BEGIN { printf "%.2fM", e / w / 1e6 }')
  rss=$(($(tail -n 1 "$tmp") / 1024))
  echo "| $1 | $2 | $events | $wall | $eps | $rss | ${racy:--} |"
done
