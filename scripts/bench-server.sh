#!/usr/bin/env bash
# Load figures for issue 18: the team server's JSON API on loopback under wrk, over a warehouse
# of RUNS runs with METRICS metrics each (one point, 3 replicates: 4 facts per metric), in
# SQLite and, when PostgreSQL's binaries are found, PostgreSQL. Prints requests/s and latency
# percentiles of the runs list, one run and a trend; no assertions (targets on a 2-core machine:
# trend p99 < 50 ms, runs list >= 1,000 req/s).
#
#   scripts/bench-server.sh                # RUNS=1000 METRICS=100 DURATION=10s CONNS=8
#   RUNS=200 DURATION=5s scripts/bench-server.sh
#   BACKENDS=sqlite scripts/bench-server.sh
#
# Needs wrk (apt-get install wrk) and curl. The server is the server library in a small release
# example (crates/yardstick-server/examples/bench_server.rs: `fill` writes the runs through the
# Warehouse trait, `serve` serves them as `yardstick server` does), so that the build compiles the
# server and the store only. wrk and the server share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1000}
METRICS=${METRICS:-100}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-8}
THREADS=${THREADS:-2}
BACKENDS=${BACKENDS:-sqlite postgres}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found" >&2; exit 1; }

cargo build --release --locked -q -p yardstick-server --example bench_server
BIN=${CARGO_TARGET_DIR:-target}/release/examples/bench_server
echo "cores: $(nproc)   load before: $(cut -d' ' -f1-3 /proc/loadavg)   runs: $RUNS   metrics/run: $METRICS   wrk: -t$THREADS -c$CONNS -d$DURATION"

tmp=$(mktemp -d /tmp/ys-bench-XXXXXX)
server_pid=""
pg_stop=""
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  [ -z "$pg_stop" ] || eval "$pg_stop" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts the server on LOCATION; sets $url.
serve() {
  "$BIN" serve "$1" 127.0.0.1:0 > "$tmp/server.out" 2> "$tmp/server.err" &
  server_pid=$!
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^listening on //p' "$tmp/server.out")
    [ -n "$url" ] && return 0
    sleep 0.1
  done
  echo "the server did not start: $(cat "$tmp/server.err")" >&2
  exit 1
}

stop() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# One wrk run: prints `NAME  req/s  p50  p90  p99` (CONNECTIONS: default $CONNS).
bench() {
  local name=$1 path=$2 conns=${3:-$CONNS}
  local code
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$url$path")
  [ "$code" = 200 ] || { echo "$path: HTTP $code: $(head -c 300 "$tmp/body")" >&2; exit 1; }
  local threads=$THREADS
  [ "$conns" -ge "$threads" ] || threads=$conns
  wrk -t"$threads" -c"$conns" -d"$DURATION" --latency "$url$path" > "$tmp/wrk.txt"
  if grep -q "Non-2xx" "$tmp/wrk.txt"; then
    echo "$path: errors under load:" >&2; cat "$tmp/wrk.txt" >&2; exit 1
  fi
  awk -v name="$name" -v bytes="$(wc -c < "$tmp/body")" '
    /Requests\/sec/ {rps=$2}
    /^ +50%/ {p50=$2} /^ +90%/ {p90=$2} /^ +99%/ {p99=$2}
    END {printf "  %-14s %9.0f req/s   p50 %-9s p90 %-9s p99 %-9s (%d-byte answer)\n", name, rps, p50, p90, p99, bytes}
  ' "$tmp/wrk.txt"
}

run_all() {
  local label=$1 location=$2
  local t0 t1
  t0=$(date +%s.%N)
  "$BIN" fill "$location" "$RUNS" "$METRICS"
  t1=$(date +%s.%N)
  serve "$location"
  local n
  n=$(curl -s "$url/api/v1/runs?limit=1000" | grep -o '"run_id"' | wc -l)
  echo
  echo "== $label: $n runs listed; filled in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s =="
  local mid
  mid=$(printf '01JB%022d' $((RUNS / 2)))
  bench "runs list" "/api/v1/runs"
  bench "run" "/api/v1/runs/$mid"
  bench "trend" "/api/v1/trend?benchmark=bench-serve&metric=ttft_ms&statistic=p50"
  # One request at a time: the latency of a trend itself, without queueing behind the others.
  bench "trend, 1 conn" "/api/v1/trend?benchmark=bench-serve&metric=ttft_ms&statistic=p50" 1
  stop
}

for backend in $BACKENDS; do
  case $backend in
    sqlite)
      mkdir -p "$tmp/store"
      run_all "SQLite" "$tmp/store"
      ;;
    postgres)
      pgbin=${YARDSTICK_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
      if [ -z "$pgbin" ] || [ ! -x "$pgbin/initdb" ]; then
        echo; echo "== PostgreSQL: skipped (no initdb; set YARDSTICK_PG_BIN) =="; continue
      fi
      # PostgreSQL refuses to run as root: as root, the cluster runs as `postgres`.
      as=()
      if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); chown postgres "$tmp"; fi
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      "${as[@]}" "$pgbin/initdb" -D "$tmp/pg" -U yardstick --auth=trust --encoding=UTF8 --locale=C --no-sync > /dev/null
      "${as[@]}" "$pgbin/pg_ctl" -D "$tmp/pg" -l "$tmp/pg.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $tmp -c fsync=off -c full_page_writes=off" start > /dev/null
      pg_stop="${as[*]} $pgbin/pg_ctl -D $tmp/pg -m immediate stop"
      run_all "PostgreSQL" "postgres://yardstick@127.0.0.1:$port/postgres"
      eval "$pg_stop" > /dev/null 2>&1 || true
      pg_stop=""
      ;;
  esac
done
