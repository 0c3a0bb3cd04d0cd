#!/bin/bash
# Builds the `yardstick-bench` wheel (the release binary, packaged by maturin with
# `bindings = "bin"`) into DIST (default dist/), then installs it into a fresh virtualenv and
# checks what a user would: `yardstick --version`, and a short `bench serve` against
# `yardstick sim`, both from the installed wheel. Prints the wheel's size and the install time.
#
# Usage: scripts/build-wheel.sh [DIST]   (MATURIN=path/to/maturin, else one is installed into a
# scratch virtualenv from PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:-dist}
work=$(mktemp -d)
trap 'kill "$sim" 2>/dev/null || true; rm -rf "$work"' EXIT
sim=""
if [ -z "${MATURIN:-}" ]; then
  python3 -m venv "$work/maturin"
  "$work/maturin/bin/pip" install -q "maturin>=1.5,<2"
  MATURIN="$work/maturin/bin/maturin"
fi
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
# maturin reads packaging/pypi/pyproject.toml from its directory (its manifest-path names the
# crate).
(cd packaging/pypi && "$MATURIN" build --release --locked -o "$DIST" --compatibility linux)
wheel=$(ls -t "$DIST"/yardstick_bench-*.whl | head -1)
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"

python3 -m venv "$work/v"
t0=$(date +%s.%N)
"$work/v/bin/pip" install -q --no-index "$wheel"
t1=$(date +%s.%N)
echo "installed in $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
Y="$work/v/bin/yardstick"
"$Y" --version
"$Y" sim --port 0 > "$work/sim.out" 2>&1 &
sim=$!
for _ in $(seq 100); do grep -q listening "$work/sim.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/sim.out" | head -1)
[ -n "$url" ] || { echo "the simulator from the wheel did not start"; cat "$work/sim.out"; exit 1; }
"$Y" bench serve --url "$url" --model m --concurrency 2 --max-requests 10 --json > "$work/serve.json"
python3 - "$work/serve.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
points = doc["points"] if isinstance(doc, dict) and "points" in doc else doc
p = points[0]
done = p["requests"]["completed"]
assert done == 10, f"{done} requests completed"
print(f"bench serve from the wheel: {done} requests, {p['request_throughput']:.1f} req/s")
PY
