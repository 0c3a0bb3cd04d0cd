#!/usr/bin/env bash
# What hot metrics cost the load generator: `bench serve` at 256 streams against `yardstick sim`,
# runs alternated without any sink, with `--remote-write` (to a real Prometheus when one is
# installed, else to a closed port, where every push is dropped), and with `--otlp` and
# `--otlp-traces` at ratio 1, a span per request (to the OTLP receiver of the tests, which decodes
# with the official opentelemetry-proto package, when a Python with it is found; else a closed
# port); client CPU seconds and peak RSS from /usr/bin/time. Loopback only; every run is bounded
# in requests.
#
#   scripts/bench-hot.sh
#   CONCURRENCY=1024 ROUNDS=5 scripts/bench-hot.sh
#
# Environment: YARDSTICK_BIN (default target/release/yardstick, built if missing), CONCURRENCY
# (256), REQUESTS (8 x concurrency), ROUNDS (3 rounds of each mode), INTERVAL (--hot-interval,
# 1s), YARDSTICK_PYTHON (a Python with opentelemetry-proto), KEEP.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${YARDSTICK_BIN:-target/release/yardstick}
if [[ ! -x $BIN ]]; then
  cargo build --release -p yardstick >&2
fi
C=${CONCURRENCY:-256}
N=${REQUESTS:-$((C * 8))}
ROUNDS=${ROUNDS:-3}
INTERVAL=${INTERVAL:-1s}
WORK=$(mktemp -d /tmp/bench-hot.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$BIN" sim --port 0 --ttft-ms 50 --itl-ms 10 --max-tokens 100 >"$WORK/sim.out" 2>"$WORK/sim.err" &
PIDS+=($!)
for _ in $(seq 100); do [[ -s $WORK/sim.out ]] && break; sleep 0.05; done
URL=$(head -1 "$WORK/sim.out" | sed 's/^listening on //')

SINK="http://127.0.0.1:1/api/v1/write"
RECEIVER="a closed port (every push dropped)"
if command -v prometheus >/dev/null 2>&1; then
  PORT=$(free_port)
  echo 'global: {scrape_interval: 1m}' >"$WORK/prometheus.yml"
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-remote-write-receiver >/dev/null 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$PORT/-/ready" >/dev/null 2>&1 && break; sleep 0.1; done
  SINK="http://127.0.0.1:$PORT/api/v1/write"
  RECEIVER="Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}')"
fi

OTLP="http://127.0.0.1:1"
OTLP_RECEIVER="a closed port (every export dropped)"
for py in "${YARDSTICK_PYTHON:-}" /var/tmp/yardstick-pytools/venv/bin/python python3; do
  [[ -n $py ]] || continue
  if "$py" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' 2>/dev/null; then
    "$py" crates/yardstick/tests/it/otlp_receiver.py "$WORK/otlp.jsonl" >"$WORK/otlp.out" &
    PIDS+=($!)
    for _ in $(seq 100); do [[ -s $WORK/otlp.out ]] && break; sleep 0.05; done
    OTLP="http://127.0.0.1:$(awk '{print $2}' "$WORK/otlp.out")"
    OTLP_RECEIVER="an OTLP/HTTP receiver decoding with opentelemetry-proto ($py)"
    break
  fi
done

echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench serve: concurrency $C, $N requests, sim TTFT 50 ms ITL 10 ms 100 tokens; every $INTERVAL"
echo "remote-write to $RECEIVER; OTLP metrics and spans (ratio 1) to $OTLP_RECEIVER"
printf '%-5s %-8s %9s %9s %9s %9s %8s\n' round hot "req/s" "cpu_s" "rss_MB" pushes dropped
for r in $(seq "$ROUNDS"); do
  for hot in off rw otlp; do
    extra=()
    [[ $hot == rw ]] && extra=(--remote-write "$SINK" --hot-interval "$INTERVAL")
    [[ $hot == otlp ]] && extra=(--otlp "$OTLP" --otlp-traces "$OTLP" --otlp-trace-ratio 1 --hot-interval "$INTERVAL")
    /usr/bin/time -v -o "$WORK/time.txt" "$BIN" --quiet --json bench serve --url "$URL" --model sim \
      --scenario "D(100,100)" --concurrency "$C" --warmup-requests "$C" --max-requests "$N" \
      --max-duration 120s "${extra[@]}" >"$WORK/out.json"
    python3 - "$r" "$hot" "$WORK" <<'PY'
import json, sys
r, hot, work = sys.argv[1], sys.argv[2], sys.argv[3]
doc = json.load(open(f"{work}/out.json"))
t = {}
for line in open(f"{work}/time.txt"):
    k, _, v = line.strip().rpartition(": ")
    t[k] = v
cpu = float(t["User time (seconds)"]) + float(t["System time (seconds)"])
rss = int(t["Maximum resident set size (kbytes)"]) / 1024
sinks = doc.get("hot_metrics", [])
pushes = sum(h["pushes"] for h in sinks) if sinks else "-"
dropped = sum(h["dropped_pushes"] for h in sinks) if sinks else "-"
print(f"{r:<5} {hot:<8} {doc['points'][0]['request_throughput']:9.1f} {cpu:9.2f} {rss:9.1f} "
      f"{pushes:>9} {dropped:>8}")
with open(f"{work}/rows.txt", "a") as f:
    f.write(f"{hot} {cpu}\n")
PY
  done
done
python3 - "$WORK/rows.txt" <<'PY'
import sys
from collections import defaultdict
cpu = defaultdict(list)
for line in open(sys.argv[1]):
    mode, c = line.split()
    cpu[mode].append(float(c))
base = sum(cpu["off"]) / len(cpu["off"])
for mode in ("off", "rw", "otlp"):
    m = sum(cpu[mode]) / len(cpu[mode])
    print(f"mean client CPU {mode:<5} {m:7.2f} s  ({m / base:.3f}x of off)")
PY
