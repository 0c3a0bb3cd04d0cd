#!/bin/bash
# False-alarm rate (A/A) and detection rate (injected TTFT slowdown) of `yardstick gate` against
# `yardstick sim`. Usage: measure-aa.sh [WORKDIR]  (YARDSTICK=path/to/binary, default on PATH).
# Spec: one serving point D(16,8) at concurrency 2, 3 replicates x 12 measured requests,
# realism mode; every run is gated against one fixed baseline run at --ttft-ms 40.
set -euo pipefail
Y=${YARDSTICK:-yardstick}
W=${1:-$(mktemp -d)}
cd "$W"
: > pids
trap 'for p in $(cat pids); do kill "$p" 2>/dev/null || true; done' EXIT
start_sim() { # $1 = ttft ms; prints the URL
  "$Y" sim --port 0 --ttft-ms "$1" > "sim_$1.out" 2>/dev/null &
  echo $! >> pids
  for _ in $(seq 50); do grep -q listening "sim_$1.out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^listening on //p' "sim_$1.out" | head -1
}
spec() { cat <<YAML
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: gate-measure}
spec:
  mode: realism
  backgroundLoad: {record: true, description: "measurement machine"}
  workload: {model: sim-llama, precision: fp32, sequenceLengths: "D(16,8)", batching: continuous,
             concurrency: [2], dataset: {kind: synthetic, seed: 42}, correctness: {policy: none}}
  trials: {replicates: 3, warmup: {requests: 2}, confidenceLevel: 0.95,
           outlierPolicy: report-tukey, order: interleaved}
  layers:
    component:
      - kind: serve
        target: {url: "$1", api: chat, model: sim-llama}
        scenarios: ["D(16,8)"]
        load: {mode: concurrency, values: [2]}
        stop: {maxRequests: 12, maxDuration: 10s}
  provenance: {signing: off}
YAML
}
for t in 40 42 44; do spec "$(start_sim $t)" > "s$t.yaml"; done
run() { "$Y" run "$1" --store st -q --json > /dev/null 2>&1; ls st/runs | sort | tail -1; }
verdict() { "$Y" gate "$1" --baseline "$BASE" --store st --json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' || true; }
BASE=$(run s40.yaml)
for i in $(seq 20); do echo "A/A $(verdict "$(run s40.yaml)")"; done
for i in $(seq 10); do echo "TTFT+10% $(verdict "$(run s44.yaml)")"; done
for i in $(seq 10); do echo "TTFT+5% $(verdict "$(run s42.yaml)")"; done
