#!/bin/sh
# Builds the GPU bundle (`make gpu-bundle`): dist/fairdp-gpu-<version>.tar.gz
# with the GPU-enabled fairdp, the prebuilt cuda-tagged test binaries, the
# benchmark binaries, bench/peer (PyTorch/Opacus comparison) and
# gpu-check.sh, for a bare CUDA host: no Go, no network. Every executable may
# need only libc, libm, libdl, libpthread, libstdc++, libgcc_s and the
# driver's libcuda.so.1 (cuBLAS is dlopened at run time), so the bundle uses
# the portable BLAS (package gemm's own kernels), not OpenBLAS; this is
# checked, as is the 40 MiB size limit.
#
# Usage: scripts/gpu-bundle.sh VERSION STUBDIR. Needs cuda.h; the binaries
# link against libcuda.so in STUBDIR (the stand-in driver's, soname
# libcuda.so.1, the same as the driver's).
set -eu
version=${1:?usage: gpu-bundle.sh VERSION STUBDIR}
stub=$(cd "${2:?usage: gpu-bundle.sh VERSION STUBDIR}" && pwd)
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
name=fairdp-gpu-$version
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/$name
mkdir -p "$b/bin" "$b/tree/cuda" "$b/tree/trainer" "$b/tree/fermi" "$b/tree/loaders" "$b/tree/models" "$b/bench"

export CGO_LDFLAGS="-L$stub ${CGO_LDFLAGS:-}"
flags="-trimpath -ldflags=-s"
echo "gpu-bundle: building fairdp (tags cuda) and the test binaries"
$GO build -tags cuda $flags -o "$b/bin/fairdp" ./cmd/fairdp
# Each test binary runs in a copy of its package directory (tree/), with
# the files its tests read relative to it.
# cmd/fairdp's test binary (11 MB compressed) would take the bundle over 40 MiB: gpu-check.sh runs
# bin/fairdp train --device cuda itself instead.
# trainer's and fermi's test binaries are built without inlining (-l): gpu-check.sh runs only
# their on-device correctness tests (no timings), and it keeps the bundle under 40 MiB (0.9 MB
# less each, gzipped). fairdp, cuda.test and models.test, which gpu-check times, keep it.
for p in cuda trainer fermi; do
	gc=""
	[ "$p" != cuda ] && gc="-gcflags=all=-l"
	$GO test -c -tags cuda $flags $gc -o "$b/tree/$p/$(basename "$p").test" "./$p"
done
$GO test -c $flags -o "$b/tree/models/models.test" ./models
cp -r cuda/kernels cuda/ptx "$b/tree/cuda/"
cp -r trainer/testdata "$b/tree/trainer/"
cp -r loaders/testdata "$b/tree/loaders/"
cp -r bench/peer "$b/bench/"
cp scripts/gpu-check.sh scripts/regime-check.sh "$b/"
cat >"$b/README" <<EOT
fairdp GPU bundle $version ($(git rev-parse --short HEAD 2>/dev/null || echo unknown), built $(date -u +%Y-%m-%d)).
On a CUDA host (NVIDIA driver R520+, compute capability 7.0+, cuBLAS 11, 12 or 13 on the
loader's path or FAIRDP_CUBLAS=/path/to/libcublas.so.N), as root, no Go or network needed:

  ./gpu-check.sh RESULTS_DIR

bin/fairdp is GPU-enabled (train --device cuda; --device cpu without a GPU); it needs the
driver's libcuda.so.1 to start. See docs/gpu.md in the source tree.
EOT

allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libcuda\.so\.1|ld-linux-x86-64\.so\.2)$'
bad=0
for f in $(find "$b" -type f -perm -u+x); do
	head -c 4 "$f" | grep -q ELF || continue
	for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		if ! echo "$lib" | grep -Eq "$allowed"; then
			echo "gpu-bundle: ${f#$stage/} needs $lib, which a bare CUDA host lacks" >&2
			bad=1
		fi
	done
done
[ "$bad" = 0 ] || exit 1

mkdir -p dist
out=dist/$name.tar.gz
tar -C "$stage" -cf - "$name" | gzip -9 >"$out"
size=$(stat -c %s "$out")
limit=$((40 * 1024 * 1024))
if [ "$size" -gt "$limit" ]; then
	echo "gpu-bundle: $out is $size bytes, over the 40 MiB limit" >&2
	exit 1
fi
echo "gpu-bundle: $out ($((size / 1024)) KiB); every executable needs only libc, libm, libdl, libpthread, libstdc++, libgcc_s and libcuda.so.1"
