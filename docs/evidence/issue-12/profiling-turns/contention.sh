#!/bin/bash
# contention.sh BIN OUT: are a device's profile figures slower when five nodes profile at once?
# Lab pi3:2,pi4:2,pi5:1; LeNet-5 b64 as the study runs it (8192 train, 1024 test, 1 epoch):
# plans of all five, plans of the Pi 4B alone and the Pi 5 alone, alternating; then the Pi 4B and
# the Pi 5 trained alone, twice each.
B=$1; O=$2; L=$O/lab
mkdir -p $O; $B/edgetrain-cli lab down --out $L >/dev/null 2>&1
$B/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $L > $O/lab.log 2>&1 || { echo lab failed; exit 1; }
ALL=$(paste -sd, $L/nodes); P4=$(sed -n 3p $L/nodes); P5=$(sed -n 5p $L/nodes)
JOB="--key-file $L/cluster.key --model lenet5 --batch 64 --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --json"
for i in 1 2 3; do
  $B/edgetrain-cli plan --nodes $ALL $JOB --modes sync --objective time > $O/all$i.json 2> $O/all$i.log
  $B/edgetrain-cli plan --nodes $P4 $JOB --modes sync --objective time > $O/pi4$i.json 2> $O/pi4$i.log
  $B/edgetrain-cli plan --nodes $P5 $JOB --modes sync --objective time > $O/pi5$i.json 2> $O/pi5$i.log
done
for i in 1 2; do
  $B/edgetrain-cli train --nodes $P4 $JOB --mode sync > $O/train-pi4-$i.json 2> $O/train-pi4-$i.log
  $B/edgetrain-cli train --nodes $P5 $JOB --mode sync > $O/train-pi5-$i.json 2> $O/train-pi5-$i.log
done
cp $L/logs/*.log $O/ 2>/dev/null
$B/edgetrain-cli lab down --out $L >/dev/null 2>&1
python3 - $O <<'PY'
import json,sys,glob
o=sys.argv[1]
def last(f): return json.loads(open(f).read().strip().splitlines()[-1])
def pred(j,name):
    for c in j['candidates']:
        if c['nodes']==[name]: return c['predicted_seconds']
for dev,key in (('pi4b-4gb-1','pi4'),('pi5-8gb-1','pi5')):
    for kind in ('all',key):
        ps=[];fig=[]
        for f in sorted(glob.glob('%s/%s[0-9].json'%(o,kind))):
            j=last(f); ps.append(pred(j,dev))
            d=[x for x in j['devices'] if x['name']==dev][0]
            fig.append('%.3f+%.3f*b'%(d['step_fixed_seconds']*1e3,d['step_seconds_per_sample']*1e3))
        print('%-11s profiled with %-4s predicted %s   step ms %s'%(dev,kind,' '.join('%.3f'%p for p in ps),' '.join(fig)))
    ms=[last(f)['training_seconds'] for f in sorted(glob.glob('%s/train-%s-*.json'%(o,key)))]
    print('%-11s trained alone: %s s'%(dev,' '.join('%.3f'%m for m in ms)))
PY
