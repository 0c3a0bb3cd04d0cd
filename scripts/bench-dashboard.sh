#!/usr/bin/env bash
# Dashboard load time: a store whose first run (a real `yardstick run` against the in-process
# simulator) is cloned RUNS times into its SQLite warehouse (new ids, start times an hour apart,
# every fact scaled by a small drift), then `yardstick server` on it and the trend page of one
# metric (a linked point per run) and of the default metrics timed with curl, and, when Chromium
# is installed, the time headless Chromium takes to load and lay out each against a small page.
# Target: a trend of 1,000 runs loads in under a second.
#
# Usage: scripts/bench-dashboard.sh [DIR] [RUNS]   (DIR is kept for inspection; default a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-$(mktemp -d)}"
runs="${2:-1000}"
target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet -p yardstick
ys="$target/debug/yardstick"
mkdir -p "$dir"
cat > "$dir/spec.yaml" <<'YAML'
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: dash-bench}
spec:
  mode: exploratory
  workload:
    model: sim-llama
    precision: fp32
    sequenceLengths: "D(16,8)"
    batching: continuous
    concurrency: [2]
    dataset: {kind: synthetic, seed: 42}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {requests: 2}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  layers:
    component:
      - kind: serve
        target: {url: sim, api: chat, model: sim-llama}
        scenarios: ["D(16,8)"]
        load: {mode: concurrency, values: [2]}
        stop: {maxRequests: 12, maxDuration: 10s}
  provenance: {signing: off}
YAML
"$ys" run -q "$dir/spec.yaml" --store "$dir/store" > /dev/null
python3 - "$dir/store/yardstick.db" "$runs" <<'PY'
import random, sqlite3, sys
c = sqlite3.connect(sys.argv[1]); n = int(sys.argv[2])
src = c.execute("select * from runs order by started_at limit 1").fetchone()
cols = [d[0] for d in c.execute("select * from runs limit 0").description]
points = c.execute("select * from points where run_id=?", (src[0],)).fetchall()
reps = c.execute("select * from replicates where run_id=?", (src[0],)).fetchall()
facts = c.execute("select * from facts where run_id=?", (src[0],)).fetchall()
random.seed(1)
for i in range(n):
    rid = "01BENCH%019d" % i
    row = list(src); row[0] = rid
    row[cols.index("started_at")] = "2026-%02d-%02dT%02d:00:00Z" % (1 + i // 672, 1 + (i // 24) % 28, i % 24)
    c.execute("insert into runs values (%s)" % ",".join("?" * len(row)), row)
    for p in points: c.execute("insert into points values (?,?,?,?,?)", (rid,) + tuple(p[1:]))
    for r in reps: c.execute("insert into replicates values (?,?,?,?,?,?,?)", (rid,) + tuple(r[1:]))
    k = 1 + 0.1 * i / n + random.gauss(0, 0.01)
    for f in facts:
        f = list(f); f[0] = rid
        for j in (5, 6, 7):
            if f[j] is not None: f[j] *= k
        c.execute("insert into facts values (%s)" % ",".join("?" * len(f)), f)
c.commit()
print("runs: %d, facts: %d" % (c.execute("select count(*) from runs").fetchone()[0], c.execute("select count(*) from facts").fetchone()[0]))
PY
"$ys" server --store "$dir/store" --listen 127.0.0.1:0 > "$dir/server.out" 2> "$dir/server.err" &
pid=$!
trap 'kill $pid' EXIT
for _ in $(seq 100); do grep -qs listening "$dir/server.out" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$dir/server.out")
echo "machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for page in "/trend?name=dash-bench&metric=ttft_ms" "/trend?name=dash-bench" "/runs" "/contracts"; do
  for _ in 1 2 3; do
    curl -s -o "$dir/page.html" -w "%{http_code} %{time_total}s %{size_download} bytes  $page" "$url$page"
    echo "  ($(grep -o 'class="pt"' "$dir/page.html" | wc -l) linked points)"
  done
done
if command -v chromium > /dev/null; then
  for page in "/contracts" "/trend?name=dash-bench&metric=ttft_ms" "/trend?name=dash-bench"; do
    start=$(date +%s.%N)
    chromium --headless --no-sandbox --disable-gpu --user-data-dir="$dir/chromium" --dump-dom "$url$page" > /dev/null 2>&1
    echo "chromium load and layout, process start included: $(echo "$(date +%s.%N) - $start" | bc) s  $page"
  done
fi
echo "data left in $dir"
