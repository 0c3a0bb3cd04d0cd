#!/usr/bin/env bash
# Measures the tuner (`spec.tune`) against the full grid on the simulator: the same factor space
# (request slots x inter-token latency x time to first token, 36 treatments) walked whole, then
# searched by `tpe` and by `halving`. Prints each one's measurement time (the seconds its steps
# took, set-up excluded) and its answer, and whether the tuner's answer is the grid's best or not
# significantly worse than it (Welch's t-test on the grid's own replicates, 95 %). Loopback
# only; every run is bounded in requests.
#
#   scripts/bench-tune.sh
#
# Environment: YARDSTICK_BIN (default target/release/yardstick, built if missing), BUDGET
# (treatments a tuner may probe; default 16), REQUESTS (stop.maxRequests; default 120), KEEP (keep
# the work directory).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${YARDSTICK_BIN:-target/release/yardstick}
if [[ ! -x $BIN ]]; then
  cargo build --release -p yardstick >&2
fi
BIN=$(realpath "$BIN")
BUDGET=${BUDGET:-16}
REQUESTS=${REQUESTS:-120}
WORK=$(mktemp -d /tmp/bench-tune.XXXXXX)
cleanup() { if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi; }
trap cleanup EXIT

spec() { # $1: the tune line (empty for the grid)
  cat <<YAML
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: bench-tune}
spec:
  mode: exploratory
  workload: {model: m, precision: bf16, sequenceLengths: "D(32,16)", batching: continuous, concurrency: 8, dataset: {kind: synthetic, seed: 1}, correctness: {policy: none}}
  trials: {replicates: 3, warmup: {requests: 4}, confidenceLevel: 0.95, outlierPolicy: none}
  server:
    command: ["$BIN", sim, --port, "{port}", --max-running, "{slots}", --ttft-ms, "{ttft}", --itl-ms, "{itl}"]
    ready: {http: "http://127.0.0.1:{port}/health", timeout: 30s}
    stop: {grace: 5s}
  sweep:
    factors: {slots: [1, 2, 4, 8], itl: [1, 2, 4], ttft: [5, 20, 40]}
$1
  layers:
    component:
      - kind: serve
        target: {url: "http://127.0.0.1:{port}", api: chat, model: m}
        scenarios: ["D(32,16)"]
        load: {mode: concurrency, values: [8]}
        stop: {maxRequests: $REQUESTS}
YAML
}

echo "machine: $(nproc) cores, $(uname -sr); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
spec "" > "$WORK/grid.yaml"
spec "  tune: {maximize: request_throughput, budget: $BUDGET, strategy: tpe}" > "$WORK/tpe.yaml"
spec "  tune: {maximize: request_throughput, budget: $BUDGET, strategy: halving}" > "$WORK/halving.yaml"
for s in ${ONLY:-grid tpe halving}; do
  start=$SECONDS
  "$BIN" run --json -q "$WORK/$s.yaml" --store "$WORK/store" > "$WORK/$s.json"
  echo "$s: $((SECONDS - start)) s wall (set-up included)" >&2
done

python3 - "$WORK" "$BIN" <<'PY'
import glob, json, os, subprocess, sys
from datetime import datetime

work = sys.argv[1]

def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))

def step_seconds(run_dir):
    total = 0.0
    for f in glob.glob(os.path.join(run_dir, "results", "*", "r*.json")):
        r = json.load(open(f))
        total += (ts(r["ended_at"]) - ts(r["started_at"])).total_seconds()
    return total

def replicates(run_dir, treatment):
    out = []
    for f in glob.glob(os.path.join(run_dir, "results", "*", "r*.json")):
        r = json.load(open(f))
        if r["point"].endswith("/" + treatment):
            for m in r.get("figures", {}).get("measurements", []):
                if m["metric"] == "request_throughput" and m["statistic"] == "value":
                    out.append(m["value"])
    return out

def welch_p(a, b):
    # yardstick's own test (`yardstick stats compare`), on the two samples of replicates.
    fa, fb = os.path.join(work, "a.txt"), os.path.join(work, "b.txt")
    open(fa, "w").write("\n".join(map(str, a)) + "\n")
    open(fb, "w").write("\n".join(map(str, b)) + "\n")
    out = subprocess.run([sys.argv[2], "stats", "compare", fa, fb, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["welch_p"]

grid = json.load(open(os.path.join(work, "grid.json")))
grid_dir = grid["dir"]
grid_s = step_seconds(grid_dir)
best = max(
    (t for t in grid["summary"]["sweep"] if t["status"] == "measured"),
    key=lambda t: next(p for p in grid["summary"]["points"] if p["id"] == t["points"][0])["metrics"]["request_throughput"]["value"]["mean"],
)
best_vals = replicates(grid_dir, best["id"])
print(f"grid:    36 treatments x 3 replicates, {grid_s:6.1f} s measuring; best {best['id']} "
      f"{sum(best_vals)/len(best_vals):.1f} req/s")
for s in ["tpe", "halving"]:
    out = json.load(open(os.path.join(work, f"{s}.json")))
    t = out["tune"]
    spent = t["probe_seconds"] + t["final_seconds"]
    answer = t["best"]["treatment"]
    vals = replicates(grid_dir, answer)
    p = 1.0 if answer == best["id"] else welch_p(best_vals, vals)
    verdict = "the grid's best" if answer == best["id"] else (
        "not significantly worse than the grid's best" if p >= 0.05 else "WORSE than the grid's best")
    print(f"{s:8} {len(t['probes'])} probes + final run, {spent:6.1f} s measuring "
          f"({100 * spent / grid_s:4.1f} % of the grid); answer {answer} "
          f"({t['best']['objective']:.1f} req/s): {verdict} (p = {p:.3f})")
PY
