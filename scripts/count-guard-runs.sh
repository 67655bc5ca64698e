#!/usr/bin/env bash
# count-guard-runs.sh OUTDIR SET: the runs of bench/results/dpsgdf_count_guard.md.
# SET adult: DPSGD (20 epochs), Naïve and DPSGD-F under each count guard (19 epochs: the
# paper's equal-ε protocol, dpsgdf.EqualEpsilonEpochs), seeds 1-3, each with --baseline.
# SET mnist: DPSGD-F under each count guard (MNIST_GUARDS, default all three) and Naïve
# (unless MNIST_NAIVE is empty), MNIST_EPOCHS epochs (default 20), seeds MNIST_SEEDS
# (default 1), resumable (rerun the script after a kill), one run per background process (GOMAXPROCS=1 each), in Bagdasaryan et
# al. 2019's regime with Poisson batches: SGD momentum 0.5, Normalize(0.1307, 0.3081)
# (bench/results/dpsgdf_regimes.md: the setting under which DPSGD's class-8 effect
# reproduces; Poisson keeps the receipt's amplification valid). FAIRDP (default: fairdp on PATH) and DATA (default
# ../shared/data) name the binary and the data folder. Each run writes OUTDIR/<name>/.
set -euo pipefail
out=$1 set=$2
fairdp=${FAIRDP:-fairdp}
data=${DATA:-../shared/data}
run() { # name args...
	local name=$1
	shift
	[ -f "$out/$name/report.json" ] && return 0
	mkdir -p "$out"
	echo "$*" >"$out/$name.cmd"
	nice -n 10 "$fairdp" train "$@" --data-dir "$data" --out "$out/$name" --quiet >"$out/$name.log" 2>&1 ||
		echo "FAILED $name" >>"$out/failed.txt"
}
case $set in
adult)
	for s in 1 2 3; do
		run adult-dpsgd-s$s --preset dpsgdf-adult --algo dpsgd --epochs 20 --seed $s --baseline
		run adult-naive-s$s --preset dpsgdf-adult --algo naive --epochs 19 --seed $s --baseline
		for g in c0 floor smooth; do
			run adult-dpsgdf-$g-s$s --preset dpsgdf-adult --epochs 19 --seed $s --count-guard $g --baseline
		done
	done
	;;
mnist)
	e=${MNIST_EPOCHS:-20}
	regime="--momentum 0.5 --image-mean 0.1307 --image-std 0.3081"
	for s in ${MNIST_SEEDS:-1}; do
		for g in ${MNIST_GUARDS:-c0 floor smooth}; do
			n=mnist-dpsgdf-$g-e$e-s$s
			GOMAXPROCS=1 run $n --preset dpsgdf-mnist --epochs $e --seed $s --count-guard $g $regime --checkpoint "$out/ck-$n" --resume &
		done
		n=mnist-naive-e$e-s$s
		[ -z "${MNIST_NAIVE-1}" ] || GOMAXPROCS=1 run $n --preset dpsgdf-mnist --algo naive --epochs $e --seed $s $regime --checkpoint "$out/ck-$n" --resume &
	done
	wait
	;;
*)
	echo "usage: $0 OUTDIR adult|mnist" >&2
	exit 2
	;;
esac
