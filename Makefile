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
ifeq ($(BLAS),openblas)
  TAGS := -tags openblas
  export CGO_LDFLAGS := -lopenblas
else
  TAGS :=
endif

.PHONY: all build run test test-portable vet fmt-check bench bench-compare blas-hint clean ptx cuda-check test-gpu-emulated test-gpu bench-gpu

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

# GPU path (package cuda, build tag `cuda`). `make ptx` regenerates the
# committed PTX in cuda/ptx from cuda/kernels/*.cu with nvcc. `make cuda-check`
# checks that PTX is current and that the cuda-tagged code vets, builds, links
# against libcuda and passes its tests (kernel tests skip without a GPU): the whole
# module's code and tests, so nothing that only builds without the tag (Gorgonia's
# cuda-tagged code wants cuDNN: package graph is left out of cuda builds) slips in. Both
# need the CUDA 11.8 toolkit (about 1.6 GB to download, 5.5 GB installed), so neither is
# part of `make test`; .ci/run installs the toolkit (when the disk has room) and runs
# cuda-check. Without the toolkit cuda-check says what is missing and exits 0.
.PHONY: ptx cuda-check test-gpu-emulated test-gpu bench-gpu

comma := ,
EMU_TAGS := -tags cudaemu$(if $(filter openblas,$(BLAS)),$(comma)openblas)

# The GPU code on the emulated device (build tag `cudaemu`): cuda/kernels/*.cu compiled
# unchanged for the CPU by the system C++ compiler (g++), run through the same Device seam
# and DeviceBackend a GPU runs; every kernel test and the emulator's own tests. Needs g++, not
# the CUDA toolkit, and takes seconds; part of `make test`. Then the trainer's and the command's
# end-to-end runs on the emulated device (`fairdp train --device cuda`: SGD, DP-SGD, DPSGD-F, Naïve, DP-FERMI,
# momentum and Adam against the CPU engine): only those tests (-run OnDevice), the rest of the suites runs in `make test`.
test-gpu-emulated:
	$(GO) vet $(EMU_TAGS) ./cuda/... ./trainer/ ./fermi/ ./cmd/fairdp/
	FAIRDP_DEVICE=emu $(GO) test -count=1 $(EMU_TAGS) ./cuda/...
	FAIRDP_DEVICE=emu $(GO) test -count=1 $(EMU_TAGS) -run OnDevice ./trainer/ ./fermi/ ./cmd/fairdp/

# On a GPU host (NVIDIA driver R520+, compute capability ≥ 7.0, CUDA 11.8 toolkit): the same
# suite on GPU 0, then the trainer's and the command's end-to-end runs on it. FAIRDP_REQUIRE_DEVICE=1 makes a missing device fail the tests instead of
# skipping them. bench-gpu times the kernels on the device (each call with its host↔device
# copies, as Backend takes host slices).
test-gpu:
	FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 $(GO) test -count=1 -tags cuda ./cuda/...
	FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 $(GO) test -count=1 -tags cuda -run 'OnDevice|DeviceCuda' ./trainer/ ./cmd/fairdp/

bench-gpu:
	FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 $(GO) test -tags cuda -run '^$$' -bench . -benchmem ./cuda/

ptx:
	cuda/kernels/build-ptx.sh

cuda-check:
	@missing=""; \
	command -v nvcc >/dev/null 2>&1 || missing="$$missing nvcc (nvidia-cuda-toolkit)"; \
	printf '#include <cuda.h>\n' | $${CC:-cc} -E -x c - >/dev/null 2>&1 || missing="$$missing cuda.h (nvidia-cuda-dev)"; \
	printf 'int main(void){return 0;}' | $${CC:-cc} -x c - -lcuda -o /dev/null 2>/dev/null || missing="$$missing libcuda (libcuda1)"; \
	if [ -n "$$missing" ]; then \
	  echo "cuda-check: SKIPPED, missing:$$missing"; \
	  echo "  Install the CUDA 11.8 toolkit from Debian bookworm's non-free component (about 2.3 GB):"; \
	  echo "    add a source with 'Suites: bookworm bookworm-updates' and 'Components: main contrib non-free'"; \
	  echo "    to /etc/apt/sources.list.d/, then: apt-get update &&"; \
	  echo "    apt-get install --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev libcuda1"; \
	  exit 0; \
	fi; \
	set -e; \
	echo "cuda-check: $$(nvcc --version | grep release)"; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cuda/kernels/build-ptx.sh "$$tmp"; \
	if ! diff -r -q cuda/ptx "$$tmp"; then \
	  echo "cuda-check: cuda/ptx is not what cuda/kernels/*.cu compile to; run make ptx" >&2; exit 1; \
	fi; \
	echo "cuda-check: committed PTX is current"; \
	$(GO) vet -tags cuda ./...; \
	$(GO) build -tags cuda ./...; \
	$(GO) test -count=1 -tags cuda -run '^$$' ./...; \
	FAIRDP_DEVICE=cuda $(GO) test -count=1 -tags cuda ./cuda/...; \
	FAIRDP_DEVICE=cuda $(GO) test -count=1 -tags cuda -run 'OnDevice|DeviceCuda' ./trainer/ ./cmd/fairdp/
