#!/usr/bin/env bash
# Installs the pinned CUDA toolkit wheels into DIR (no GPU needed) and makes the
# link-time helpers the cuda-tagged Go build uses:
#   DIR/cu13/nvidia/cu13/{bin/nvcc,include,lib}  CUDA 13.0: nvcc, cuBLAS
#   DIR/cu12/nvidia/...                          CUDA 12.9 headers (cuda.h for gorgonia.org/cu)
#   DIR/include-cublas/                          cublas_v2.h and cublas_api.h of 13.0 only
#   DIR/linklib/libcuda.so                       a link stub of the driver (SONAME libcuda.so.1;
#                                                never shipped: the driver provides the real one)
#   DIR/linklib/libcublas.so -> libcublas.so.13  so that -lcublas records libcublas.so.13
# usage: install_toolkit.sh DIR PYTHON
set -euo pipefail
dir=$1 py=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
for set in cu13 cu12; do
  if [ ! -f "$dir/$set/.done" ]; then
    rm -rf "$dir/$set" "$dir/wheels-$set"
    echo "downloading CUDA wheels ($set) into $dir"
    "$py" -m pip download -q --no-deps -d "$dir/wheels-$set" -r "$here/requirements-$set.txt"
    "$py" -m pip install -q --no-deps --no-index --target "$dir/$set" "$dir/wheels-$set"/*.whl 2>&1 | grep -v 'Running pip as' || true
    rm -rf "$dir/wheels-$set"
    touch "$dir/$set/.done"
  fi
done
N13=$dir/cu13/nvidia/cu13 N12=$dir/cu12/nvidia
test -x "$N13/bin/nvcc"
test -f "$N12/cuda_runtime/include/cuda.h"
mkdir -p "$dir/include-cublas" "$dir/linklib"
ln -sf "$N13/include/cublas_v2.h" "$N13/include/cublas_api.h" "$dir/include-cublas/"
ln -sf "$N13/lib/libcublas.so.13" "$dir/linklib/libcublas.so"
bash "$here/make_libcuda_stub.sh" "$N12/cuda_runtime/include/cuda.h" "$dir/linklib"
echo "CUDA toolkit ready in $dir"
