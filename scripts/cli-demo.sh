#!/usr/bin/env bash
# The demo told by edgetrain-cli, step by step (scripts/demo.sh opens the app instead):
#  1. LeNet-5 trained on the real Fashion-MNIST on this machine (progress, per-epoch results,
#     trained weights), then evaluated from the saved file;
#  2. a memory plan: ResNet-110 under a 64 MiB budget, run for real;
#  3. three local edge nodes (127.0.0.1, demo key, one thread each): found by probe, watched for
#     3 seconds, then training LeNet-5 together (sync allreduce over gloo) while one of them
#     freezes half way (SIGSTOP: like a board that hangs or loses its cable);
#  4. viewpoint adaptation on vtest.avi: HOG teacher, tracker propagation, student, evaluation.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default
bin=build/default/bin
out="${EDGETRAIN_DEMO_OUT:-$PWD/out/cli-demo}"
mkdir -p "$out"

echo "== 1. LeNet-5 on Fashion-MNIST, 2 epochs, cosine learning rate =="
"$bin/edgetrain-cli" train --model lenet5 --dataset fashion-mnist --epochs 2 \
  --batch 64 --lr 0.05 --schedule cosine --save "$out/lenet5.safetensors" --json \
  | tail -n 1 > "$out/train.json"
"$bin/edgetrain-cli" evaluate --model lenet5 --weights "$out/lenet5.safetensors"

echo "== 2. ResNet-110 (batch 32) in 64 MiB: checkpointing schedule, predicted and measured =="
"$bin/edgetrain-cli" memory --model resnet110 --batch 32 --budget 64MiB --run --steps 2 \
  --json | tail -n 1 > "$out/memory.json"

echo "== 3. Three local edge nodes =="
key="$out/cli-demo.key"
[ -s "$key" ] || head -c 32 /dev/urandom | base64 > "$key"
chmod 600 "$key"
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill -CONT "${pids[@]}" 2>/dev/null && kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT
ports=() probes=()
for i in 1 2 3; do
  discovery=$((46500 + i))
  "$bin/edgetrain-node" --name "demo-node-$i" --port 0 --discovery-port "$discovery" --threads 1 \
    --no-multicast --key-file "$key" --print-port > "$out/node-$i.port" 2> "$out/node-$i.log" &
  pids+=($!)
  probes+=("127.0.0.1:$discovery")
done
for i in 1 2 3; do
  for _ in $(seq 50); do [ -s "$out/node-$i.port" ] && break; sleep 0.1; done
  ports+=("127.0.0.1:$(cat "$out/node-$i.port")")
done
"$bin/edgetrain-cli" nodes --probe "$(IFS=,; echo "${probes[*]}")" --timeout 1s
"$bin/edgetrain-cli" monitor --nodes "$(IFS=,; echo "${ports[*]}")" --key-file "$key" \
  --duration 3s --csv "$out/metrics.csv"

echo "== 4. LeNet-5 across the three nodes (sync), node 3 freezes after 4 s =="
( sleep 4; kill -STOP "${pids[2]}" 2>/dev/null || true ) &
"$bin/edgetrain-cli" train --nodes "$(IFS=,; echo "${ports[*]}")" --key-file "$key" \
  --mode sync --epochs 2 --batch 64 --train-limit 20000 --test-limit 2000 --no-rejoin \
  --collective-timeout 3s --save "$out/lenet5-cluster.safetensors" --json \
  | tail -n 1 > "$out/cluster-train.json"
# The teacher runs on every frame here, so "tracker-only" means exactly "the teacher missed it".
echo "== 5. Viewpoint adaptation on vtest.avi: HOG teacher, KCF tracker, student trained here =="
"$bin/edgetrain-cli" viewpoint --source /usr/share/doc/opencv-doc/examples/data/vtest.avi \
  --teacher hog --tracker kcf --every 1 --epochs 8 --eval-frames 40 --out "$out/viewpoint" \
  --json | tail -n 1 > "$out/viewpoint.json"
echo "Results in $out: train.json, lenet5.safetensors, memory.json, metrics.csv,"
echo "  cluster-train.json (epochs, events, per-node fingerprints), lenet5-cluster.safetensors, node-*.log,"
echo "  viewpoint/ (labels.json, dataset/, student.safetensors, report.json), viewpoint.json"
