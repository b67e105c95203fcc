B=/tmp/binA; O=/tmp/q1; L=$O/lab
JOB="--model lenet5 --batch 128 --train-limit 8192 --test-limit 1024 --epochs 1 --input 1x28x28 --mode sync"
$B/edgetrain-cli lab down --out $L >/dev/null 2>&1; rm -rf $L
$B/edgetrain-cli lab up --devices pi3:2,pi4:2,pi5:1 --out $L > $O/lab.log 2>&1 || { echo lab failed; exit 1; }
for i in 1 2; do $B/edgetrain-cli plan --nodes $(paste -sd, $L/nodes) --key-file $L/cluster.key $JOB --objective time --modes sync --json > $O/sync$i.json 2> $O/sync$i.log; done
$B/edgetrain-cli plan --nodes $(paste -sd, $L/nodes) --key-file $L/cluster.key $JOB --objective time --json > $O/all.json 2> $O/all.log
$B/edgetrain-cli plan --nodes $(paste -sd, $L/nodes) --key-file $L/cluster.key --model mlp --batch 64 --train-limit 4096 --test-limit 1024 --epochs 1 --mode sync --objective power --modes sync --json > $O/mlp.json 2> $O/mlp.log
cp $L/logs/*.log $O/ 2>/dev/null
$B/edgetrain-cli lab down --out $L >/dev/null 2>&1
