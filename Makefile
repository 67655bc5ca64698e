# fairdp build. `make run` trains on the embedded Adult data; `make test` is what CI runs.
#
# The fast CPU path links OpenBLAS through cgo (build tag `openblas`). It is chosen
# automatically when libopenblas can be linked; otherwise the portable pure-Go BLAS is
# used and a hint says how to get the fast one. Force a choice with BLAS=openblas or
# BLAS=portable.

GO      ?= go
BIN     ?= bin/fairdp
HAVE_OPENBLAS := $(shell printf 'int main(void){return 0;}' | $${CC:-cc} -x c - -lopenblas -o /dev/null 2>/dev/null && echo yes)
ifeq ($(BLAS),)
  BLAS := $(if $(HAVE_OPENBLAS),openblas,portable)
endif
# (backend/openblas.go links -lopenblas itself: a user's CGO_LDFLAGS is passed through untouched.)
ifeq ($(BLAS),openblas)
  TAGS := -tags openblas
else
  TAGS :=
endif

.PHONY: all build run test test-portable vet fmt-check bench bench-compare blas-hint clean

all: build

blas-hint:
ifeq ($(BLAS),portable)
	@echo "fairdp: building with the portable pure-Go BLAS (slow for CNNs)." >&2
	@echo "        For the OpenBLAS fast path: apt-get install libopenblas-dev (Debian/Ubuntu), then rebuild." >&2
endif

build: blas-hint
	$(GO) build $(TAGS) -o $(BIN) ./cmd/fairdp

run: build
	./$(BIN) train

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(TAGS) ./...

# The portable path must build and pass the BLAS-dependent unit tests too.
test-portable:
	$(GO) vet ./...
	$(GO) test -count=1 ./backend ./gemm ./nn/... ./models
	$(GO) test -count=1 -tags purego ./gemm

test: blas-hint fmt-check vet
	$(GO) test -count=1 -timeout 20m $(TAGS) ./...
	$(MAKE) --no-print-directory test-gpu-emulated
	$(MAKE) --no-print-directory test-gpu-driver
ifeq ($(BLAS),openblas)
	$(MAKE) --no-print-directory test-portable BLAS=portable
endif

# Benchmark table (a few minutes): logistic, MNIST CNN and VGG-like, plain, DP-SGD and DP-FERMI steps:
# samples/s, GFLOP/s, % of the SGEMM peak measured in the same run, DP/plain, DP-FERMI/DP-SGD (medians of
# the per-round ratios; the ratios of the median times are printed under the table), peak RSS
# (models/benchtable_test.go; the three steps of a model are timed alternately in one process, against
# the largest of several peak readings). FAIRDP_GEMM=own|blas picks the float32 GEMM path,
# FAIRDP_BENCH_STEPS fixes the timed rounds (default: at least 3 and 2 s). The go-test benchmarks stay available:
# go test -run '^$$' -bench . -benchtime 3x ./models ./bench (the old make bench: plus tailoring's).
bench: blas-hint
	FAIRDP_BENCH_TABLE=1 $(GO) test $(TAGS) -count=1 -timeout 0 -run '^TestBenchTable$$' -v ./models

# The table for each float32 GEMM path, interleaved over ROUNDS rounds: package gemm's
# kernels, OpenBLAS (when linked) and the portable build's gonum BLAS. For bench/RESULTS.md.
ROUNDS ?= 1
bench-compare:
	@for r in $$(seq $(ROUNDS)); do \
	  if [ -n "$(HAVE_OPENBLAS)" ]; then \
	    echo "== round $$r: own kernels (openblas build)"; FAIRDP_GEMM=own $(MAKE) --no-print-directory bench BLAS=openblas; \
	    echo "== round $$r: OpenBLAS"; FAIRDP_GEMM=blas $(MAKE) --no-print-directory bench BLAS=openblas; \
	  fi; \
	  echo "== round $$r: portable build (own kernels)"; FAIRDP_GEMM=own $(MAKE) --no-print-directory bench BLAS=portable; \
	  echo "== round $$r: portable build, gonum BLAS"; FAIRDP_GEMM=blas $(MAKE) --no-print-directory bench BLAS=portable; \
	done

clean:
	rm -rf bin

# GPU path (package cuda, build tag `cuda`; docs/gpu.md). A `cuda` build needs cuda.h at build time
# (nvidia-cuda-dev, or a toolkit under CUDA_HOME) and links only libcuda.so.1, the driver's; cuBLAS
# is loaded at run time (libcublas.so.13, .12 or .11, or FAIRDP_CUBLAS=path). `make ptx` regenerates
# the committed PTX in cuda/ptx from cuda/kernels/*.cu with nvcc.
.PHONY: ptx cuda-check test-gpu-emulated test-gpu test-gpu-driver bench-gpu gpu-bundle gpu-counts

