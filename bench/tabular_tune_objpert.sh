#!/bin/bash
# Default objpert against `--tune` (ε = 0.5 and 1) on the wide synthetic table, Adult, the 375- and 3,750-record
# tables and Credit; prints the mean test error per cell. Usage: tabular_tune_objpert.sh FAIRDP SYN OUTDIR
# [extra --tune flags], SYN the folder of the synthetic tables (bench/tabular_synthetic.py writes them).
# SEEDS (default "1 2 3") picks the seeds, SETS (default "wide adult small mid credit") the tables, VARIANTS
# (default "default tune") the runs.
BIN=$1; SYN=$2; OUT=$3; shift 3
SEEDS=${SEEDS:-1 2 3}; SETS=${SETS:-wide adult small mid credit}; VARIANTS=${VARIANTS:-default tune}
mkdir -p $OUT
jobs_list=()
for set in $SETS; do
  case $set in
    wide) data="--dataset $SYN/syn_n20000_d100_p10_s1.csv --schema $SYN/syn_n20000_d100_p10_s1.schema.json";;
    adult) data="--dataset adult";;
    small) data="--dataset $SYN/syn_n500_d5_p50_s1.csv --schema $SYN/syn_n500_d5_p50_s1.schema.json";;
    mid) data="--dataset $SYN/syn_n5000_d20_p25_s1.csv --schema $SYN/syn_n5000_d20_p25_s1.schema.json";;
    credit) data="--dataset credit";;
  esac
  for eps in 0.5 1; do for seed in $SEEDS; do for v in $VARIANTS; do
    d=$OUT/$set-$eps-$seed-$v
    t=""; [ $v = tune ] && t="--tune $*"
    jobs_list+=("OPENBLAS_NUM_THREADS=1 nice $BIN train --algo objpert $t $data --epsilon $eps --seed $seed --quiet --out $d > $d.log 2>&1")
  done; done; done
done
printf '%s\n' "${jobs_list[@]}" | xargs -P 2 -I{} bash -c '{}'
python3 - $OUT <<'PY'
import json,sys,glob,os,statistics as st
out=sys.argv[1]; rows={}
for f in glob.glob(out+"/*/report.json"):
    name=os.path.basename(os.path.dirname(f)); s,e,seed,v=name.split('-')
    r=json.load(open(f)); rows.setdefault((s,e,v),[]).append((int(seed),r["test"]["error"]))
for k in sorted(rows):
    xs=[x for _,x in sorted(rows[k])]
    print(k, len(xs), "%.4f"%st.mean(xs), " ".join("%.4f"%x for x in xs))
PY
