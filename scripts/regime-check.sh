#!/bin/sh
# regime-check.sh OUTDIR: which training regime moves DPSGD's class-8 accuracy on the DPSGD-F paper's unbalanced
# MNIST (class 8 cut to 500 training images). One command for a GPU host, run from the repository root (or from the
# unpacked GPU bundle's folder, which carries it, bench/peer and bin/fairdp); it stops
# itself within REGIME_WALL seconds (default 400) and always leaves what it measured:
#
#   OUTDIR/dpsgdf_mnist_regimes.csv  method,regime,epochs,seed,epsilon,total,class2,class8,command
#   OUTDIR/status.txt                each part: finished, stopped by its budget, timed out or failed, and its seconds
#   OUTDIR/logs/                     every part's output; OUTDIR/env.txt the host, GPU, torch and fairdp versions
#
# Parts, in the background side by side (the GPU has room: fairdp's MNIST step is host-bound; 4 PyTorch lanes):
#   peer (PyTorch, bench/peer/bagdasaryan_mnist.py; Bagdasaryan et al. 2019's protocol, vmap per-sample gradients):
#     their regime (shuffled fixed batches, momentum 0.5, Normalize(0.1307, 0.3081)) DPSGD seeds 1 and 2, the
#     non-private SGD control, fairdp's regime (Poisson, no momentum, p/255), and their regime with one of the three
#     switched to fairdp's (sampling, momentum, normalisation), each to PEER_EPOCHS (59, their loop) or its budget,
#     in four lanes of two or three runs, the first runs of each lane first in priority;
#   fairdp (a) today's regime: --preset dpsgdf-mnist --algo dpsgd, and (b) their regime: the same with
#     --sampling shuffle --momentum 0.5 --image-mean 0.1307 --image-std 0.3081. A 2-epoch pilot of each, run while
#     the peer runs, measures the epoch time; both then run the largest number of epochs (at most FAIRDP_EPOCHS, 59)
#     that ends before the deadline. fairdp writes its report only at the end, so this choice is what keeps its
#     rows; a run cut anyway is stopped with SIGINT and keeps a resumable checkpoint (status.txt says how). If a
#     pilot fails on the GPU, both regimes run on the CPU engine instead (status.txt says so).
#
# Environment: FAIRDP_MNIST the folder of the four MNIST IDX files (default ../shared/data/mnist); FAIRDP_BIN
# (default: dist/fairdp-gpu-*/bin/fairdp, else bin/fairdp, else fairdp on PATH); FAIRDP_DEVICE cuda (default) or cpu; PYTHON
# (python3); PEER=0 skips the PyTorch parts, FAIRDP=0 the fairdp parts; REGIME_WALL seconds (400);
# FAIRDP_EPOCHS (59), PEER_EPOCHS (59), REGIME_LIMIT (0: all records; e.g. 2000 for a smoke test), PEER_DEVICE
# (auto). fairdp uses the RDP accountant (Balle et al. 2020 conversion) so that its ε compares with
# bench/results/dpsgdf_mnist60.csv; a shuffled run's ε is its receipt's valid bound (one Gaussian per epoch; the
# Poisson-rate figure is only privacy.shuffle.poisson_equivalent_epsilon). The peer's ε is the same accountant's
# figure for its steps, the same bound for shuffled batches (fairdp privacy --sampling shuffle).
set -u
out=${1:?usage: scripts/regime-check.sh OUTDIR}
start=$(date +%s)
wall=${REGIME_WALL:-400}
deadline=$((start + wall))
mkdir -p "$out/logs" "$out/rows" "$out/runs" || exit 1
out=$(cd "$out" && pwd)
csv=$out/dpsgdf_mnist_regimes.csv
status=$out/status.txt
: >"$status"
PYTHON=${PYTHON:-python3}
limit=${REGIME_LIMIT:-0}
fe=${FAIRDP_EPOCHS:-59}
pe=${PEER_EPOCHS:-59}
dev=${FAIRDP_DEVICE:-cuda}
mnist=${FAIRDP_MNIST:-../shared/data/mnist}
if [ ! -d "$mnist" ]; then
	echo "regime-check: MNIST folder $mnist not found (set FAIRDP_MNIST)" | tee -a "$status" >&2
	exit 1
fi
mnist=$(cd "$mnist" && pwd)
bin=${FAIRDP_BIN:-}
if [ -z "$bin" ]; then
	# The repository root with the bundle unpacked under dist/, or the bundle's own folder.
	for b in bin/fairdp dist/fairdp-gpu-*/bin/fairdp; do [ -x "$b" ] && bin=$b; done
