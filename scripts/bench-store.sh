#!/usr/bin/env bash
# Store performance: 1,000,000 fact rows ingested into the SQLite warehouse (one transaction per
# run, as `yardstick run` writes them), a trend query over 1,000 runs (p50 TTFT of one benchmark
# by day, through the read-only `query` path), 1,000,000 request records written as Parquet, and
# the Parquet export. Targets on a 2-core machine: ingest < 5 s, trend query < 100 ms.
#
# Usage: scripts/bench-store.sh [DIR] [RUNS]   (DIR is kept for inspection; default a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-$(mktemp -d)}"
runs="${2:-1000}"
cargo build --release --quiet -p yardstick-store --example bench_store
echo "machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
target="${CARGO_TARGET_DIR:-target}"
"$target/release/examples/bench_store" "$dir" "$runs"
echo "data left in $dir"
