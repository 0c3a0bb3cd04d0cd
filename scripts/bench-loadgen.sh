#!/usr/bin/env bash
# Measures yardstick's own load generator against `yardstick sim` on this machine: achieved
# request rate vs the ideal, TTFT error vs the simulator's ground-truth log, client CPU seconds
# and peak RSS. Loopback only; every run is bounded in requests and time.
#
#   scripts/bench-loadgen.sh                 # concurrency 256 and 1024
#   CONCURRENCY="256" REQUESTS=3000 scripts/bench-loadgen.sh
#
# Environment: YARDSTICK_BIN (default target/release/yardstick, built if missing),
# CONCURRENCY (default "256 1024"), REQUESTS (measured requests per level; default 8 × level),
# TTFT_MS (50), ITL_MS (10), OUTPUT_TOKENS (100), KEEP (keep the work directory),
# WORKERS (the client's runtime threads, --workers; default: one per core),
# NICE (e.g. -10: run simulator and client at that niceness, to shield the measurement from
# other work on a shared machine; needs root; default: unchanged); NO_PEERS=1 skips the peers'
# side-by-side run (scripts/bench-peers.sh, at PEERS_CONCURRENCY, default 256) that follows when
# their venvs exist.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${YARDSTICK_BIN:-target/release/yardstick}
if [[ ! -x $BIN ]]; then
  cargo build --release -p yardstick >&2
fi
CONCURRENCY=${CONCURRENCY:-"256 1024"}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-10}
OUT=${OUTPUT_TOKENS:-100}
WORK=$(mktemp -d /tmp/bench-loadgen.XXXXXX)
RUN=()
if [[ -n ${NICE:-} ]]; then RUN=(nice -n "$NICE"); fi
SIM_PID=
cleanup() {
  if [[ -n $SIM_PID ]]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
  if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(uname -sr); sim TTFT ${TTFT_MS} ms, ITL ${ITL_MS} ms, ${OUT} output tokens"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure); niceness: ${NICE:-unchanged}"
printf '%-6s %9s %9s %7s %12s %12s %12s %12s %9s %9s %7s %9s\n' \
  conc "req/s" ideal "%ideal" "ttft_mean" "ttft_err_mu" "ttft_err_p99" "sim_ttft_mu" "cpu_s" "rss_MB" "dur_s" "sim_cpu_s"
for C in $CONCURRENCY; do
  N=${REQUESTS:-$((C * 8))}
  LOG=$WORK/sim-$C.jsonl
  "${RUN[@]}" "$BIN" sim --port 0 --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS" --max-tokens "$OUT" \
    --log "$LOG" >"$WORK/sim-$C.out" 2>"$WORK/sim-$C.err" &
  SIM_PID=$!
  for _ in $(seq 100); do [[ -s $WORK/sim-$C.out ]] && break; sleep 0.05; done
  URL=$(head -1 "$WORK/sim-$C.out" | sed 's/^listening on //')
  "${RUN[@]}" /usr/bin/time -v -o "$WORK/time-$C.txt" \
    "$BIN" --quiet --json bench serve --url "$URL" --model sim --scenario "D(100,$OUT)" \
      --concurrency "$C" ${WORKERS:+--workers "$WORKERS"} --warmup-requests "$C" --max-requests "$N" --max-duration 120s \
      --output "$WORK/out-$C" >"$WORK/summary-$C.json"
  sleep 0.3 # let the simulator's log writer drain
  # The simulator's own CPU time (utime + stime, in clock ticks) from /proc.
  SIM_CPU=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$SIM_PID/stat")
  kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
  python3 - "$C" "$TTFT_MS" "$ITL_MS" "$OUT" "$WORK" "$SIM_CPU" <<'PY'
import json, sys
c, ttft, itl, out, work = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
sim_cpu = float(sys.argv[6])
summary = json.load(open(f"{work}/summary-{c}.json"))["points"][0]
server = {}
for line in open(f"{work}/sim-{c}.jsonl"):
    r = json.loads(line)
    if r["outcome"] == "ok" and r["first_token_ns"]:
        server[r["request_id"]] = (r["first_token_ns"] - r["received_ns"]) / 1e6
errs, sim_ttft = [], []
for line in open(f"{work}/out-{c}/requests.jsonl"):
    r = json.loads(line)
    if r["warmup"] or r["error"] or r["ttft_ms"] is None or r["request_id"] not in server:
        continue
    errs.append(r["ttft_ms"] - server[r["request_id"]])
    sim_ttft.append(server[r["request_id"]])
def pct(xs, q):
    xs = sorted(xs); h = (len(xs) - 1) * q; lo = int(h); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])
mean = lambda xs: sum(xs) / len(xs)
t = {}
for line in open(f"{work}/time-{c}.txt"):
    k, _, v = line.strip().rpartition(": ")
    t[k] = v
cpu = float(t["User time (seconds)"]) + float(t["System time (seconds)"])
rss = int(t["Maximum resident set size (kbytes)"]) / 1024
ideal = c / ((ttft + (out - 1) * itl) / 1e3)
rps = summary["request_throughput"]
assert summary["requests"]["failed"] == 0, summary["requests"]
print(f"{c:<6d} {rps:9.1f} {ideal:9.1f} {100 * rps / ideal:6.1f}% {summary['ttft_ms']['mean']:12.2f} "
      f"{mean(errs):12.3f} {pct(errs, 0.99):12.3f} {mean(sim_ttft):12.2f} {cpu:9.2f} {rss:9.1f} "
      f"{summary['duration_s']:7.2f} {sim_cpu:9.2f}")
PY
done
echo "ttft_err = client TTFT (scheduled -> first content event) - sim TTFT (received -> first token written), per request joined by X-Request-Id"

# Peers side by side (genai-bench, aiperf), when their scratch venvs exist (see
# scripts/bench-peers.sh); NO_PEERS=1 skips them.
PEERS=${PEERS:-/var/tmp/yardstick-peers}
if [[ -z ${NO_PEERS:-} ]] && [[ -x $PEERS/aiperf-venv/bin/aiperf || -x $PEERS/genai-venv/bin/genai-bench ]]; then
  echo
  YARDSTICK_BIN=$BIN CONCURRENCY=${PEERS_CONCURRENCY:-256} scripts/bench-peers.sh
fi
