#!/usr/bin/env bash
# The device check of tether's CUDA engine (issue 29), run on the GPU machine.
#
# In the bundle (tests_cuda/bundle.sh -> build/cuda-check/) this file finds everything
# beside it: bin/tether-cuda, bin/modelcuda.test, tokenizers/{llama2,llama3}/, and the
# Python scripts. The GPU machine needs no Go and no network: only the NVIDIA driver
# (libcuda.so.1), a python3 with torch and transformers, and that venv's CUDA 13 cuBLAS
# (site-packages/nvidia/cu13/lib), which is not bundled (libcublasLt is 540 MB).
#
#   bash run.sh [STEP...]     STEP: models test parity bench gobench profile (default: the
#                             first four, in that order; gobench and profile only when named)
#
# Steps (each prints one PASS/FAIL line per check; a step that crashes or runs past its
# time limit is a FAIL line of its own):
#   models  make_models.py: random-weight transformers models into a scratch folder
#   test    bin/modelcuda.test -test.v: engine-level checks of every CUDA op vs the CPU engine
#   parity  check_parity.py: logits vs PyTorch on the GPU and vs the CPU engine, greedy
#           identity, JSON-schema-constrained outputs
#   bench   bench_cuda.py: bench-model-cuda, tether vs PyTorch eager and compiled, the HBM
#           bound, and the acceptance lines
#   gobench bin/modelcuda.test's benchmarks (BenchmarkPrefill128, BenchmarkDecode: the
#           engine without sampling) on llama1b-bf16 and smollm-bf16, with Go CPU profiles
#           of the host side in the scratch folder's logs/; no check
#   profile profile_kernels.py: a decode step's kernels under Nsight Compute (ncu), largest
#           first; no check, for the next round of kernel work
# The whole run is held to TETHER_CUDA_BUDGET_S seconds (default 470: under 8 minutes);
# each step gets at most its own cap and what is left. Exit status 0 only if every check
# passed.
#
# Environment:
#   TETHER_CUDA_DRYRUN=1      a dry run on a CPU-only machine, to test these scripts: the
#                             ordinary CPU binary (default ../build/bin/tether), no --device
#                             flag, torch on the CPU, tiny shapes, no nvidia-smi. Every line
#                             says DRY RUN; it is not a GPU result.
#   PYTHON                    the interpreter (default: the first of python3 and
#                             /opt/torch/.venv/bin/python that imports torch and transformers)
#   TETHER_CUDA_BIN, TETHER_CUDA_TEST_BIN, TETHER_TOKENIZERS   override the bundle's paths
#   TETHER_CUDA_PROFILE_NAMES the models the profile step runs (default smollm-bf16,llama1b-bf16)
#   TETHER_CUDA_SCRATCH       where the models go (default: a new folder under $TMPDIR or
#                             /tmp, removed at the end unless TETHER_CUDA_KEEP=1)
set -u
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
dry=""
case "${TETHER_CUDA_DRYRUN:-0}" in ""|0) ;; *) dry=1 ;; esac
tag=""
[ -n "$dry" ] && tag=" [DRY RUN]"
budget=${TETHER_CUDA_BUDGET_S:-$([ -n "$dry" ] && echo 1200 || echo 470)}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(models test parity bench)
for s in "${steps[@]}"; do
  case "$s" in models|test|parity|bench|gobench|profile) ;; *) echo "usage: $0 [models|test|parity|bench|gobench|profile]..."; exit 2 ;; esac
done
# No network on the GPU machine: nothing may try the Hugging Face hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

if [ -n "$dry" ]; then
  echo "################################################################################"
  echo "## DRY RUN on the CPU: tiny shapes, the CPU binary, torch on the CPU."
  echo "## NOT A GPU RESULT: it checks these scripts, not the CUDA engine."
  echo "################################################################################"
  export TETHER_CUDA_DRYRUN=1
  export TETHER_CUDA_BIN=${TETHER_CUDA_BIN:-$here/../build/bin/tether}
  export TETHER_TOKENIZERS=${TETHER_TOKENIZERS:-$here/../build/tokenizers}
  test_bin=${TETHER_CUDA_TEST_BIN:-}
