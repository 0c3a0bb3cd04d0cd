#!/usr/bin/env bash
# Replays three forgeries from the trust review against a yardstick binary ($1, default: the
# debug build) and prints what it made of each: an unsigned forgery under verify --key, a gc.json
# excusing a deleted summary.json, and a manifest that names a file outside the run for gc.
# Expected: exit 1, exit 1, kept. (Before the fix: exit 0, exit 0, DELETED.)
Y="$(realpath "${1:-${CARGO_TARGET_DIR:-target}/debug/yardstick}")"; W="$(mktemp -d)"; cd "$W"
"$Y" keygen k/sign.key >/dev/null
cat > spec.yaml <<SPEC
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: forge}
spec:
  mode: exploratory
  workload:
    model: fake
    precision: fp32
    sequenceLengths: 16
    batching: static
    concurrency: 1
    dataset: {kind: synthetic, seed: 1}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {steps: 1}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  provenance: {signing: required, key: "$W/k/sign.key"}
  layers:
    e2e:
      - kind: command
        command: [sh, -c, "echo hi"]
        timeout: 1m
SPEC
run() { "$Y" run --json -q spec.yaml --store s 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])'; }
R=$(run); D=s/runs/$R
# 1. delete the attestation, edit a log, recompute its hash in the manifest
chmod -R u+w "$D"; rm "$D/attestation.dsse.json"
F=$(cd "$D" && ls logs/*/*/* | head -1); echo forged >> "$D/$F"
python3 - "$D" "$F" <<'PY'
import hashlib, json, sys
d, f = sys.argv[1:]
m = json.load(open(f"{d}/manifest.json"))
for a in m["artifacts"]:
    if a["path"] == f:
        b = open(f"{d}/{f}", "rb").read(); a["sha256"] = hashlib.sha256(b).hexdigest(); a["size"] = len(b)
json.dump(m, open(f"{d}/manifest.json", "w"), indent=2)
PY
"$Y" verify "$R" --store s --key k/sign.key.pub >/dev/null 2>&1; echo "1 unsigned forgery, verify --key: exit $?"
# 4. gc.json excusing a deleted summary.json
R=$(run); D=s/runs/$R; chmod -R u+w "$D"
python3 - "$D" "$R" <<'PY'
import json, sys
d, r = sys.argv[1:]
m = json.load(open(f"{d}/manifest.json"))
a = [a for a in m["artifacts"] if a["path"] == "summary.json"][0]
json.dump({"schema": "yardstick.gc/v1", "run_id": r, "dropped": [{"path": "summary.json", "sha256": a["sha256"], "size": a["size"], "kind": "samples", "dropped_at": "2026-01-01T00:00:00Z", "policy": "keep-raw 1d"}]}, open(f"{d}/gc.json", "w"))
PY
rm "$D/summary.json"
"$Y" verify "$R" --store s --key k/sign.key.pub >/dev/null 2>&1; echo "4 gc.json excuses summary.json, verify --key: exit $?"
# 5. a manifest naming a file outside the run: gc deletes it
R=$(run); D=s/runs/$R; chmod -R u+w "$D"; rm -f "$D/attestation.dsse.json"
echo "keep me" > victim.txt
python3 - "$D" <<'PY'
import hashlib, json, sys
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
b = open("victim.txt", "rb").read()
m["artifacts"].append({"path": "../../../victim.txt", "size": len(b), "sha256": hashlib.sha256(b).hexdigest(), "kind": "samples"})
json.dump(m, open(f"{d}/manifest.json", "w"), indent=2)
PY
"$Y" gc --keep-raw 0s --store s >/dev/null 2>&1
[ -f victim.txt ] && echo "5 victim outside the run after gc: kept" || echo "5 victim outside the run after gc: DELETED"
rm -rf "$W"
