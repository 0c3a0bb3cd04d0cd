#!/usr/bin/env bash
# The capacity search (`bench serve --find-capacity`) against `yardstick sim`, whose capacity
# follows from its latency model: MAX_RUNNING slots, each held TTFT_MS + (OUT − 1) × ITL_MS per
# request, so a constant-rate open loop holds up to MAX_RUNNING / hold requests per second and
# queues without bound above it. Prints the probes, the answer, the derived value and the wall
# time, for a constant and a Poisson arrival process (Poisson queues before the derived rate,
# so its capacity under a tight TTFT bound is lower: the derived value is its ceiling).
# Loopback only; bounded by --max-probes and --max-probe-requests. Asserts nothing.
#
#   scripts/bench-capacity.sh
#   MAX_RUNNING=16 PRECISION=0.01 scripts/bench-capacity.sh
#
# Environment: YARDSTICK_BIN (default target/release/yardstick, built if missing), MAX_RUNNING
# (8), TTFT_MS (10), ITL_MS (5), OUT (8 output tokens), SLO_TTFT_MS (25), PERCENTILE (90),
# PRECISION (0.02), PROBE_REQUESTS (200), ARRIVALS ("constant poisson").
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${YARDSTICK_BIN:-${CARGO_TARGET_DIR:-target}/release/yardstick}
if [[ ! -x $BIN ]]; then
  cargo build --release --locked -q -p yardstick >&2
fi
MAX_RUNNING=${MAX_RUNNING:-8}
TTFT_MS=${TTFT_MS:-10}
ITL_MS=${ITL_MS:-5}
OUT=${OUT:-8}
SLO_TTFT_MS=${SLO_TTFT_MS:-25}
PERCENTILE=${PERCENTILE:-90}
PRECISION=${PRECISION:-0.02}
PROBE_REQUESTS=${PROBE_REQUESTS:-200}
ARRIVALS=${ARRIVALS:-"constant poisson"}
WORK=$(mktemp -d /tmp/bench-capacity.XXXXXX)
SIM_PID=
cleanup() {
  [[ -z $SIM_PID ]] || kill "$SIM_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN" sim --port 0 --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS" --max-running "$MAX_RUNNING" \
  > "$WORK/sim.out" 2> "$WORK/sim.err" &
SIM_PID=$!
URL=
for _ in $(seq 1 100); do
  URL=$(sed -n 's/^listening on //p' "$WORK/sim.out")
  [[ -n $URL ]] && break
  sleep 0.1
done
[[ -n $URL ]] || { echo "the simulator did not start: $(cat "$WORK/sim.err")" >&2; exit 1; }

derived=$(awk -v m="$MAX_RUNNING" -v t="$TTFT_MS" -v i="$ITL_MS" -v o="$OUT" \
  'BEGIN { printf "%.1f", m / ((t + (o - 1) * i) / 1000) }')
echo "simulator: $MAX_RUNNING slots, TTFT $TTFT_MS ms, ITL $ITL_MS ms, $OUT output tokens: derived capacity $derived req/s"
echo "SLO: p$PERCENTILE TTFT <= $SLO_TTFT_MS ms; precision $PRECISION; $PROBE_REQUESTS requests per probe"
echo "cores: $(nproc)   load: $(cut -d' ' -f1-3 /proc/loadavg)"
for arrival in $ARRIVALS; do
  echo
  echo "== $arrival arrivals =="
  "$BIN" bench serve --url "$URL" --model sim --scenario "D(16,$OUT)" --find-capacity \
    --arrival "$arrival" --slo-ttft-ms "$SLO_TTFT_MS" --slo-percentile "$PERCENTILE" \
    --capacity-start 20 --capacity-precision "$PRECISION" --probe-requests "$PROBE_REQUESTS" \
    --warmup-requests 10 --output "$WORK/$arrival" 2>&1 | grep -v '^probe '
  found=$(python3 -c "import json;print(json.load(open('$WORK/$arrival/capacity.json'))['capacity']['capacity'])")
  awk -v f="$found" -v d="$derived" 'BEGIN { printf "found %s req/s: %+.1f %% from the derived %s\n", f, (f - d) / d * 100, d }'
done
