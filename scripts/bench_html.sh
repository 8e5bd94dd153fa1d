#!/usr/bin/env bash
# The HTML report on the Java Grande traces: how long `analyze --format html`
# takes, how large the page is, and how long the page takes to draw in
# headless chromium (the page's own `data-ready-ms`: milliseconds from the
# start of navigation until its script has drawn the index and the first
# race; read from `chromium --headless --dump-dom`). Medians of RUNS runs
# (default 3). Needs Debian's chromium (`apt-get install -y chromium`).
#
#   scripts/bench_html.sh                     # lufact, wcp, with witnesses
#   TRACES="lufact moldyn" RELATION=hb scripts/bench_html.sh
#   JGF=/path/to/jgf BIN=/path/to/cprace RUNS=5 scripts/bench_html.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/cprace
fi
runs=${RUNS:-3}
relation=${RELATION:-wcp}
jgf=${JGF:-../shared/traces/jgf}
[ -d "$jgf" ] || jgf=/work/shared/traces/jgf
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "no $chromium: apt-get install -y chromium" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# draw PAGE: milliseconds until the page's script has drawn it
draw() {
  "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$tmp/profile" --dump-dom "file://$1" 2> /dev/null |
    sed -n 's/.*data-ready-ms="\([0-9]*\)".*/\1/p' | head -1
}

echo "| trace | relation | racy events | location pairs | analyze --format html s | page KB | drawn in ms |"
echo "|---|---|---|---|---|---|---|"
for name in ${TRACES:-lufact}; do
  xz -dkc "$jgf/jgf_$name.std.xz" > "$tmp/$name.std"
  walls=() draws=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e" -o "$tmp/time" "$BIN" analyze "$tmp/$name.std" --relation "$relation" \
      --witness --format html > "$tmp/$name.html" 2> /dev/null || true
    walls+=("$(tail -1 "$tmp/time")")  # after "Command exited with non-zero status 1"
    draws+=("$(draw "$tmp/$name.html")")
  done
  kb=$(( $(wc -c < "$tmp/$name.html") / 1024 ))
  "$BIN" analyze "$tmp/$name.std" --relation "$relation" --format summary > "$tmp/summary" 2> /dev/null || true
  counts=$(sed -n 's/^SUMMARY: \([0-9]*\) racy events\{0,1\}, [0-9]* racy variables\{0,1\}, \([0-9]*\) location pairs\{0,1\}.*/\1 | \2/p' "$tmp/summary")
  echo "| $name | $relation | $counts | $(median "${walls[@]}") | $kb | $(median "${draws[@]}") |"
done
