#!/bin/sh
# gpu-check.sh RESULTS_DIR: fairdp's one-command acceptance run on a CUDA host,
# from an unpacked GPU bundle (make gpu-bundle). No Go, no network; within
# about 8 minutes; every result goes under RESULTS_DIR:
#   nvidia-smi.txt            nvidia-smi's report (or why there is none)
#   device.txt                the device fairdp opens (TestDeviceProbe)
#   test-<pkg>.txt            the on-device tests with FAIRDP_REQUIRE_DEVICE=1 (cuda, trainer, fermi)
#   cmd-<algo>/               bin/fairdp train --device cuda runs (dpsgd, dpsgdf, fermi, and dpsgd
#                             with --tf32 in cmd-dpsgd-tf32) and their output
#   bench-gpu.txt             device-resident steps: logistic, MLP, MNIST CNN, VGG-like,
#                             plain and DP-SGD, batch 64 and 256 (samples/s, device-MB)
#   bench-gpu-tf32.txt        the DP-SGD steps again with TF32 tensor cores (--tf32)
#   gpu-mem.csv               nvidia-smi's memory.used sampled every 100 ms during bench-gpu
#   bench-cpu.txt             the CPU benchmark table on every core (models' TestBenchTable)
#   bench-peer.txt            PyTorch (and Opacus when `import opacus` works) on the same GPU
#   summary.txt               the table printed at the end
# Without a GPU (no driver, no device) it says so and skips the GPU parts;
# the CPU benchmark still runs. Exit status: 1 if a test failed, else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: gpu-check.sh RESULTS_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
say() { echo "gpu-check: $*" | tee -a "$summary"; }
failed=0
# Time limits per part (seconds), together inside 8 minutes. FAIRDP_FULL=1 adds the larger CNN
# comparisons to the trainer's on-device tests (seconds on a GPU, minutes on the emulator).
T_TESTS=${T_TESTS:-120}
T_GPU=${T_GPU:-90}
T_TF32=${T_TF32:-45}
T_CPU=${T_CPU:-120}
T_PEER=${T_PEER:-90}

say "bundle $(head -1 "$here/README" 2>/dev/null | sed 's/^fairdp GPU bundle //; s/\.$//'); host $(uname -n), $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC')"

# 1. nvidia-smi
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
	say "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
else
	echo "nvidia-smi not found: no NVIDIA driver installed" >"$out/nvidia-smi.txt"
	say "nvidia-smi: not found (no NVIDIA driver)"
fi

# 2. is there a device fairdp can open?
gpu=no
cd "$here/tree/cuda"
FAIRDP_DEVICE=cuda timeout 60 ./cuda.test -test.run '^TestDeviceProbe$' -test.v -test.count=1 >"$out/device.txt" 2>&1
dev=$(sed -n 's/.*DEVICE: //p' "$out/device.txt" | head -1)
if [ -n "$dev" ]; then
	gpu=yes
	say "device: $dev"
elif grep -q 'error while loading shared libraries' "$out/device.txt"; then
	say "device: none: $(grep -o 'lib[^:]*: cannot open shared object file' "$out/device.txt" | head -1) (the NVIDIA driver's library); GPU parts SKIPPED"
else
	say "device: none: $(grep -o 'ErrUnavailable.*\|no usable CUDA device.*\|cuBLAS not found.*\|no CUDA device.*' "$out/device.txt" | head -1 | cut -c1-300); GPU parts SKIPPED"
fi

# 3. the on-device tests (the suite make test-gpu runs), each binary in its package directory
if [ "$gpu" = yes ]; then
	for p in cuda trainer fermi; do
		bin=$(basename "$p").test
		run=""
		[ "$p" != cuda ] && run="-test.run OnDevice|DeviceCuda"
		log=$out/test-$(echo "$p" | tr / -).txt
		(cd "$here/tree/$p" && FAIRDP_FULL=${FAIRDP_FULL:-1} FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 timeout "$T_TESTS" "./$bin" -test.count=1 -test.v $run) >"$log" 2>&1
		rc=$?
		n_pass=$(grep -c '^--- PASS' "$log")
		n_fail=$(grep -c '^--- FAIL' "$log")
		if [ $rc -eq 0 ]; then
			say "tests $p: PASS ($n_pass tests)"
		else
			failed=1
			say "tests $p: FAIL (exit $rc, $n_fail failed, $n_pass passed; see $(basename "$log"))"
		fi
	done
	# The command on the device (its own test binary would not fit the bundle): each run must
	# succeed and report the GPU as its backend.
	# dpsgd-tf32: the same run with --tf32 (compare test_error in cmd-dpsgd*/metrics.jsonl).
	for run in dpsgd:mlp dpsgdf:mlp fermi:logistic dpsgd-tf32:mlp; do
		algo=${run%%:*}
		d=$out/cmd-$algo
		mkdir -p "$d"
		extra=""
		case $algo in *-tf32) algo=${algo%-tf32} extra=--tf32 ;; esac
		timeout 120 "$here/bin/fairdp" train --device cuda --algo "$algo" $extra --model "${run#*:}" --limit 2000 --epochs 1 --seed 4 \
			--quiet --out "$d" >"$d/output.txt" 2>&1
		rc=$?
		if [ $rc -eq 0 ] && grep -q '"backend": *"cuda: cuda:' "$d/report.json" 2>/dev/null; then
			say "fairdp train --device cuda --algo $algo: PASS"
		else
			failed=1
			say "fairdp train --device cuda --algo $algo: FAIL (exit $rc; see cmd-$algo/output.txt)"
		fi
	done
