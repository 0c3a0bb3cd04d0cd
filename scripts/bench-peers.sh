#!/usr/bin/env bash
# yardstick, genai-bench and aiperf side by side against `yardstick sim` (TTFT 50 ms, ITL 10 ms,
# 100 output tokens) at one concurrency, on this machine, one after the other, each against a
# fresh simulator with a ground-truth log. For each tool: what it reports (req/s, TTFT mean and
# p99) next to what the server saw (req/s over its busy window, TTFT from received to first
# token written), the tool's CPU seconds and peak RSS (largest single process; /usr/bin/time).
# Loopback only; every run is bounded in requests and time.
#
#   scripts/bench-peers.sh                        # concurrency 256
#   CONCURRENCY=64 REQUESTS=1000 scripts/bench-peers.sh
#
# The peers live in scratch virtualenvs outside the repo, made once with:
#   python3 -m venv $PEERS/aiperf-venv && $PEERS/aiperf-venv/bin/pip install aiperf
#   python3 -m venv $PEERS/genai-venv  && $PEERS/genai-venv/bin/pip install genai-bench
# (PEERS defaults to /var/tmp/yardstick-peers). A tool whose venv is missing is skipped, saying
# so. Both peers need a Hugging Face tokenizer directory: TOKDIR (default $PEERS/tokdir) with a
# tokenizer.json (scripts/fetch-test-tokenizer.sh fetches one) and a tokenizer_config.json;
# it is made here when missing.
#
# Environment: YARDSTICK_BIN (default target/release/yardstick, built if missing), CONCURRENCY
# (256), REQUESTS (8 x concurrency), TOOLS ("yardstick genai-bench aiperf"), KEEP (keep the
# work directory).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${YARDSTICK_BIN:-target/release/yardstick}
if [[ ! -x $BIN ]]; then
  cargo build --release -p yardstick >&2
fi
PEERS=${PEERS:-/var/tmp/yardstick-peers}
TOKDIR=${TOKDIR:-$PEERS/tokdir}
C=${CONCURRENCY:-256}
N=${REQUESTS:-$((C * 8))}
TOOLS=${TOOLS:-"yardstick genai-bench aiperf"}
TTFT_MS=50 ITL_MS=10 OUT=100
WORK=$(mktemp -d /tmp/bench-peers.XXXXXX)
SIM_PID=
cleanup() {
  if [[ -n $SIM_PID ]]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
  if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

if [[ ! -f $TOKDIR/tokenizer.json ]]; then
  if [[ -f /var/tmp/yardstick-tokenizers/tokenizer.json ]] || scripts/fetch-test-tokenizer.sh >&2; then
    mkdir -p "$TOKDIR" && cp /var/tmp/yardstick-tokenizers/tokenizer.json "$TOKDIR/"
  fi
fi
if [[ -f $TOKDIR/tokenizer.json && ! -f $TOKDIR/tokenizer_config.json ]]; then
  echo '{"tokenizer_class":"PreTrainedTokenizerFast","model_max_length":100000,"eos_token":"<EOT>"}' \
    >"$TOKDIR/tokenizer_config.json"
fi

echo "machine: $(nproc) cores, $(uname -sr); sim TTFT ${TTFT_MS} ms, ITL ${ITL_MS} ms, ${OUT} output tokens; concurrency $C, $N requests"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %9s %9s %7s %11s %11s %11s %11s %8s %8s %7s %6s\n' \
  tool "rep_req/s" "srv_req/s" ideal "rep_ttft_mu" "rep_ttft_99" "srv_ttft_mu" "srv_ttft_99" "cpu_s" "rss_MB" "wall_s" "load1"

start_sim() {
  "$BIN" sim --port 0 --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS" --max-tokens "$OUT" \
    --log "$WORK/sim-$1.jsonl" >"$WORK/sim-$1.out" 2>"$WORK/sim-$1.err" &
  SIM_PID=$!
  for _ in $(seq 100); do [[ -s $WORK/sim-$1.out ]] && break; sleep 0.05; done
  URL=$(head -1 "$WORK/sim-$1.out" | sed 's/^listening on //')
}

for T in $TOOLS; do
  case $T in
    genai-bench) [[ -x $PEERS/genai-venv/bin/genai-bench && -f $TOKDIR/tokenizer.json ]] || { echo "$T: SKIPPED (no $PEERS/genai-venv or tokenizer)"; continue; } ;;
    aiperf) [[ -x $PEERS/aiperf-venv/bin/aiperf && -f $TOKDIR/tokenizer.json ]] || { echo "$T: SKIPPED (no $PEERS/aiperf-venv or tokenizer)"; continue; } ;;
  esac
  start_sim "$T"
  LOAD1=$(cut -d' ' -f1 /proc/loadavg)
  T0=$(date +%s.%N)
  case $T in
    yardstick)
      /usr/bin/time -v -o "$WORK/time-$T.txt" "$BIN" --quiet --json bench serve --url "$URL" \
        --model sim --scenario "D(100,$OUT)" --concurrency "$C" --warmup-requests "$C" \
        --max-requests "$N" --max-duration 120s >"$WORK/report-$T.json" 2>"$WORK/err-$T.txt" ;;
    genai-bench)
      # (genai-bench writes genai_bench.log into its working directory: run it in $WORK.)
      (cd "$WORK" && /usr/bin/time -v -o "$WORK/time-$T.txt" "$PEERS/genai-venv/bin/genai-bench" benchmark \
        --api-backend openai --api-base "$URL" --api-key dummy --task text-to-text \
        --api-model-name sim --model-tokenizer "$TOKDIR" --num-concurrency "$C" \
        --traffic-scenario "D(100,$OUT)" --max-requests-per-run "$N" --max-time-per-run 3 \
        --server-engine vLLM --server-gpu-type H100 --server-gpu-count 1 \
        --experiment-base-dir "$WORK/genai" --log-dir "$WORK/genai-logs" >"$WORK/log-$T.txt" 2>&1) \
        || echo "$T failed (see log)" >&2
      python3 - "$WORK" <<'PY'
