#!/usr/bin/env bash
# Valid but extreme STD traces for the memory checks of BENCHMARKS.md
# ("Extreme traces"): every engine must stay under 1 GB on them.
#
#   scripts/extreme_traces.sh chain N      # N threads passing one lock along:
#                                          # each acquires L, writes x, releases L
#   scripts/extreme_traces.sh held N K     # N threads, each acquires K locks of
#                                          # its own and never releases them, writing x
#   scripts/extreme_traces.sh nested D     # one thread nests D locks, writes x
#                                          # inside, releases them; a second
#                                          # thread writes x under the innermost
#
# The trace goes to stdout.
set -euo pipefail
case "${1:-}" in
  chain)
    awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) {
      printf "T%d|acq(L)|1\nT%d|w(x)|2\nT%d|rel(L)|3\n", i, i, i } }' ;;
  held)
    awk -v n="$2" -v k="$3" 'BEGIN { for (i = 0; i < n; i++) {
      for (j = 0; j < k; j++) printf "T%d|acq(L%d_%d)|1\n", i, i, j
      printf "T%d|w(x)|2\n", i } }' ;;
  nested)
    awk -v d="$2" 'BEGIN {
      for (j = 0; j < d; j++) printf "T0|acq(L%d)|1\n", j
      printf "T0|w(x)|2\n"
      for (j = d - 1; j >= 0; j--) printf "T0|rel(L%d)|3\n", j
      printf "T1|acq(L%d)|1\nT1|w(x)|2\nT1|rel(L%d)|3\n", d - 1, d - 1 }' ;;
  *) echo "usage: $0 chain N | held N K | nested D" >&2; exit 2 ;;
esac
