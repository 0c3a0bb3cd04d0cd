#!/usr/bin/env bash
# Keeps a persistent cargo target directory from growing without end: in debug/deps and
# release/deps, only the newest artifacts of each crate and kind are kept (4 per workspace crate,
# 6 per dependency: check and build, and the feature sets that are built, alternate), and
# incremental state goes.
# Cargo rebuilds anything removed that it still needs, so this can cost time, never correctness.
# Usage: scripts/prune-target.sh [TARGET_DIR]   (default: $CARGO_TARGET_DIR, else ./target)
set -euo pipefail
dir="${1:-${CARGO_TARGET_DIR:-target}}"
[ -d "$dir" ] || { echo "prune-target: no $dir" >&2; exit 0; }
rm -rf "$dir/debug/incremental" "$dir/release/incremental"
python3 - "$dir" <<'PY'
import collections, os, re, sys
root = sys.argv[1]
freed = 0
for profile in ("debug", "release"):
    deps = os.path.join(root, profile, "deps")
    if not os.path.isdir(deps):
        continue
    groups = collections.defaultdict(list)
    for name in os.listdir(deps):
        m = re.match(r"(.+?)-([0-9a-f]{16})(\..*)?$", name)
        if m:
            groups[(m.group(1), m.group(3) or "")].append(name)
    for (base, _), names in groups.items():
        keep = 4 if base.removeprefix("lib").startswith("yardstick") or base == "it" else 6
        names.sort(key=lambda n: os.path.getmtime(os.path.join(deps, n)), reverse=True)
        for n in names[keep:]:
            p = os.path.join(deps, n)
            try:
                freed += os.path.getsize(p) if os.path.isfile(p) else 0
                os.remove(p) if os.path.isfile(p) else None
            except OSError:
                pass
print(f"prune-target: freed {freed / 1e9:.1f} GB in {root}")
PY
