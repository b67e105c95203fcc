#!/bin/bash
# usage: plans.sh BINDIR OUTDIR N  -- lab up with BINDIR, N plans of lenet5 b128 and mlp b32, lab down
BIN=$1; OUT=$2; N=${3:-3}
mkdir -p $OUT
LAB=/tmp/exp/lab-$(basename $OUT)
$BIN/edgetrain-cli lab down --out $LAB >/dev/null 2>&1
rm -rf $LAB
$BIN/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 $LABARGS --out $LAB > $OUT/lab.log 2>&1 || { echo lab failed; exit 1; }
NODES=$(paste -sd, $LAB/nodes)
for i in $(seq 1 $N); do
 for job in "lenet5 128" "mlp 32"; do
  set -- $job
  $BIN/edgetrain-cli plan --nodes $NODES --key-file $LAB/cluster.key --model $1 --batch $2 --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --json --modes sync --objective time > $OUT/plan-$1-$2-$i.json 2> $OUT/plan-$1-$2-$i.err
 done
done
$BIN/edgetrain-cli lab down --out $LAB > /dev/null 2>&1
echo done