fi
[ -n "$bin" ] || bin=$(command -v fairdp || true)
if [ -n "$bin" ] && [ -x "$bin" ]; then bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin"); else bin=; fi
# fairdp reads MNIST from DATA_DIR/mnist.
data=$out/data
mkdir -p "$data" && ln -sfn "$mnist" "$data/mnist"

left() { echo $((deadline - $(date +%s))); }
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$status"; }

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) CPUs)"
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "gpu: none seen by nvidia-smi"
	$PYTHON -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
	[ -n "$bin" ] && echo "fairdp: $bin ($("$bin" version 2>/dev/null | head -1))"
	echo "MNIST: $mnist; wall budget ${wall} s; REGIME_LIMIT $limit; fairdp device $dev"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

lim=""
[ "$limit" -gt 0 ] && lim="--limit $limit"

# ---- PyTorch peer: lanes of runs, each run bounded by what is left of the wall budget.
peer_run() { # name args...
	name=$1
	shift
	l=$(left)
	if [ "$l" -lt 30 ]; then
		note "peer $name: skipped, ${l} s left"
		return
	fi
	t0=$(date +%s)
	OMP_NUM_THREADS=2 timeout -k 5 $((l - 5)) "$PYTHON" bench/peer/bagdasaryan_mnist.py --data "$mnist" \
		--epochs "$pe" --budget $((l - 20)) --device "${PEER_DEVICE:-auto}" $lim ${bin:+--fairdp "$bin"} \
		--row-file "$out/rows/peer-$name.csv" "$@" >"$out/logs/peer-$name.out" 2>"$out/logs/peer-$name.log"
	rc=$?
	ep=$(cut -d, -f3 "$out/rows/peer-$name.csv" 2>/dev/null)
	note "peer $name: rc $rc, ${ep:-0} of $pe epochs, $(($(date +%s) - t0)) s"
}
peer_pid=""
if [ "${PEER:-1}" != 0 ]; then
	(
		if OMP_NUM_THREADS=2 timeout 120 "$PYTHON" bench/peer/bagdasaryan_mnist.py --check --device "${PEER_DEVICE:-auto}" \
			>"$out/logs/peer-check.log" 2>&1; then
			note "peer: $(tail -1 "$out/logs/peer-check.log")"
		else
			note "peer: DP-step check FAILED or did not run (logs/peer-check.log); peer rows are still written"
		fi
	) &
	peer_pid="$peer_pid $!"
	(
		peer_run theirs-dpsgd-s1 --method dpsgd --regime theirs --seed 1 --label theirs
		peer_run fairdp-dpsgd-s1 --method dpsgd --regime fairdp --seed 1 --label fairdp
	) &
	peer_pid="$peer_pid $!"
	(
		peer_run theirs-dpsgd-s2 --method dpsgd --regime theirs --seed 2 --label theirs
		peer_run theirs-poisson-s1 --method dpsgd --regime theirs --sampling poisson --seed 1 --label theirs-poisson
	) &
	peer_pid="$peer_pid $!"
	(
		peer_run theirs-m0-s1 --method dpsgd --regime theirs --momentum 0 --seed 1 --label theirs-momentum0
		peer_run theirs-p255-s1 --method dpsgd --regime theirs --normalize no --seed 1 --label theirs-p255
	) &
	peer_pid="$peer_pid $!"
	(
		peer_run theirs-sgd-s1 --method sgd --regime theirs --seed 1 --label theirs
		peer_run fairdp-sgd-s1 --method sgd --regime fairdp --seed 1 --label fairdp
		peer_run fairdp-dpsgd-s2 --method dpsgd --regime fairdp --seed 2 --label fairdp
	) &
	peer_pid="$peer_pid $!"
fi

