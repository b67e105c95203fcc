#!/bin/bash
# Same as ab.sh, but after lab up each device's CPU quota period is cut to the kernel's 1 ms
# floor of quota (period = 1 ms / cores, at least 2 ms), same share.
BIN=$1; OUT=$2; REPS=$3; MODEL=$4; BATCH=$5; shift 5
mkdir -p $OUT
LAB=/tmp/pace/lab
$BIN/edgetrain-cli lab down --out $LAB >/dev/null 2>&1; rm -rf $LAB
$BIN/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $LAB > $OUT/lab.log 2>&1 || { echo lab failed; exit 1; }
python3 - $LAB <<'PY' > $OUT/periods.txt
import json,sys,os
lab=json.load(open(sys.argv[1]+'/lab.json'))
for n in lab['nodes']:
    g=n['cpu_cgroup']; q=int(open(g+'/cpu.cfs_quota_us').read()); p=int(open(g+'/cpu.cfs_period_us').read())
    share=q/p; newp=max(2000,int(round(1000/share))); newq=int(round(share*newp))
    open(g+'/cpu.cfs_quota_us','w').write('-1')
    open(g+'/cpu.cfs_period_us','w').write(str(newp)); open(g+'/cpu.cfs_quota_us','w').write(str(newq))
    print(n['name'], p, q, '->', newp, newq)
PY
cat $OUT/periods.txt
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
