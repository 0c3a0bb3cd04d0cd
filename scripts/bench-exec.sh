#!/usr/bin/env bash
# Figures for issue 5: `yardstick bench exec` per-run overhead next to hyperfine's (both without a
# shell), and the reference trainer's tokens/s and MFU. Prints a small report; no assertions.
#
#   scripts/bench-exec.sh [RUNS]        # default 300 runs per command
#
# Needs jq; hyperfine is optional (apt-get install hyperfine). Uses the release binary when built.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-300}
Y=target/release/yardstick
[ -x "$Y" ] || Y=target/debug/yardstick
[ -x "$Y" ] || { echo "build yardstick first (cargo build --release)" >&2; exit 1; }
echo "binary: $Y   cores: $(nproc)   load: $(cut -d' ' -f1-3 /proc/loadavg)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo
echo "== per-run wall time, $RUNS runs, warm-up 10 (mean ± sd, median; ms) =="
for cmd in "true" "sleep 0.01"; do
  # shellcheck disable=SC2086
  "$Y" bench exec --json --runs "$RUNS" --warmup 10 --logs "$tmp/ys" -- $cmd > "$tmp/ys.json" 2>/dev/null || true
  ys=$(jq -r '.wall_s | "\(.mean*1e3) \(.stddev*1e3) \(.median*1e3)"' "$tmp/ys.json")
  printf '%-12s yardstick  %s\n' "$cmd" "$(awk '{printf "%.3f ± %.3f, median %.3f", $1, $2, $3}' <<<"$ys")"
  if command -v hyperfine >/dev/null; then
    hyperfine -N --runs "$RUNS" --warmup 10 --export-json "$tmp/hf.json" "$cmd" >/dev/null 2>&1 || true
    hf=$(jq -r '.results[0] | "\(.mean*1e3) \(.stddev*1e3) \(.median*1e3)"' "$tmp/hf.json")
    printf '%-12s hyperfine  %s\n' "$cmd" "$(awk '{printf "%.3f ± %.3f, median %.3f", $1, $2, $3}' <<<"$hf")"
    awk -v a="$ys" -v b="$hf" 'BEGIN{split(a,x," "); split(b,y," ");
      printf "%-12s difference of medians %+.3f ms, ratio %.3f\n", "", x[3]-y[3], x[3]/y[3]}'
  fi
done

echo
echo "== reference trainer, tiny preset, 200 steps =="
"$Y" bench train --json --steps 200 > "$tmp/train.json"
jq -r '"threads \(.model.threads)  GEMM peak \(.peak.flops/1e9|floor) GFLOP/s  FLOPs/step \(.flops_per_step)\n" +
       "step time p50 \(.step_time_s.p50*1e3) ms  p90 \(.step_time_s.p90*1e3) ms\n" +
       "tokens/s p50 \(.tokens_per_s.p50|floor)  p10 \(.tokens_per_s.p10|floor)  aggregate \(.tokens_per_s.aggregate|floor)\n" +
       "MFU p50 \(.mfu.p50*100) %   loss \(.loss.first) -> \(.loss.last)"' "$tmp/train.json"
