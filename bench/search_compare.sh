#!/usr/bin/env bash
# search_compare.sh: runs every private search of the CLI (`fairdp train
# ... --tune`) with fixed seeds and keeps each run's stdout and
# report.json, so that two builds can be compared byte for byte (a
# refactor of the search loop must pick the same trials and the same
# chosen model).
#
#   bench/search_compare.sh run BIN DIR       # run BIN's searches into DIR
#   bench/search_compare.sh diff DIR_A DIR_B  # compare two such folders
#
# run runs each search with --quiet for every seed of SEEDS (default
# "3 2 4", which draw K = 1, 3 and 6 trials), keeping stdout and
# report.json, then again without --quiet for every seed of PROGRESS_SEEDS
# (default "2"), keeping the "tune:" lines (the header and every trial's
# progress line). diff compares stdout exactly but for the output folder's
# path and the run's duration, report.json after dropping the fields that
# time the run ("seconds", "*_seconds", "wall*") and writing its own
# folder OUT in both, and the "tune:" lines exactly; it exits 1 on any
# difference. The built-in data (FAIRDP_DATA, default ../shared/data from
# the repository root) must be present; Adult is the data set of every
# search but tailoring's (synthetic groups) and SteFFLe's (2,000 of Adult's
# records).
set -euo pipefail

runs() { # name and arguments of each search
	cat <<'EOF'
dpsgd --algo dpsgd --tune --epsilon 1
fermi --algo fermi --tune --epsilon 1
objpert --algo objpert --tune --epsilon 1
postproc --algo postproc --base dpsgd --fairness dp --tune --epsilon 1
oracle --algo oracle --tune --epsilon 1
tailoring --algo tailoring --task regression --tune --rho 2 --groups 400,50,100 --slopes 0,-4,4 --steps 20
steffle --algo steffle --limit 2000 --tune --epsilon 2 --tune-trials 3
EOF
}

case "${1:-}" in
run)
	bin=$(realpath "$2")
	dir=$3
	: "${FAIRDP_DATA:=$(realpath "$(dirname "$0")/../../shared/data")}"
	export FAIRDP_DATA
	mkdir -p "$dir"
	for seed in ${SEEDS:-3 2 4}; do
		runs | while read -r name args; do
			out="$dir/$name-s$seed"
			start=$(date +%s)
			# shellcheck disable=SC2086 # args are words
			if ! "$bin" train $args --seed "$seed" --quiet --out "$out" >"$out.stdout" 2>"$out.stderr"; then
				echo "$name seed $seed: failed (see $out.stderr)" >&2
			fi
			echo "$name seed $seed: $(($(date +%s) - start)) s"
		done
	done
	# Without --quiet a search prints its header and one progress line per
	# trial ("tune: …"); keep those lines of one seed's runs.
	for seed in ${PROGRESS_SEEDS:-2}; do
		runs | while read -r name args; do
			# shellcheck disable=SC2086 # args are words
			"$bin" train $args --seed "$seed" 2>&1 | grep '^tune:' >"$dir/$name-s$seed.progress" || true
		done
	done
	;;
diff)
	a=$2 b=$3
	status=0
	for f in "$a"/*.stdout; do
		n=$(basename "$f" .stdout)
		# The output folder and the run's duration ("…, 3.7 s" ending the
		# summary line) are the only parts of stdout that may differ.
		norm() { sed -E -e "s#$1/$n#OUT#g" -e 's/, [0-9]+(\.[0-9]+)? s$/, TIME s/' "$1/$n.stdout"; }
		if ! diff <(norm "$a") <(norm "$b") >"$b/$n.stdout.diff"; then
			echo "$n: stdout differs (see $b/$n.stdout.diff)"
			status=1
		fi
		if ! python3 - "$a/$n" "$b/$n" <<'EOF'; then
import json, sys

def strip(v):
    """v without the fields that time the run."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items()
                if not (k == "seconds" or k.endswith("_seconds") or k.startswith("wall"))}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v

def load(out):
    """out's report.json, its own path (config.out) written OUT."""
    return strip(json.loads(open(out + "/report.json").read().replace(json.dumps(out)[1:-1], "OUT")))

a, b = (load(p) for p in sys.argv[1:3])
if a != b:
    print(sys.argv[1], "and", sys.argv[2], "differ beyond timing fields")
    sys.exit(1)
EOF
			status=1
		else
			echo "$n: stdout and report.json identical (timing fields aside)"
		fi
	done
	for f in "$a"/*.progress; do
		n=$(basename "$f")
		if cmp -s "$f" "$b/$n"; then
			echo "$n: progress lines identical ($(wc -l <"$f") lines)"
		else
			echo "$n: progress lines differ"
			status=1
		fi
	done
	exit $status
	;;
*)
	sed -n '2,22p' "$0"
	exit 2
	;;
esac
