#!/bin/bash
# plans.sh BIN OUT N: a fresh lab pi3:2,pi4:2,pi5:1, N LeNet-5 b64 plans, each node's profile phases
B=$1; O=$2; N=${3:-2}; L=$O/lab
mkdir -p $O; $B/edgetrain-cli lab down --out $L >/dev/null 2>&1
$B/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $L > $O/lab.log 2>&1 || { echo lab failed; exit 1; }
for i in $(seq 1 $N); do
  $B/edgetrain-cli plan --nodes $(paste -sd, $L/nodes) --key-file $L/cluster.key --model lenet5 --batch 64 --epochs 5 --objective time --json > $O/plan$i.json 2> $O/plan$i.log
  python3 -c "
import json;j=json.loads(open('$O/plan$i.json').read().strip().splitlines()[-1]);print('plan $i profiling %.2f'%j['profiling_seconds'], ' '.join('%s %.2f/%.2f'%(d['name'],d['profile_seconds'],d['link_probe_seconds']) for d in j['devices']))"
done
cp $L/logs/*.log $O/
$B/edgetrain-cli lab down --out $L >/dev/null 2>&1
grep -h "profiled in\|exchange timed" $O/pi*.log | sed 's/^.*info: //'