comma := ,
EMU_TAGS := -tags cudaemu$(if $(filter openblas,$(BLAS)),$(comma)openblas)
CUDA_HOME ?= /usr/local/cuda
CUDA_INC := $(if $(wildcard $(CUDA_HOME)/include/cuda.h),-I$(CUDA_HOME)/include)
CUDA_LIB := $(if $(wildcard $(CUDA_HOME)/lib64),-L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib64/stubs)
HASH := \#
HAVE_CUDA_H := $(shell printf '$(HASH)include <cuda.h>\n' | $${CC:-cc} $(CUDA_INC) -E -x c - >/dev/null 2>&1 && echo yes)
# The nvcc the committed PTX was generated with (its header says), the only one whose PTX must match.
PTX_NVCC := $(shell sed -n 's|^// nvcc: Cuda compilation tools, ||p' cuda/ptx/dpops_sm70.ptx)

# The GPU code on the emulated device (build tag `cudaemu`): cuda/kernels/*.cu compiled unchanged for the
# CPU by the system C++ compiler (g++), run through the same Device seam and DeviceBackend a GPU runs;
# every kernel test and the emulator's own tests. Needs g++, not the CUDA toolkit, and takes seconds; part
# of `make test`. Then the trainer's, DP-FERMI's and the command's end-to-end runs on the emulated device
# (`fairdp train --device cuda`): only those tests (-run OnDevice), the rest runs in `make test`.
test-gpu-emulated:
	$(GO) vet $(EMU_TAGS) ./cuda/... ./trainer/ ./fermi/ ./cmd/fairdp/
	FAIRDP_DEVICE=emu $(GO) test -count=1 $(EMU_TAGS) ./cuda/...
	FAIRDP_DEVICE=emu $(GO) test -count=1 $(EMU_TAGS) -run OnDevice ./trainer/ ./fermi/ ./cmd/fairdp/

# The on-device suite of a `cuda` build, run by test-gpu on a GPU and by test-gpu-driver on the stand-in
# driver: package cuda's tests on device 0, then the trainer's, DP-FERMI's and the command's end-to-end
# runs on it. FAIRDP_REQUIRE_DEVICE=1 makes a missing device fail the tests instead of skipping them.
GPU_TAGS := -tags cuda$(if $(filter openblas,$(BLAS)),$(comma)openblas)
GPU_SUITE = FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 $(GO) test -count=1 $(GPU_TAGS) ./cuda/... && \
	FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 $(GO) test -count=1 $(GPU_TAGS) -run 'OnDevice|DeviceCuda' ./trainer/ ./fermi/ ./cmd/fairdp/

# On a GPU host (NVIDIA driver R520+, compute capability ≥ 7.0, cuBLAS 11-13): GPU_SUITE on GPU 0.
test-gpu:
	export CGO_CFLAGS="$(CUDA_INC) $$CGO_CFLAGS" CGO_LDFLAGS="$(CUDA_LIB) $$CGO_LDFLAGS"; $(GPU_SUITE)

# GPU_SUITE, unchanged, through the real driver path (gpu.go, cuinit.c, module loading, launches, the
# run-time loaded cuBLAS) on a stand-in libcuda.so.1 and libcublas.so.12 built from the emulator
# (cuda/stubdriver): part of `make test`. Needs cuda.h (the stand-in and gorgonia.org/cu are compiled
# against it), not a driver; without cuda.h it says SKIPPED and what to install.
STUB_DIR := bin/stubdriver
test-gpu-driver:
ifeq ($(HAVE_CUDA_H),yes)
	CUDA_HOME=$(CUDA_HOME) cuda/stubdriver/build.sh $(STUB_DIR)
	export LD_LIBRARY_PATH=$(abspath $(STUB_DIR))$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} CGO_CFLAGS="$(CUDA_INC) $$CGO_CFLAGS" \
	  CGO_LDFLAGS="-L$(abspath $(STUB_DIR)) $$CGO_LDFLAGS"; $(GPU_SUITE)
else
	@echo "test-gpu-driver: SKIPPED, missing cuda.h: apt-get install --no-install-recommends nvidia-cuda-dev" \
	  "(Debian non-free; .ci/run does it) or set CUDA_HOME to a CUDA toolkit"
endif

# dist/fairdp-gpu-<version>.tar.gz (scripts/gpu-bundle.sh): the GPU-enabled fairdp, the cuda-tagged test
# binaries, the benchmark binaries, bench/peer and gpu-check.sh, for a bare CUDA host (no Go, no network):
# unpack, then `./gpu-check.sh RESULTS_DIR` as root. Needs cuda.h here (the binaries link libcuda.so.1
# only, against the stand-in driver's libcuda.so).
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
gpu-bundle:
ifeq ($(HAVE_CUDA_H),yes)
	CUDA_HOME=$(CUDA_HOME) cuda/stubdriver/build.sh $(STUB_DIR)
	CGO_CFLAGS="$(CUDA_INC) $$CGO_CFLAGS" GO=$(GO) scripts/gpu-bundle.sh $(VERSION) $(STUB_DIR)
