#!/usr/bin/env bash
# The oracle property tests of tests/it/soundness.rs on thousands of generated
# traces: every first race of HB, CP (exact, windows, --first-race) and WCP is
# a predictable race or the trace has a predictable deadlock, every
# --order-races report too, HB races with a clean HB past are predictable, and
# the laws of docs/src/semantic-decisions.md "Semantic decisions" hold. CI runs a few hundred traces
# (plus 2,500 volatile-heavy ones); this runs the ignored 5,000-trace test too.
#
#   scripts/soundness.sh            # release build, every soundness test
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test it soundness:: -- --include-ignored --nocapture "$@"