else
  export TETHER_CUDA_DRYRUN=0
  export TETHER_CUDA_BIN=${TETHER_CUDA_BIN:-$here/bin/tether-cuda}
  export TETHER_TOKENIZERS=${TETHER_TOKENIZERS:-$here/tokenizers}
  test_bin=${TETHER_CUDA_TEST_BIN:-$here/bin/modelcuda.test}
fi

scratch=${TETHER_CUDA_SCRATCH:-}
if [ -z "$scratch" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tether-cuda-check.XXXXXX") || { echo "FAIL setup: mktemp failed$tag"; exit 1; }
  made_scratch=1
else
  mkdir -p "$scratch"; made_scratch=""
fi
models="$scratch/models"
logs="$scratch/logs"
mkdir -p "$models" "$logs"
all="$logs/all.log"
: > "$all"
say() { echo "$*" | tee -a "$all"; }
cleanup() {
  if [ -n "$made_scratch" ] && [ "${TETHER_CUDA_KEEP:-0}" = 0 ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT

# bundle.sh gzips the binaries when they would not fit the 60 MiB otherwise: unpack them.
for b in tether-cuda modelcuda.test; do
  if [ -z "$dry" ] && [ ! -e "$here/bin/$b" ] && [ -f "$here/bin/$b.gz" ]; then
    mkdir -p "$scratch/bin"
    if gzip -dc "$here/bin/$b.gz" > "$scratch/bin/$b" && chmod 755 "$scratch/bin/$b"; then
      echo "== unpacked bin/$b.gz to $scratch/bin/$b"
      [ "$TETHER_CUDA_BIN" = "$here/bin/$b" ] && TETHER_CUDA_BIN=$scratch/bin/$b
      [ "$test_bin" = "$here/bin/$b" ] && test_bin=$scratch/bin/$b
    else
      say "FAIL setup: cannot unpack $here/bin/$b.gz"
    fi
  fi
done

echo "== host: $(hostname) $(uname -m) $(date -u +%FT%TZ); budget ${budget} s; scratch $scratch"
[ -f "$here/BUNDLE" ] && sed 's/^/== bundle: /' "$here/BUNDLE"
if [ -n "$dry" ]; then
  echo "== nvidia-smi: skipped (dry run)"
else
  echo "== nvidia-smi -L"
  nvidia-smi -L 2>&1 || echo "(nvidia-smi failed)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader 2>&1 | sed 's/^/   /' | head -4
fi

# ---- python: the first candidate that imports torch and transformers -------------------
py=""
for cand in ${PYTHON:-} python3 /opt/torch/.venv/bin/python; do
  command -v "$cand" >/dev/null 2>&1 || continue
  if "$cand" -c 'import torch, transformers, tokenizers, numpy' >/dev/null 2>&1; then py=$cand; break; fi
  echo "   ($cand does not import torch, transformers, tokenizers and numpy)"
done
if [ -z "$py" ]; then say "FAIL setup: no python3 with torch, transformers, tokenizers and numpy$tag"; exit 1; fi
echo "== python: $(command -v "$py")"
"$py" - <<'PY' 2>&1 | sed 's/^/   /'
import sys, torch, transformers
print("python", sys.version.split()[0], "| torch", torch.__version__, "| transformers", transformers.__version__,
      "| torch CUDA", torch.version.cuda, "| cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device 0:", p.name, f"{p.total_memory / 2**30:.0f} GiB, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs")
try:
    import importlib.metadata, jsonschema; print("jsonschema", importlib.metadata.version("jsonschema"))
except ImportError:
    print("jsonschema: not importable (check_parity.py uses its own validator)")
PY

# ---- LD_LIBRARY_PATH: the venv's CUDA 13 cuBLAS (libcuda.so.1 comes from the driver) ----
if [ -n "$dry" ]; then
  echo "== LD_LIBRARY_PATH: unchanged (dry run: the CPU binary needs no CUDA library)"
else
  libdirs=()
  sps=()
  for sp in /opt/torch/.venv/lib/python3*/site-packages; do [ -d "$sp" ] && sps+=("$sp"); done
  while read -r sp; do [ -d "$sp" ] && sps+=("$sp"); done < <("$py" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  for sp in "${sps[@]-}"; do
    for d in "$sp"/nvidia/cu13/lib "$sp"/nvidia/cublas/lib; do
      [ -d "$d" ] || continue
      if [ -e "$d/libcuda.so.1" ]; then echo "   skip $d (its libcuda.so.1 would shadow the driver's)"; continue; fi
      case " ${libdirs[*]-} " in *" $d "*) ;; *) libdirs+=("$d") ;; esac
    done
  done
  have=""
  for d in "${libdirs[@]-}"; do [ -n "$d" ] && [ -e "$d/libcublas.so.13" ] && have=1; done
  if [ -z "$have" ]; then
    echo "   no libcublas.so.13 in site-packages; searching /opt /usr /root /home (depth 9)"
    while read -r f; do d=$(dirname "$f"); case " ${libdirs[*]-} " in *" $d "*) ;; *) libdirs+=("$d") ;; esac
    done < <(find /opt /usr /root /home -maxdepth 9 -name 'libcublas.so.13' 2>/dev/null | sort -r | head -4)
  fi
  joined=$(IFS=:; echo "${libdirs[*]-}")
  export LD_LIBRARY_PATH=$joined${joined:+${LD_LIBRARY_PATH:+:}}${LD_LIBRARY_PATH-}
  echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for d in "${libdirs[@]-}"; do
    for f in "$d"/libcublas.so.13 "$d"/libcublasLt.so.13; do [ -e "$f" ] && echo "   $f ($(stat -Lc %s "$f") bytes)"; done
  done
