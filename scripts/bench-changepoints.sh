#!/usr/bin/env bash
# The change-point detector's error rates on simulated histories: false alarms on A/A histories
# of 30 runs (the share that flag any change), and the share of histories with a step of 1.5
# standard deviations where a change is flagged, at the right run, and within one run.
#
#   scripts/bench-changepoints.sh
#   HISTORIES=1000 STEP=2.6 scripts/bench-changepoints.sh
#
# Environment: HISTORIES (200), RUNS (30), STEP (1.5 standard deviations), EXPONENT (the energy
# distance's exponent, 1), ALPHA (0.05).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p yardstick-stats --bench changepoint 2>/dev/null
