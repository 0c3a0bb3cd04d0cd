#!/bin/bash
# How often `yardstick gate` cries wolf, and how often it catches a real slowdown, with the spec
# `yardstick init --template serve` writes, as written, against a separate `yardstick sim`.
#
# Usage: scripts/bench-gate-aa.sh [WORKDIR]    (YARDSTICK=path/to/binary, default on PATH)
# Settings (environment):
#   ITL=2          the simulator's inter-token latency, ms (2 ms: a fast GPU server, where TPOT
#                  p50 differences are a few percent of noise)
#   AA=10 SLOW=10  A/A runs, and runs of a server 10 % slower in TTFT (--ttft-ms 55 against 50)
#   CONFIRM=0      1: gate with --confirm (re-runs the points of FAIL and INCONCLUSIVE rows)
#   EDIT=''        a sed expression applied to the template (e.g. 's/replicates: 3 /replicates: 5 /')
# Prints one line per gate (its verdict and the rows that did not PASS), then the counts.
set -euo pipefail
Y=${YARDSTICK:-yardstick}
W=${1:-$(mktemp -d)}
ITL=${ITL:-2} AA=${AA:-10} SLOW=${SLOW:-10} CONFIRM=${CONFIRM:-0} EDIT=${EDIT:-}
mkdir -p "$W"
cd "$W"
: > pids
trap 'for p in $(cat pids); do kill "$p" 2>/dev/null || true; done' EXIT
start_sim() { # $1 = ttft ms; prints the URL
  "$Y" sim --port 0 --ttft-ms "$1" --itl-ms "$ITL" > "sim_$1.out" 2>/dev/null &
  echo $! >> pids
  for _ in $(seq 100); do grep -q listening "sim_$1.out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^listening on //p' "sim_$1.out" | head -1
}
for t in 50 55; do
  url=$(start_sim $t)
  "$Y" init --template serve | sed -e "s|url: sim,|url: \"$url\",|" -e "${EDIT:-s/^//}" > "s$t.yaml"
  "$Y" validate -q "s$t.yaml"
done
run() { "$Y" run "$1" --store st -q --json > /dev/null 2>&1 || true; ls st/runs | sort | tail -1; }
flags=""; [ "$CONFIRM" = 1 ] && flags="--confirm"
verdict() {
  # shellcheck disable=SC2086
  "$Y" gate "$1" --baseline "$BASE" --store st --json $flags 2>/dev/null \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdict"], " ".join(m["point"].split("/")[-1]+":"+m["metric"]+"/"+m["statistic"]+"="+m["verdict"] for m in d["metrics"] if m["verdict"]!="PASS"))' || true
}
echo "template serve as written${EDIT:+ (edited: $EDIT)}; sim --itl-ms $ITL; confirm=$CONFIRM; load: $(cut -d' ' -f1-3 /proc/loadavg)"
BASE=$(run s50.yaml)
for _ in $(seq "$AA"); do echo "A/A $(verdict "$(run s50.yaml)")"; done | tee aa.txt
for _ in $(seq "$SLOW"); do echo "TTFT+10% $(verdict "$(run s55.yaml)")"; done | tee slow.txt
count() { grep -c " $2" "$1" || true; }
echo "A/A: $(count aa.txt PASS) PASS, $(count aa.txt INCONCLUSIVE) INCONCLUSIVE, $(count aa.txt FAIL) FAIL of $AA"
echo "TTFT +10 %: $(count slow.txt FAIL) FAIL, $(count slow.txt INCONCLUSIVE) INCONCLUSIVE, $(count slow.txt PASS) PASS of $SLOW"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