fi

# ---- preflight: the binaries ------------------------------------------------------------
ok_bin=1
if [ ! -x "$TETHER_CUDA_BIN" ]; then
  say "FAIL preflight-tether: $TETHER_CUDA_BIN missing or not executable$tag"; ok_bin=""
else
  echo "== tether: $TETHER_CUDA_BIN ($(stat -Lc %s "$TETHER_CUDA_BIN") bytes)"
  if [ -z "$dry" ]; then
    ldd "$TETHER_CUDA_BIN" 2>&1 | sed 's/^/   /'
    help=$(timeout 30 "$TETHER_CUDA_BIN" generate --help 2>&1)
    if echo "$help" | grep -q -- '--device'; then
      say "PASS preflight-tether: $TETHER_CUDA_BIN starts and has generate --device"
    else
      say "FAIL preflight-tether: '$TETHER_CUDA_BIN generate --help' shows no --device flag: $(echo "$help" | tail -3 | tr '\n' ' ')"
      ok_bin=""
    fi
  fi
fi

# ---- the steps ----------------------------------------------------------------------------
# run_step NAME CAP_S CMD...: runs CMD under timeout min(CAP, what is left of the budget),
# its output to the screen and to $logs/NAME.log; a crash or timeout is a FAIL line.
run_step() {
  local name=$1 cap=$2; shift 2
  local left=$(( budget - ($(date +%s) - t0) ))
  local lim=$(( cap < left - 5 ? cap : left - 5 ))
  if [ "$lim" -lt 15 ]; then
    say "FAIL $name: not run: ${left} s left of the ${budget} s budget$tag"
    return 1
  fi
  echo
  echo "================ $name (limit ${lim} s) ================"
  local t=$(date +%s)
  timeout -k 10 "$lim" "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  grep -E '^(PASS|FAIL) ' "$logs/$name.log" >> "$all"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "FAIL $name: timed out after ${lim} s (checks not printed above did not run)$tag"
  elif [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$logs/$name.log"; then
    say "FAIL $name: exited with status $rc without a FAIL line (see its output above)$tag"
  fi
  echo "== $name: exit status $rc, $(( $(date +%s) - t )) s"
  return $rc
}

has_step() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

models_ok=1
if has_step models; then
  run_step models 150 "$py" "$here/make_models.py" "$models" || models_ok=""
elif [ ! -f "$models/models.json" ]; then
  models_ok=""
fi

if has_step test; then
  if [ -z "$test_bin" ]; then
    say "NOT-RUN modelcuda.test: no test binary in a dry run (set TETHER_CUDA_TEST_BIN to run one)$tag"
  elif [ ! -x "$test_bin" ]; then
    say "FAIL modelcuda.test: $test_bin missing or not executable$tag"
  else
    run_modelcuda() {
      cd "$here" && "$test_bin" -test.v -test.timeout 120s > "$logs/modelcuda.out" 2>&1
      local rc=$?
      local npass nskip nfail
      npass=$(grep -c -- '^--- PASS' "$logs/modelcuda.out"); nskip=$(grep -c -- '--- SKIP' "$logs/modelcuda.out")
      nfail=$(grep -c -- '--- FAIL' "$logs/modelcuda.out")
      grep -E -- '^--- (PASS|FAIL|SKIP)' "$logs/modelcuda.out" | sed 's/^/   /'
      if [ $rc -ne 0 ]; then
        echo "   ---- last 40 lines ----"; tail -40 "$logs/modelcuda.out" | sed 's/^/   /'
        echo "FAIL modelcuda.test: exit status $rc; $npass top-level tests passed, $nfail failures$tag"
      elif [ "$nskip" -gt 0 ]; then
        grep -B2 -- '--- SKIP' "$logs/modelcuda.out" | sed 's/^/   /'
        echo "FAIL modelcuda.test: $nskip tests skipped on the GPU machine (a skip is not a pass); $npass passed$tag"
      elif [ "$npass" -eq 0 ]; then
        echo "FAIL modelcuda.test: exit status 0 but no test ran$tag"
      else
        echo "PASS modelcuda.test: $npass top-level tests passed, none skipped ($(tail -1 "$logs/modelcuda.out"))$tag"
      fi
      [ $rc -eq 0 ]
    }
    export -f run_modelcuda
    export test_bin logs here tag
    run_step modelcuda.test 150 bash -c run_modelcuda
  fi
fi

if has_step parity; then
  if [ -z "$models_ok" ]; then say "FAIL parity: not run: no models$tag"
  elif [ -z "$ok_bin" ]; then say "FAIL parity: not run: no usable tether binary$tag"
  else run_step parity 180 "$py" "$here/check_parity.py" "$models"
  fi
fi

if has_step bench; then
  if [ -z "$models_ok" ]; then say "FAIL bench: not run: no models$tag"
  elif [ -z "$ok_bin" ]; then say "FAIL bench: not run: no usable tether binary$tag"
  else
    # The same limit run_step will give it, so that the bench can fit its compile timeout.
    left=$(( budget - ($(date +%s) - t0) ))
    cap=$([ -n "$dry" ] && echo 900 || echo 330)
    bl=$(( cap < left - 5 ? cap : left - 5 ))
    run_step bench "$cap" "$py" "$here/bench_cuda.py" "$models" --budget-s "$bl"
  fi
fi

if has_step gobench; then
  if [ -n "$dry" ] || [ -z "$test_bin" ] || [ ! -x "$test_bin" ]; then echo "== gobench: skipped (no test binary)"
  elif [ -z "$models_ok" ]; then say "FAIL gobench: not run: no models$tag"
  else
    run_gobench() {
      local m
      for m in llama1b-bf16 smollm-bf16; do
        for b in Prefill128 Decode; do
          echo "-- $m $b"
          (cd "$logs" && TETHER_CUDA_BENCH_MODEL="$models/$m" "$test_bin" -test.run '^$' -test.bench "^Benchmark$b\$" \
            -test.benchtime 2s -test.benchmem -test.cpuprofile "$logs/gobench-$m-$b.pprof" 2>&1 | grep -E '^(Benchmark|ok|FAIL|PASS|---|\s+\S+_test.go)')
        done
      done
      return 0
    }
    export -f run_gobench
    export test_bin logs models
    run_step gobench 120 bash -c run_gobench
  fi
fi

if has_step profile; then
  if [ -n "$dry" ]; then echo "== profile: skipped (dry run: no GPU, no ncu)"
  elif [ -z "$models_ok" ]; then say "FAIL profile: not run: no models$tag"
  else run_step profile 200 "$py" "$here/profile_kernels.py" "$models" --names "${TETHER_CUDA_PROFILE_NAMES:-smollm-bf16,llama1b-bf16}"
  fi
fi

# ---- summary ----------------------------------------------------------------------------------
npass=$(grep -c '^PASS ' "$all")
nfail=$(grep -c '^FAIL ' "$all")
echo
if [ -n "$dry" ]; then
  echo "================ summary: DRY RUN (CPU, tiny shapes) — NOT A GPU RESULT ================"
else
  echo "================ summary: GPU run ================"
fi
grep -E '^(PASS|FAIL|NOT-RUN) ' "$all"
echo "== $npass passed, $nfail failed in $(( $(date +%s) - t0 )) s${tag}"
[ -n "$dry" ] && echo "== DRY RUN: these results come from the CPU and say nothing about the CUDA engine."
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
