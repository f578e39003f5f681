#!/usr/bin/env bash
# On the GPU machine: install the bundle's wheels into a scratch site folder (no
# network: --no-index, each dependency carried or already there), then run
# gpu_processor_check.py on the GPU with the bundle's Llama-3 tokenizer.
#   bash build/gpu-processor/run.sh [cuda|cpu]
set -u
here=$(cd "$(dirname "$0")" && pwd)
dev=${1:-cuda}
site=${TETHER_GPU_SITE:-$(mktemp -d "${TMPDIR:-/tmp}/tether-site.XXXXXX")}
[ -f "$here/BUNDLE" ] && sed 's/^/== bundle: /' "$here/BUNDLE"
if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$here"/wheels/*.whl; then
  echo "FAIL install: pip could not install the bundle's wheels into $site"
  exit 1
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -c 'import sys, importlib.metadata, tether, xgrammar, torch; print("== python", sys.version.split()[0], "| tether", tether.__file__, "| xgrammar", importlib.metadata.version("xgrammar"), "| torch", torch.__version__, "cuda", torch.cuda.is_available())' || {
  echo "FAIL import: tether or xgrammar does not import from $site"; exit 1; }
cd "$here" && python3 gpu_processor_check.py "$dev" "$here/tokenizers/llama3"
