#!/usr/bin/env bash
# Assemble what the GPU machine needs to run tests_py/gpu_processor_check.py (issue 28's
# check of the transformers processor on a GPU against xgrammar's): that machine's
# python3 is 3.12 with torch and transformers but no tether, no xgrammar and no network.
#
#   bash tools/gpu_processor/bundle.sh PYTHON3.12 OUT_DIR
#
# OUT_DIR (e.g. build/gpu-processor, git-ignored) is emptied and filled with:
#   wheels/      tether's cp312 wheel (built here: gopy with PYTHON3.12, in a build venv
#                cached under ~/.cache/tether/py312-build/<key>), and xgrammar with the
#                dependencies the GPU image lacks, downloaded from PyPI for cp312
#                (cached under ~/.cache/tether/gpu-wheels/<key>)
#   tokenizers/llama3/   tokenizer.json and tokenizer_config.json
#   gpu_processor_check.py, run.sh, BUNDLE
# Real files only, under 60 MiB (the device tool carries at most 64 MiB). On the GPU
# machine: bash build/gpu-processor/run.sh (the device tool's run with carry
# ["build/gpu-processor"]).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PYTHON3.12 OUT_DIR" >&2
  exit 2
fi
py=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/gpu_processor
cache=${TETHER_CACHE:-$HOME/.cache/tether}
limit=$((60 << 20))
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' || {
  echo "bundle.sh: $py is not a Python 3.12 (the GPU machine's)" >&2; exit 1; }
for f in tokenizer.json tokenizer_config.json; do
  [ -f "$root/build/tokenizers/llama3/$f" ] || { echo "bundle.sh: build/tokenizers/llama3/$f missing (run make setup)" >&2; exit 1; }
done

# The build venv: gopy's needs (pybindgen) and the wheel tools, pinned as in
# python/requirements-dev.txt.
pins=$(grep -E '^(pybindgen|setuptools|wheel)==' "$root/python/requirements-dev.txt")
key=$( (echo "$pins"; "$py" -c 'import sys; print(sys.version)'; uname -m) | sha256sum | cut -c1-16)
venv=$cache/py312-build/$key
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --no-input -q $pins
  touch "$venv/.complete"
fi

# The peers' wheels for cp312 (no dependencies resolved: each is named).
peers="xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2 pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.8.0 typing-inspection==0.4.5"
wkey=$( (echo "$peers"; uname -m) | sha256sum | cut -c1-16)
wdir=$cache/gpu-wheels/$wkey
if [ ! -f "$wdir/.complete" ]; then
  rm -rf "$wdir"; mkdir -p "$wdir"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip download --no-input -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$wdir" $peers
  touch "$wdir/.complete"
fi

if [ -e "$out" ]; then
  if [ -f "$out/BUNDLE" ] || [ -z "$(ls -A "$out")" ]; then rm -rf "$out"
  else echo "bundle.sh: $out exists and is not a bundle (no BUNDLE file): not removing it" >&2; exit 1; fi
fi
mkdir -p "$out/wheels" "$out/tokenizers/llama3"
(cd "$root" && PATH="$root/build/bin:$PATH" "$venv/bin/python" -m pip wheel --no-input -q --no-deps \
  --no-build-isolation -w "$out/wheels" .)
rm -rf "$root/python/build"
cp -L "$wdir"/*.whl "$out/wheels/"
cp -L "$root/build/tokenizers/llama3/tokenizer.json" "$root/build/tokenizers/llama3/tokenizer_config.json" "$out/tokenizers/llama3/"
cp -L "$root/tests_py/gpu_processor_check.py" "$here/run.sh" "$out/"
chmod 755 "$out/run.sh"
{
  echo "made $(date -u +%FT%TZ) on $(hostname)"
  rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  dirty=$(git -C "$root" status --porcelain 2>/dev/null | grep -q . && echo " (uncommitted changes present)" || true)
  echo "commit $rev$dirty"
} > "$out/BUNDLE"
ls "$out/wheels"/tether-*-cp312-*.whl >/dev/null || { echo "bundle.sh: no cp312 tether wheel in $out/wheels" >&2; exit 1; }
links=$(find "$out" -type l)
[ -z "$links" ] || { echo "bundle.sh: links in the bundle: $links" >&2; exit 1; }
size=$(find "$out" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
(cd "$out" && find . -type f -printf '%10s  %p\n' | sort -k2)
printf 'total %d bytes (%.1f MiB; limit 60 MiB)\n' "$size" "$(echo "$size" | awk '{print $1 / 1048576}')"
[ "$size" -lt "$limit" ] || { echo "bundle.sh: $out is over 60 MiB" >&2; exit 1; }
