#!/usr/bin/env bash
# Fetches a real, large byte-level BPE tokenizer.json for yardstick-load's exact prompt length
# test (too large to commit: 1.7 MB): the one the MIT-licensed `anthropic` Python SDK shipped
# in its 0.38.0 wheel, taken from PyPI with pip (no install, no dependencies).
#
#   scripts/fetch-test-tokenizer.sh [DIR]     # default /var/tmp/yardstick-tokenizers
#   cargo test -p yardstick-load --features tokenizer exact_prompt_lengths_under_bpe
#
# The test looks for DIR/tokenizer.json (or $YARDSTICK_BPE_TOKENIZER) and says SKIPPED when
# it is missing.
set -euo pipefail
dir=${1:-/var/tmp/yardstick-tokenizers}
mkdir -p "$dir"
pip=${PIP:-pip3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pip" download --quiet --no-deps --only-binary :all: anthropic==0.38.0 -d "$tmp"
python3 - "$tmp"/anthropic-0.38.0-py3-none-any.whl "$dir" <<'PY'
import sys, zipfile, pathlib
whl, out = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(whl) as z:
    (out / "tokenizer.json").write_bytes(z.read("anthropic/tokenizer.json"))
    (out / "LICENSE.anthropic-sdk").write_bytes(z.read("anthropic-0.38.0.dist-info/licenses/LICENSE")
        if "anthropic-0.38.0.dist-info/licenses/LICENSE" in z.namelist()
        else z.read("anthropic-0.38.0.dist-info/LICENSE"))
print(f"wrote {out / 'tokenizer.json'}")
PY
