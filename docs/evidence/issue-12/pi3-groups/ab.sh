#!/bin/bash
# usage: ab.sh BINDIR OUTDIR REPS MODEL BATCH "subset" ... (subset: 1-based indices into the lab's nodes)
BIN=$1; OUT=$2; REPS=$3; MODEL=$4; BATCH=$5; shift 5
mkdir -p $OUT
LAB=/tmp/pace/lab
$BIN/edgetrain-cli lab down --out $LAB >/dev/null 2>&1; rm -rf $LAB
$BIN/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $LAB > $OUT/lab.log 2>&1 || { echo lab failed; exit 1; }
mapfile -t ADDR < $LAB/nodes
ALL=$(paste -sd, $LAB/nodes)
$BIN/edgetrain-cli plan --nodes $ALL --key-file $LAB/cluster.key --model $MODEL --batch $BATCH --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --modes sync --objective time --json > $OUT/plan.json 2> $OUT/plan.err
for r in $(seq 1 $REPS); do
 for sub in "$@"; do
  nodes=""; for i in ${sub//,/ }; do nodes="$nodes,${ADDR[$((i-1))]}"; done; nodes=${nodes#,}
  $BIN/edgetrain-cli train --nodes $nodes --key-file $LAB/cluster.key --model $MODEL --batch $BATCH --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --json --mode sync > $OUT/train-${sub//,/_}-$r.json 2> $OUT/train-${sub//,/_}-$r.err
  python3 -c "import json,sys; j=json.load(open('$OUT/train-${sub//,/_}-$r.json')); print('$sub', j.get('training_seconds'))" 2>&1 | tail -1
 done
done
$BIN/edgetrain-cli lab down --out $LAB > /dev/null 2>&1