else
	say "tests: SKIPPED (no device)"
fi

# 4. samples/s on the GPU, with nvidia-smi sampling the memory in use
if [ "$gpu" = yes ]; then
	smi=""
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$out/gpu-mem.csv" 2>/dev/null &
		smi=$!
	fi
	(cd "$here/tree/cuda" && FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 timeout "$T_GPU" ./cuda.test -test.run '^$' \
		-test.bench 'DeviceNetStep' -test.benchtime 20x) >"$out/bench-gpu.txt" 2>&1 || say "bench-gpu: exit $? (see bench-gpu.txt)"
	[ -n "$smi" ] && kill "$smi" 2>/dev/null
	peak=$(sort -n "$out/gpu-mem.csv" 2>/dev/null | tail -1)
	say "GPU memory in use, peak during bench-gpu (nvidia-smi): ${peak:-?} MiB"
	# The same steps with TF32 tensor cores for the forward and backward GEMMs (--tf32).
	(cd "$here/tree/cuda" && FAIRDP_BENCH_TF32=1 FAIRDP_DEVICE=cuda FAIRDP_REQUIRE_DEVICE=1 timeout "$T_TF32" ./cuda.test -test.run '^$' \
		-test.bench 'DeviceNetStep/.*/dpsgd/' -test.benchtime 20x) >"$out/bench-gpu-tf32.txt" 2>&1 || say "bench-gpu-tf32: exit $? (see bench-gpu-tf32.txt)"
else
	echo "SKIPPED: no device" >"$out/bench-gpu.txt"
	echo "SKIPPED: no device" >"$out/bench-gpu-tf32.txt"
fi

# 5. the CPU with every core: the benchmark table (logistic 1024, MNIST CNN 256, VGG-like 64; plain, DP-SGD, DP-FERMI)
(cd "$here/tree/models" && FAIRDP_BENCH_TABLE=1 FAIRDP_BENCH_STEPS=${FAIRDP_BENCH_STEPS:-3} timeout "$T_CPU" ./models.test \
	-test.run '^TestBenchTable$' -test.v -test.timeout 0) >"$out/bench-cpu.txt" 2>&1 || say "bench-cpu: exit $? (see bench-cpu.txt; a time limit of ${T_CPU}s)"

# 6. PyTorch and Opacus on the same GPU
if [ "$gpu" = yes ] && python3 -c 'import torch' >/dev/null 2>&1; then
	timeout "$T_PEER" python3 "$here/bench/peer/peer.py" >"$out/bench-peer.txt" 2>&1 || say "bench-peer: exit $? (see bench-peer.txt)"
else
	echo "SKIPPED: $([ "$gpu" = yes ] && echo "python3 -c 'import torch' fails" || echo "no device")" >"$out/bench-peer.txt"
	say "peer (PyTorch/Opacus): $(cat "$out/bench-peer.txt")"
fi

# 7. the summary table: one row per model, step and batch
{
	echo
	echo "| model | step | batch | fairdp GPU samples/s | fairdp device-MB | PyTorch/Opacus GPU samples/s | peak MB |"
	echo "|---|---|---|---|---|---|---|"
	grep '^BenchmarkDeviceNetStep/' "$out/bench-gpu.txt" 2>/dev/null | sed 's|^BenchmarkDeviceNetStep/||' |
		awk '{split($1, k, "/"); sub(/^b/, "", k[3]); sub(/-[0-9]+$/, "", k[3]); sps = "?"; mb = "?";
			for (i = 2; i < NF; i++) { if ($(i+1) == "samples/s") sps = $i; if ($(i+1) == "device-MB") mb = $i }
			print k[1], k[2], k[3], sps, mb}' >"$out/.gpu-rows"
	grep '^PEER ' "$out/bench-peer.txt" 2>/dev/null | awk '{print $2, $3, $4, $5, $6}' >"$out/.peer-rows"
	awk 'FILENAME == ARGV[1] { peer[$1 " " $2 " " $3] = $4 " | " $5; next }
		{ p = peer[$1 " " $2 " " $3]; if (p == "") p = "— | —"; print "| " $1 " | " $2 " | " $3 " | " $4 " | " $5 " | " p " |" }' \
		"$out/.peer-rows" "$out/.gpu-rows"
	[ -s "$out/.gpu-rows" ] || echo "| (no GPU rows: no device) | | | | | | |"
	rm -f "$out/.gpu-rows" "$out/.peer-rows"
	echo
	echo "TF32 (--tf32), DP-SGD samples/s, from bench-gpu-tf32.txt; test errors: cmd-dpsgd and cmd-dpsgd-tf32:"
	grep '^BenchmarkDeviceNetStep/' "$out/bench-gpu-tf32.txt" 2>/dev/null | sed 's|^BenchmarkDeviceNetStep/||' |
		awk '{sps = "?"; for (i = 2; i < NF; i++) if ($(i+1) == "samples/s") sps = $i; print "  " $1, sps}'
	for d in cmd-dpsgd cmd-dpsgd-tf32; do
		echo "  $d: test_error $(tail -1 "$out/$d/metrics.jsonl" 2>/dev/null | grep -o '"test_error": *[0-9.e-]*' | sed 's/.*: *//')"
	done
	echo
	echo "CPU ($(nproc) cores), from bench-cpu.txt:"
	grep '^| ' "$out/bench-cpu.txt" 2>/dev/null || echo "(no CPU table: see bench-cpu.txt)"
} | tee -a "$summary"
say "results in $out; $([ $failed = 0 ] && echo "no test failed" || echo "SOME TESTS FAILED")"
exit $failed
