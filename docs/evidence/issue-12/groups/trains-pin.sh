#!/bin/bash
# usage: trains.sh BINDIR OUTDIR REPS "subset1" "subset2" ... (subset: indices into nodes file, e.g. "3,4,5")
BIN=$1; OUT=$2; REPS=$3; shift 3
mkdir -p $OUT
LAB=/tmp/exp/lab-train
$BIN/edgetrain-cli lab down --out $LAB >/dev/null 2>&1; rm -rf $LAB
$BIN/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $LAB > $OUT/lab.log 2>&1 || { echo lab failed; exit 1; }
mapfile -t ADDR < $LAB/nodes
if [ -n "$PIN" ]; then python3 -c "
import json,subprocess
j=json.load(open(\"$LAB/lab.json\"))
for i,n in enumerate(j[\"nodes\"]):
    cpu=eval(\"$PIN\".replace(\"i\",str(i)))
    subprocess.run([\"taskset\",\"-a\",\"-p\",\"-c\",str(cpu),str(n[\"pid\"])],stdout=subprocess.DEVNULL)
    print(n[\"name\"],\"cpu\",cpu)
"; fi
for r in $(seq 1 $REPS); do
 for sub in "$@"; do
  nodes=""; for i in ${sub//,/ }; do nodes="$nodes,${ADDR[$((i-1))]}"; done; nodes=${nodes#,}
  $BIN/edgetrain-cli train --nodes $nodes --key-file $LAB/cluster.key --model ${MODEL:-lenet5} --batch ${BATCH:-128} --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --json --mode sync > $OUT/train-${sub//,/_}-$r.json 2> $OUT/train-${sub//,/_}-$r.err
  python3 -c "import json,sys; j=json.load(open('$OUT/train-${sub//,/_}-$r.json')); print('$sub', j.get('training_seconds'))" 2>&1 | tail -1
 done
done
$BIN/edgetrain-cli lab down --out $LAB > /dev/null 2>&1
