#!/bin/bash
# Default objpert against `--tune` (3 seeds, ε = 0.5 and 1) on the wide synthetic table, Adult and the
# 375-record table; prints the mean test error per cell. Usage: tabular_tune_objpert.sh FAIRDP SYN OUTDIR
# [extra --tune flags], SYN the folder of the synthetic tables (bench/tabular_synthetic.py writes them).
BIN=$1; SYN=$2; OUT=$3; shift 3
mkdir -p $OUT
jobs_list=()
for set in wide adult small; do
  case $set in
    wide) data="--dataset $SYN/syn_n20000_d100_p10_s1.csv --schema $SYN/syn_n20000_d100_p10_s1.schema.json";;
    adult) data="--dataset adult";;
    small) data="--dataset $SYN/syn_n500_d5_p50_s1.csv --schema $SYN/syn_n500_d5_p50_s1.schema.json";;
  esac
  for eps in 0.5 1; do for seed in 1 2 3; do for v in default tune; do
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
    r=json.load(open(f)); rows.setdefault((s,e,v),[]).append(r["test"]["error"])
for k in sorted(rows): print(k, len(rows[k]), "%.4f"%st.mean(rows[k]), " ".join("%.4f"%x for x in rows[k]))
PY
