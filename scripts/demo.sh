#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo session.
# Until the desktop app exists the demo is headless: LeNet-5 trained on the real Fashion-MNIST
# on this machine, with live progress, the per-epoch results and the trained weights.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default
out="${EDGETRAIN_DEMO_OUT:-$PWD/out/demo}"
mkdir -p "$out"
echo "== EdgeTrain demo: LeNet-5 on Fashion-MNIST, 2 epochs, cosine learning rate =="
build/default/bin/edgetrain-cli train --model lenet5 --dataset fashion-mnist --epochs 2 \
  --batch 64 --lr 0.05 --schedule cosine --save "$out/lenet5.safetensors" --json \
  | tail -n 1 > "$out/train.json"
build/default/bin/edgetrain-cli evaluate --model lenet5 --weights "$out/lenet5.safetensors"
echo "Results: $out/train.json   weights: $out/lenet5.safetensors"
