#!/usr/bin/env bash
# Figures for the data-loader layer: the built-in reader's throughput over a generated Parquet
# directory (and the same data as JSON Lines), cold and warm, with 1 and 2 workers. Prints a small
# report; no assertions.
#
#   scripts/bench-loader.sh [FILES] [ROWS]     # default 8 files of 50,000 rows (~110 MB Parquet)
#
# Needs jq. Builds the release binary and the data generator (CARGO_TARGET_DIR is honoured).
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=${1:-8}
ROWS=${2:-50000}
T=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p yardstick --bin yardstick
cargo build --release --locked -q -p yardstick-workloads --example gen_loader_data
Y=$T/release/yardstick
G=$T/release/examples/gen_loader_data
echo "binary: $Y   cores: $(nproc)   load: $(cut -d' ' -f1-3 /proc/loadavg)"
tmp=$(mktemp -d -p /var/tmp); trap 'rm -rf "$tmp"' EXIT

for format in parquet jsonl; do
  rows=$ROWS
  [ "$format" = jsonl ] && rows=$((ROWS / 5))
  "$G" "$tmp/$format" "$format" "$FILES" "$rows" | sed "s/^/$format: /"
  for workers in 1 2; do
    cat > "$tmp/spec-$format-$workers.yaml" <<YAML
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: bench-loader-$format-w$workers}
spec:
  mode: exploratory
  workload:
    model: none
    precision: fp32
    sequenceLengths: 128
    batching: static
    concurrency: 1
    dataset: {kind: synthetic, seed: 1}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {steps: 1}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  layers:
    component:
      - kind: dataloader
        source: {path: $format, format: $format, batch: 256, workers: $workers}
        cache: [cold, warm]
YAML
    "$Y" run --json -q "$tmp/spec-$format-$workers.yaml" --store "$tmp/store" > "$tmp/out.json"
    jq -r --arg f "$format" --arg w "$workers" '.summary.points[] |
      "\($f) workers=\($w) \(.id | split("/")[1]): " +
      "\(.metrics.loader_samples_per_s.value.mean | floor) samples/s " +
      "[\(.metrics.loader_samples_per_s.value.ci[0] | floor), \(.metrics.loader_samples_per_s.value.ci[1] | floor)], " +
      "\(.metrics.loader_mb_per_s.value.mean * 10 | floor / 10) MB/s, " +
      "first batch \(.metrics.loader_first_batch_s.value.mean * 1e4 | floor / 10) ms, " +
      "batch wait p99 \(.metrics.loader_batch_ms.p99.mean * 1e3 | floor / 1e3) ms"' "$tmp/out.json"
  done
done