else
	@echo "gpu-bundle: missing cuda.h: apt-get install --no-install-recommends nvidia-cuda-dev (Debian non-free) or set CUDA_HOME" >&2; exit 1
endif

# What one steady-state device step asks of a GPU, per model, algorithm and batch (one line each:
# MODEL ALGO BATCH calls=N syncs=N h2d_bytes=N d2h_bytes=N launches=N gemms=N), counted on a device that
# runs nothing (cuda/counts_test.go): a second, no toolkit needed. Before/after in bench/results/cuda.md.
gpu-counts:
	@FAIRDP_GPU_COUNTS=1 $(GO) test -count=1 -v -run '^TestGPUCounts$$' ./cuda/ | grep -E '^[a-z-]+ [a-z]+ [0-9]+ calls='

# Times the kernels on the device (each call with its host↔device copies, as Backend takes host slices).
bench-gpu:
	CGO_CFLAGS="$(CUDA_INC) $$CGO_CFLAGS" CGO_LDFLAGS="$(CUDA_LIB) $$CGO_LDFLAGS" FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 \
	  $(GO) test -tags cuda -run '^$$' -bench . -benchmem ./cuda/

ptx:
	cuda/kernels/build-ptx.sh

# Checks that the cuda-tagged code vets, builds, links (libcuda, from the driver or the toolkit's stubs)
# and passes its tests (device tests skip without a GPU): the whole module, so nothing that only builds
# without the tag slips in (package graph is left out of cuda builds: Gorgonia's cuda code wants cuDNN).
# With the pinned nvcc ($(PTX_NVCC)) it checks that the committed PTX is what cuda/kernels/*.cu compile
# to; with another nvcc it compiles the kernels and says freshness was not checked. Finds a toolkit
# under CUDA_HOME (default /usr/local/cuda) or on the system paths; without cuda.h it says SKIPPED.
cuda-check:
ifneq ($(HAVE_CUDA_H),yes)
	@echo "cuda-check: SKIPPED, missing cuda.h (not on the system include path nor in $(CUDA_HOME)/include)."
	@echo "  Install a CUDA toolkit (any of 11.8-13) under $(CUDA_HOME), or Debian bookworm's 11.8 (about 2.3 GB): add a source"
	@echo "  with 'Suites: bookworm bookworm-updates' and 'Components: main contrib non-free' to /etc/apt/sources.list.d/,"
	@echo "  then: apt-get update && apt-get install --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev libcuda1"
else
	@set -e; export CGO_CFLAGS="$(CUDA_INC) $$CGO_CFLAGS" CGO_LDFLAGS="$(CUDA_LIB) $$CGO_LDFLAGS"; \
	nvcc=$$(command -v nvcc || { [ -x "$(CUDA_HOME)/bin/nvcc" ] && echo "$(CUDA_HOME)/bin/nvcc"; } || true); \
	if [ -z "$$nvcc" ]; then \
	  echo "cuda-check: no nvcc: PTX freshness NOT checked (needs nvcc $(PTX_NVCC))"; \
	else \
	  have=$$("$$nvcc" --version | sed -n 's/^Cuda compilation tools, //p'); \
	  tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  NVCC="$$nvcc" cuda/kernels/build-ptx.sh "$$tmp"; \
	  if [ "$$have" = "$(PTX_NVCC)" ]; then \
	    if ! diff -r -q cuda/ptx "$$tmp"; then \
	      echo "cuda-check: cuda/ptx is not what cuda/kernels/*.cu compile to; run make ptx" >&2; exit 1; \
	    fi; \
	    echo "cuda-check: committed PTX is current ($$have)"; \
	  else \
	    echo "cuda-check: kernels compile with nvcc $$have; PTX freshness NOT checked: the committed PTX is pinned to nvcc $(PTX_NVCC)"; \
	  fi; \
	fi; \
	if ! printf 'int main(void){return 0;}' | $${CC:-cc} -x c - $(CUDA_LIB) -lcuda -o /dev/null 2>/dev/null; then \
	  echo "cuda-check: no libcuda to link against (libcuda1, the NVIDIA driver, or $(CUDA_HOME)/lib64/stubs); checked PTX only"; exit 0; \
	fi; \
	$(GO) vet -tags cuda ./...; \
	$(GO) build -tags cuda ./...; \
	$(GO) test -count=1 -tags cuda -run '^$$' ./...; \
	FAIRDP_DEVICE=cuda $(GO) test -count=1 -tags cuda ./cuda/...; \
	FAIRDP_DEVICE=cuda $(GO) test -count=1 -tags cuda -run 'OnDevice|DeviceCuda' ./trainer/ ./fermi/ ./cmd/fairdp/
endif