import glob, json, sys
w = sys.argv[1]
f = [p for p in glob.glob(f"{w}/genai/*/D*_*.json") if "metadata" not in p][0]
a = json.load(open(f))["aggregated_metrics"]
t = a["stats"]["ttft"]
json.dump({"rps": a["requests_per_second"], "ttft_mean": t["mean"] * 1e3, "ttft_p99": t["p99"] * 1e3},
          open(f"{w}/report-genai-bench.json", "w"))
PY
      ;;
    aiperf)
      /usr/bin/time -v -o "$WORK/time-$T.txt" "$PEERS/aiperf-venv/bin/aiperf" profile --model sim \
        --url "$URL" --endpoint-type chat --streaming --concurrency "$C" --request-count "$N" \
        --warmup-request-count "$C" --tokenizer "$TOKDIR" --prompt-input-tokens-mean 100 \
        --output-tokens-mean "$OUT" --extra-inputs ignore_eos:true --ui-type none \
        --no-gpu-telemetry --artifact-dir "$WORK/aiperf" >"$WORK/log-$T.txt" 2>&1 || echo "$T failed (see log)" >&2
      python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
d = json.load(open(f"{w}/aiperf/profile_export_aiperf.json"))
t = d["time_to_first_token"]
json.dump({"rps": d["request_throughput"]["avg"], "ttft_mean": t["avg"], "ttft_p99": t["p99"]},
          open(f"{w}/report-aiperf.json", "w"))
PY
      ;;
  esac
  WALL=$(echo "$(date +%s.%N) - $T0" | bc)
  sleep 0.5 # let the simulator's log writer drain
  kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
  python3 - "$T" "$WORK" "$C" "$TTFT_MS" "$ITL_MS" "$OUT" "$WALL" "$LOAD1" <<'PY'
import json, sys
tool, w, c = sys.argv[1], sys.argv[2], int(sys.argv[3])
ttft, itl, out, wall, load1 = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]), sys.argv[8]
rep = json.load(open(f"{w}/report-{tool}.json"))
if tool == "yardstick":
    p = rep["points"][0]
    rep = {"rps": p["request_throughput"], "ttft_mean": p["ttft_ms"]["mean"], "ttft_p99": p["ttft_ms"]["p99"]}
ok = [json.loads(l) for l in open(f"{w}/sim-{tool}.jsonl")]
ok = [r for r in ok if r["outcome"] == "ok" and r["first_token_ns"]]
srv = sorted((r["first_token_ns"] - r["received_ns"]) / 1e6 for r in ok)
def pct(xs, q):
    h = (len(xs) - 1) * q; lo = int(h); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])
# The server's achieved rate: requests served / (first received -> last token written),
# everything the tool sent (its warm-up included).
srv_rps = len(ok) / ((max(r["last_token_ns"] for r in ok) - min(r["received_ns"] for r in ok)) / 1e9)
t = {}
for line in open(f"{w}/time-{tool}.txt"):
    k, _, v = line.strip().rpartition(": ")
    t[k] = v
cpu = float(t["User time (seconds)"]) + float(t["System time (seconds)"])
rss = int(t["Maximum resident set size (kbytes)"]) / 1024
ideal = c / ((ttft + (out - 1) * itl) / 1e3)
print(f"{tool:<12} {rep['rps']:9.1f} {srv_rps:9.1f} {ideal:7.1f} {rep['ttft_mean']:11.2f} {rep['ttft_p99']:11.2f} "
      f"{sum(srv) / len(srv):11.2f} {pct(srv, 0.99):11.2f} {cpu:8.2f} {rss:8.1f} {wall:7.1f} {load1:>6}")
PY
done
echo "rep = what the tool reports; srv = the simulator's log (req/s = served / first received -> last token written; TTFT = received -> first token written)"
echo "cpu_s and rss_MB: the tool's processes (/usr/bin/time: CPU of the tool and its waited-for children, RSS of the largest process)"
