#!/usr/bin/env bash
# Issue 14's heavy acceptance check: SHB, syncp and every witness against the
# exhaustive correct-reordering oracle on 5000 more generated traces (the CI
# run covers 300).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test it provable:: -- --ignored --nocapture
