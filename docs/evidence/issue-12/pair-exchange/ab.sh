#!/bin/bash
# ab.sh BIN OUT [PLANS] [REPS]: on a fresh lab pi3:2,pi4:2,pi5:1 (nodes 1,2 Pi 3B; 3,4 Pi 4B;
# 5 Pi 5): PLANS plans of LeNet-5 b128 (8192 training images, 1024 test, one epoch, sync, by
# time), then each group below trained REPS times straight (no planning), the same job.
# cmp.py OUT compares the plans' predictions with the trainings.
B=$1; O=$2; P=${3:-3}; R=${4:-2}; L=$O/lab
GROUPS_=("5" "4,5" "3,4" "3,4,5" "1,2" "1,5" "1,3,5" "1,2,3,4,5")
JOB="--model lenet5 --batch 128 --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --mode sync"
mkdir -p $O; $B/edgetrain-cli lab down --out $L >/dev/null 2>&1; rm -rf $L
$B/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $L > $O/lab.log 2>&1 || { echo lab failed; exit 1; }
mapfile -t ADDR < $L/nodes
for i in $(seq 1 $P); do
  $B/edgetrain-cli plan --nodes $(paste -sd, $L/nodes) --key-file $L/cluster.key $JOB --objective time --json > $O/plan$i.json 2> $O/plan$i.log
done
for r in $(seq 1 $R); do
  for g in "${GROUPS_[@]}"; do
    nodes=""; for i in ${g//,/ }; do nodes="$nodes,${ADDR[$((i-1))]}"; done
    $B/edgetrain-cli train --nodes ${nodes#,} --key-file $L/cluster.key $JOB --json > $O/train-${g//,/_}-$r.json 2> $O/train-${g//,/_}-$r.err
  done
done
cp $L/logs/*.log $O/ 2>/dev/null
$B/edgetrain-cli lab down --out $L >/dev/null 2>&1
