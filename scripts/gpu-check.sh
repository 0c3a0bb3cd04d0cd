#!/bin/bash
# The GPU device check: every GPU probe, a run of examples/gpu.yaml (telemetry and energy
# through every layer), a short `bench serve --energy` against the simulator and `env --json`,
# each figure printed beside what PyTorch measures on the same GPU in the same script.
#
# Usage: scripts/gpu-check.sh [OUTDIR]      (YARDSTICK=path/to/binary, default on PATH)
# Needs: a GPU with its driver; cuBLASLt (found in CUDA's lib64 or in Python's nvidia-* wheels);
# python3 with torch for the side-by-side figures (skipped, and said, without it).
# Targets: HBM copy >= 90 % of PyTorch's device-to-device copy, bf16 matmul peak >= 95 % of
# PyTorch's 8192^3 torch.matmul, every NVML field of env --json present.
# Takes about 3-5 minutes on one H100/H200. Prints PASS/FAIL per target; exits 1 if any FAIL.
set -uo pipefail
Y=${YARDSTICK:-yardstick}
O=${1:-$(mktemp -d)}
mkdir -p "$O"
say() { printf '%s\n' "$*" | tee -a "$O/check.txt"; }

# cuBLASLt from Python's nvidia wheels (PyTorch's own), when CUDA's lib64 does not hold it.
if command -v python3 >/dev/null; then
  dirs=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
seen = []
for r in roots:
    for p in glob.glob(os.path.join(r, "nvidia", "**", "libcublasLt.so*"), recursive=True):
        d = os.path.dirname(p)
        if d not in seen:
            seen.append(d)
print(":".join(seen))
EOF
)
  [ -n "$dirs" ] && export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
say "== yardstick gpu-check $(date -u +%FT%TZ) =="
say "binary: $("$Y" --version 2>&1)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$O/check.txt"
say "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

# 1. PyTorch's figures first (a cold GPU for both: each warms up on its own).
have_torch=0
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  have_torch=1
  python3 - > "$O/torch.json" <<'EOF'