# ---- fairdp: (a) today's regime, (b) theirs.
theirs_flags="--sampling shuffle --momentum 0.5 --optimizer sgd --image-mean 0.1307 --image-std 0.3081"
fairdp_run() { # name epochs extra-flags; prints nothing, leaves runs/NAME and logs/fairdp-NAME.log
	name=$1 epochs=$2 extra=$3
	l=$(left)
	t0=$(date +%s)
	rm -rf "$out/runs/$name" "$out/runs/$name.ck"
	# SIGINT: fairdp saves the last completed epoch in the checkpoint and exits. A --device cuda run
	# cannot be checkpointed (its parameters and noise keys live on the device): it gets none.
	ck="--checkpoint $out/runs/$name.ck"
	[ "$dev" = cuda ] && ck=
	timeout -s INT -k 20 $((l > 25 ? l - 15 : 10)) "$bin" train --preset dpsgdf-mnist --algo dpsgd --epochs "$epochs" \
		--seed 1 --data-dir "$data" --device "$dev" --accountant rdp $lim $extra --quiet \
		$ck --out "$out/runs/$name" >"$out/logs/fairdp-$name.log" 2>&1
	rc=$?
	note "fairdp $name: rc $rc, $epochs epochs asked, $(($(date +%s) - t0)) s"
}
fairdp_row() { # name regime-label extra-flags
	rep=$out/runs/$1/report.json
	[ -f "$rep" ] || return 0
	"$PYTHON" - "$rep" "$2" "$bin" "$3" "$data" "$dev" >>"$csv" <<'EOF'
import json, sys
rep, regime, binary, extra, data, dev = sys.argv[1:]
r = json.load(open(rep))
acc = {g["group"]: g["accuracy"] for g in r["test"]["groups"]}
cmd = (f"fairdp train --preset dpsgdf-mnist --algo dpsgd --epochs {r['epochs']} --seed 1 --data-dir DATA --device {dev} "
       f"--accountant rdp {extra}").strip()
print(",".join(["dpsgd", regime, str(r["epochs"]), "1", "%.4f" % r["privacy"]["epsilon"], "%.4f" % r["test"]["accuracy"],
                "%.4f" % acc["2"], "%.4f" % acc["8"], '"' + " ".join(cmd.split()) + '"']))
EOF
}
fairdp_pid=""
if [ "${FAIRDP:-1}" != 0 ] && [ -z "$bin" ]; then
	note "fairdp: no binary (set FAIRDP_BIN or unpack the GPU bundle under dist/): fairdp parts skipped"
elif [ "${FAIRDP:-1}" != 0 ]; then
	(
		# Pilots: two epochs of each regime, side by side, under the peer's load (which starts while their
		# first epoch runs): the slowest epoch sets the pace (per, seconds; 0 when a pilot failed).
		pilots() {
			fairdp_run pilot-a 2 "" &
			fairdp_run pilot-b 2 "$theirs_flags" &
			wait
			per=0
			for p in pilot-a pilot-b; do
				s=$("$PYTHON" -c 'import json,sys; json.load(open(sys.argv[2])); print(int(max(json.loads(l)["seconds"] for l in open(sys.argv[1]))) + 1)' \
					"$out/runs/$p/metrics.jsonl" "$out/runs/$p/report.json" 2>/dev/null || echo 0)
				if [ "$s" -eq 0 ]; then
					per=0
					break
				fi
				[ "$s" -gt "$per" ] && per=$s
			done
		}
		pilots
		if [ "$per" -eq 0 ] && [ "$dev" != cpu ]; then
			note "fairdp: a pilot on $dev failed (logs/fairdp-pilot-*.log, kept as *.$dev.log); trying the CPU engine"
			for p in pilot-a pilot-b; do mv "$out/logs/fairdp-$p.log" "$out/logs/fairdp-$p.$dev.log"; done
			dev=cpu
			pilots
		fi
		if [ "$per" -eq 0 ]; then
			note "fairdp: a pilot failed (logs/fairdp-pilot-*.log); no full runs"
			exit 0
		fi
		fairdp_row pilot-a fairdp ""
		fairdp_row pilot-b theirs "$theirs_flags"
		# Load and set-up took the pilot's wall time less its training seconds; allow 20 % for changing load.
		l=$(left)
		e=$(((l - 30) * 10 / (per * 12)))
		[ "$e" -gt "$fe" ] && e=$fe
		note "fairdp: pilot epoch ${per} s, ${l} s left: full runs of $e epochs"
		if [ "$e" -gt 2 ]; then # 2 epochs: the pilots are those runs
			fairdp_run a "$e" "" &
			fairdp_run b "$e" "$theirs_flags" &
			wait
			fairdp_row a fairdp ""
			fairdp_row b theirs "$theirs_flags"
		fi
		for r in a b; do
			[ -f "$out/runs/$r/report.json" ] || [ ! -d "$out/runs/$r.ck" ] ||
				note "fairdp $r: cut before its end; resume with the same command plus --resume (checkpoint $out/runs/$r.ck)"
		done
	) &
	fairdp_pid=$!
fi

# shellcheck disable=SC2086
wait $peer_pid $fairdp_pid
[ -f "$csv" ] || : >"$csv"
{
	echo "method,regime,epochs,seed,epsilon,total,class2,class8,command"
	cat "$csv"
	for f in "$out"/rows/peer-*.csv; do
		[ -f "$f" ] && cat "$f"
	done
} >"$csv.tmp"
mv "$csv.tmp" "$csv"
note "done in $(($(date +%s) - start)) s: $(($(wc -l <"$csv") - 1)) rows in $csv"
cat "$csv"
