#!/bin/bash
# False-alarm rate (A/A) and detection rate (injected TTFT slowdown) of `yardstick gate` against
# `yardstick sim`. Usage: measure-aa.sh [WORKDIR]  (YARDSTICK=path/to/binary, default on PATH).
#
# Spec: one serving point D(16,8) at concurrency 2, realism mode; every run is gated against one
# fixed baseline run at --ttft-ms 40. Settings (environment):
#   TOL=5        latencyIncreasePct of the spec (the gate's tolerance for TTFT/TPOT/E2E p50)
#   REPS=3       trials.replicates
#   REQS=12      measured requests per replicate
#   CAL=0        A/A runs recorded with `gate --calibrate` first (noise floors need 5)
#   AA=20 SLOW=10 MID=10   runs of each kind; SLOW is --ttft-ms 44 (+10 %), MID --ttft-ms 42 (+5 %)
set -euo pipefail
Y=${YARDSTICK:-yardstick}
W=${1:-$(mktemp -d)}
TOL=${TOL:-5} REPS=${REPS:-3} REQS=${REQS:-12} CAL=${CAL:-0}
AA=${AA:-20} SLOW=${SLOW:-10} MID=${MID:-10}
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
  trials: {replicates: $REPS, warmup: {requests: 2}, confidenceLevel: 0.95,
           outlierPolicy: report-tukey, order: interleaved}
  layers:
    component:
      - kind: serve
        target: {url: "$1", api: chat, model: sim-llama}
        scenarios: ["D(16,8)"]
        load: {mode: concurrency, values: [2]}
        stop: {maxRequests: $REQS, maxDuration: 30s}
  gates:
    tolerances: {latencyIncreasePct: $TOL}
  provenance: {signing: off}
YAML
}
for t in 40 42 44; do spec "$(start_sim $t)" > "s$t.yaml"; done
run() { "$Y" run "$1" --store st -q --json > /dev/null 2>&1; ls st/runs | sort | tail -1; }
verdict() { "$Y" gate "$1" --baseline "$BASE" --store st --json \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdict"], " ".join(m["metric"]+"/"+m["statistic"]+"="+m["verdict"] for m in d["metrics"] if m["verdict"]!="PASS"))' || true; }
echo "settings: TOL=$TOL REPS=$REPS REQS=$REQS CAL=$CAL; load: $(cut -d' ' -f1-3 /proc/loadavg)"
BASE=$(run s40.yaml)
for i in $(seq "$CAL"); do
  "$Y" gate "$(run s40.yaml)" --baseline "$BASE" --store st --calibrate -q > cal.txt 2>&1 || true
done
[ "$CAL" -gt 0 ] && cat cal.txt
for i in $(seq "$AA"); do echo "A/A $(verdict "$(run s40.yaml)")"; done
for i in $(seq "$SLOW"); do echo "TTFT+10% $(verdict "$(run s44.yaml)")"; done
for i in $(seq "$MID"); do echo "TTFT+5% $(verdict "$(run s42.yaml)")"; done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