import json, torch
dev = torch.device("cuda")
def timed(fn, warm=3, n=20):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(n):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ms.append(s.elapsed_time(e))
    ms.sort()
    return ms[len(ms) // 2] / 1e3
out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
n = 4 << 30  # 4 GiB per buffer, the largest size of `bench micro gpu` (gpu.hbm.copy)
a = torch.ones(n // 4, dtype=torch.float32, device=dev); b = torch.empty_like(a)
out["copy_GBps"] = 2 * n / timed(lambda: b.copy_(a)) / 1e9
del a, b
for size in (4096, 8192):
    A = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    B = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    out[f"matmul_bf16_{size}_TFLOPs"] = 2 * size**3 / timed(lambda: A @ B, n=10) / 1e12
print(json.dumps(out))
EOF
  say "pytorch: $(cat "$O/torch.json")"
else
  say "pytorch: not available here (python3 -c 'import torch' failed): side-by-side figures skipped"
fi

# 2. Every GPU probe through the CLI.
start=$(date +%s)
"$Y" --json bench micro gpu --replicates 3 > "$O/micro.json" 2> "$O/micro.err"
say "bench micro gpu: exit $? in $(( $(date +%s) - start )) s"
python3 - "$O/micro.json" <<'EOF' | tee -a "$O/check.txt"
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["results"]:
    ci = x.get("ci") or [None, None]
    fmt = lambda v: "-" if v is None else f"{v:,.1f}"
    print(f"  {x['name']:<34} {fmt(x['value']):>10} {x['unit']:<8} [{fmt(ci[0])}, {fmt(ci[1])}] cv={x.get('cv') or 0:.3f}")
for s in r["skipped"]:
    print(f"  skipped {s['name']}: {s['reason']}")
for w in r["warnings"]:
    print(f"  warning: {w}")
EOF

# 3. A run of examples/gpu.yaml: the GPU layers as points, telemetry and energy around them.
start=$(date +%s)
"$Y" run examples/gpu.yaml --store "$O/store" --telemetry-interval 250ms > "$O/run.out" 2>&1
say "run examples/gpu.yaml: exit $? in $(( $(date +%s) - start )) s"
tail -25 "$O/run.out" | tee -a "$O/check.txt"
tel=$(ls "$O"/store/runs/*/telemetry/*.parquet 2>/dev/null | head -1)
if [ -n "$tel" ]; then
  python3 - "$tel" <<'EOF' | tee -a "$O/check.txt"
import sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]).to_pandas()
g = t[t.device.str.startswith("gpu")]
need = ["util_pct", "memory_util_pct", "memory_used_bytes", "sm_clock_mhz", "mem_clock_mhz",
        "power_w", "energy_mj", "temperature_c", "throttle_reasons"]
have = sorted(g.metric.unique())
print(f"  telemetry: {len(t)} rows, gpu metrics {have}")
for m in ["sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "util_pct"]:
    v = g[g.metric == m].value
    if len(v):
        print(f"  telemetry {m}: min {v.min():.0f} max {v.max():.0f} mean {v.mean():.0f}")
e = g[g.metric == "energy_mj"].value
if len(e) > 1:
    print(f"  telemetry energy over the run: {(e.max() - e.min()) / 1e3:.1f} J")
missing = [m for m in need if m not in have]
print(("PASS" if not missing else "FAIL") + f"  telemetry GPU series present (missing: {missing or 'none'})")
EOF
  python3 - "$O"/store/runs/*/summary.json <<'EOF' | tee -a "$O/check.txt"
import json, sys
def find(o, key):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                yield v
            yield from find(v, key)
    elif isinstance(o, list):
        for v in o:
            yield from find(v, key)
s = json.load(open(sys.argv[1]))
per_step = list(find(s, "energy_j_per_step"))
print(f"  energy_j_per_step of the training point: {json.dumps(per_step)[:300]}")
print(("PASS" if per_step else "FAIL") + "  energy per training step recorded")
EOF
else
  say "FAIL  no telemetry parquet in the run"
fi

# 4. bench serve --energy against the simulator.
"$Y" sim --port 0 > "$O/sim.out" 2>/dev/null &
sim=$!
for _ in $(seq 100); do grep -q listening "$O/sim.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$O/sim.out" | head -1)
"$Y" --json bench serve --url "$url" --model sim --concurrency 16 --max-requests 200 --energy > "$O/serve.json" 2> "$O/serve.err"
say "bench serve --energy: exit $?"
kill "$sim" 2>/dev/null
python3 - "$O/serve.json" <<'EOF' | tee -a "$O/check.txt"
import json, sys
def find(o, key):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                yield v
            yield from find(v, key)
    elif isinstance(o, list):
        for v in o:
            yield from find(v, key)
r = json.load(open(sys.argv[1]))
src = next(find(r, "energy_source"), None)
j = next(find(r, "energy_j_per_output_token"), None)
print(f"  energy_source={src} energy_j_per_output_token={j}")
print(("PASS" if src == "nvml" and j else "FAIL") + "  energy per output token from NVML")
EOF

# 5. env --json: every NVML field present.
"$Y" --json env > "$O/env.json" 2> "$O/env.err"
python3 - "$O/env.json" <<'EOF' | tee -a "$O/check.txt"
import json, sys
e = json.load(open(sys.argv[1]))
def gpus(o):
    if isinstance(o, dict):
        if "gpus" in o and isinstance(o["gpus"], list) and o["gpus"]:
            return o["gpus"]
        for v in o.values():
            g = gpus(v)
            if g:
                return g
    return None
g = gpus(e)
if not g:
    print("FAIL  env --json lists no GPU")
    sys.exit()
# `nvlink` is null where NVML reports no NVLink at all (a PCIe card, a VM without the bridge):
# a fact about the machine, not a field NVML failed to give.
missing = sorted(k for k, v in g[0].items() if v is None and k != "nvlink")
print(f"  env gpu0: {json.dumps(g[0])}")
if g[0].get("nvlink") is None:
    print("  env gpu0: nvlink null: NVML reports no NVLink links on this GPU")
print(("PASS" if not missing else "FAIL") + f"  NVML fields of env --json present (null: {missing or 'none'})")
EOF

# 6. Side by side with PyTorch.
if [ "$have_torch" = 1 ]; then
  python3 - "$O/micro.json" "$O/torch.json" "$O/store" <<'EOF' | tee -a "$O/check.txt"
import glob, json, sys
m = {x["name"]: x for x in json.load(open(sys.argv[1]))["results"]}
t = json.load(open(sys.argv[2]))
def row(ours_name, ours, theirs, target, what):
    if ours is None or theirs is None:
        print(f"FAIL  {what}: missing (ours {ours_name}={ours}, pytorch={theirs})")
        return
    ratio = ours / theirs
    print(("PASS" if ratio >= target else "FAIL")
          + f"  {what}: yardstick {ours_name} {ours:,.1f} vs PyTorch {theirs:,.1f} = {ratio:.1%} (target >= {target:.0%})")
get = lambda n: m.get(n, {}).get("value")
row("gpu.hbm.copy", get("gpu.hbm.copy"), t.get("copy_GBps"), 0.90, "HBM copy, 4 GiB buffers, GB/s")
row("gpu.gemm.bf16.peak", get("gpu.gemm.bf16.peak"), t.get("matmul_bf16_8192_TFLOPs"), 0.95, "bf16 matmul peak vs torch 8192^3, TFLOP/s")
row("gpu.gemm.bf16.8192", get("gpu.gemm.bf16.8192"), t.get("matmul_bf16_8192_TFLOPs"), 0.95, "bf16 matmul 8192^3, same shape, TFLOP/s")
EOF
fi
fails=$(grep -c "^FAIL" "$O/check.txt")
say "== $( [ "$fails" = 0 ] && echo "all targets met" || echo "FAILED: see FAIL lines" ) =="
[ "$fails" = 0 ]
