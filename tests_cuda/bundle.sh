#!/usr/bin/env bash
# Assemble the device check's bundle: everything the GPU machine needs, as real files.
#
#   bash tests_cuda/bundle.sh OUT_DIR TETHER_CUDA_BIN TEST_BIN TOKENIZERS_DIR
#
# OUT_DIR (e.g. build/cuda-check, git-ignored) is emptied and filled with:
#   run.sh, make_models.py, check_parity.py, bench_cuda.py, harness.py, profile_kernels.py,
#   README.md
#   bin/tether-cuda        from TETHER_CUDA_BIN (the `-tags cuda` CLI)
#   bin/modelcuda.test     from TEST_BIN (`go test -c -tags cuda` of the CUDA engine's tests)
#   tokenizers/llama2/, tokenizers/llama3/   tokenizer.json + tokenizer_config.json
#   BUNDLE                 when and from which commit it was made
# The binaries are stripped, and gzipped (bin/NAME.gz, which run.sh unpacks) only if the
# bundle would otherwise reach 60 MiB. Links are followed (the device tool carries a link as a link); the result must hold no
# link and weigh under 60 MiB (at most 64 MiB travel). Exit status 1 otherwise.
# Then on the GPU machine: bash build/cuda-check/run.sh (the device tool's `run` with
# carry ["build/cuda-check"]).
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 OUT_DIR TETHER_CUDA_BIN TEST_BIN TOKENIZERS_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1 bin=$2 testbin=$3 tok=$4
limit=$((60 << 20))

for f in "$bin" "$testbin"; do
  [ -f "$f" ] && [ -x "$f" ] || { echo "bundle.sh: $f is not an executable file" >&2; exit 1; }
done
for t in llama2 llama3; do
  for f in tokenizer.json tokenizer_config.json; do
    [ -f "$tok/$t/$f" ] || { echo "bundle.sh: $tok/$t/$f missing (run make setup)" >&2; exit 1; }
  done
done
# Empty OUT_DIR only if it is a bundle made here before (or empty): never a stray folder.
if [ -e "$out" ]; then
  if [ -f "$out/BUNDLE" ] || [ -z "$(ls -A "$out")" ]; then
    rm -rf "$out"
  else
    echo "bundle.sh: $out exists and is not a bundle (no BUNDLE file): not removing it" >&2
    exit 1
  fi
fi
mkdir -p "$out/bin" "$out/tokenizers/llama2" "$out/tokenizers/llama3"

cp -L "$here"/run.sh "$here"/make_models.py "$here"/check_parity.py "$here"/bench_cuda.py "$here"/harness.py \
  "$here"/profile_kernels.py \
  "$here"/README.md "$out/"
cp -L "$bin" "$out/bin/tether-cuda"
cp -L "$testbin" "$out/bin/modelcuda.test"
chmod 755 "$out/run.sh" "$out/bin/tether-cuda" "$out/bin/modelcuda.test"
for t in llama2 llama3; do
  cp -L "$tok/$t/tokenizer.json" "$tok/$t/tokenizer_config.json" "$out/tokenizers/$t/"
done
{
  echo "made $(date -u +%FT%TZ) on $(hostname)"
  rev=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
  dirty=$(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo " (uncommitted changes present)" || true)
  echo "commit $rev$dirty"
  echo "tether-cuda sha256 $(sha256sum "$out/bin/tether-cuda" | cut -c1-16), modelcuda.test sha256 $(sha256sum "$out/bin/modelcuda.test" | cut -c1-16)"
} > "$out/BUNDLE"

# Go binaries run the same without their symbol table and DWARF (stack traces come from
# pclntab): strip the copies. If the bundle is still too big, gzip the two binaries;
# run.sh unpacks bin/*.gz into its scratch folder.
if command -v strip >/dev/null 2>&1; then
  for f in "$out/bin/tether-cuda" "$out/bin/modelcuda.test"; do
    before=$(stat -c %s "$f")
    strip "$f"
    echo "stripped $(basename "$f"): $before -> $(stat -c %s "$f") bytes"
  done
else
  echo "bundle.sh: no strip on PATH; binaries copied as they are"
fi
total() { find "$out" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
if [ "$(total)" -ge "$limit" ]; then
  gzip -9 "$out/bin/tether-cuda" "$out/bin/modelcuda.test"
  echo "over 60 MiB with plain binaries: gzipped them to bin/*.gz (run.sh unpacks them)"
fi

links=$(find "$out" -type l)
if [ -n "$links" ]; then
  echo "bundle.sh: links in the bundle: $links" >&2
  exit 1
fi
size=$(total)
echo "bundle $out:"
(cd "$out" && find . -type f -printf '%10s  %p\n' | sort -k2)
printf 'total %d bytes (%.1f MiB; limit 60 MiB)\n' "$size" "$(echo "$size" | awk '{print $1 / 1048576}')"
if [ "$size" -ge "$limit" ]; then
  echo "bundle.sh: $out is $size bytes, over the 60 MiB limit" >&2
  exit 1
fi
