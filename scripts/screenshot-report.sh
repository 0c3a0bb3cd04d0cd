#!/bin/bash
# Screenshots of what a user sees of a stored run: the offline HTML report and the dashboard's
# run page and run list, rendered by headless Chromium at 1280 px. CI keeps them as artifacts of
# the README's main command, so a layout regression is one look away.
#
# Usage: scripts/screenshot-report.sh RUN_ID STORE OUTDIR   (YARDSTICK=path/to/binary)
# Writes OUTDIR/report.html, report.png, dashboard-run.png, dashboard-runs.png; fails when
# Chromium is missing or a screenshot comes out blank (a page that did not render).
set -euo pipefail
Y=${YARDSTICK:-yardstick}
run=$1 store=$2 out=$3
mkdir -p "$out"
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "screenshot-report: no Chromium on PATH" >&2; exit 1; }
shot() { # $1 = URL, $2 = PNG, $3 = height
  "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="1280,$3" \
    --virtual-time-budget=3000 --screenshot="$2" "$1" >/dev/null 2>&1
  # A blank page compresses to almost nothing: a rendered one is tens of kilobytes.
  local size; size=$(stat -c %s "$2" 2>/dev/null || echo 0)
  [ "$size" -gt 20000 ] || { echo "screenshot-report: $2 is blank or missing ($size bytes)" >&2; exit 1; }
  echo "$2 ($size bytes)"
}
"$Y" report "$run" --store "$store" --html "$out/report.html"
shot "file://$(realpath "$out/report.html")" "$out/report.png" 3000
log=$(mktemp)
"$Y" server --store "$store" --listen 127.0.0.1:0 > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 100); do
  url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "screenshot-report: the server did not start: $(cat "$log")" >&2; exit 1; }
shot "$url/runs/$run" "$out/dashboard-run.png" 2400
shot "$url/runs" "$out/dashboard-runs.png" 1000
