#!/usr/bin/env bash
# An arm64 edgetrain-node, cross-compiled (scripts/cross-build.sh arm64) and run under qemu-user,
# joins two amd64 nodes and trains LeNet-5 on Fashion-MNIST with them (sync, 1 epoch, limited
# data), coordinated by the amd64 edgetrain-cli. The same training on three amd64 nodes is the
# reference: the mixed cluster must reach its test accuracy within 1 point, and the coordinator
# must have seen the third node report itself as arm64. Then the mixed cluster trains async (on
# less data): the arm64 node follows the parameter server by bfloat16 deltas against the server's
# mirror of its weights; at the epoch's end the server compares each node's fingerprint of what
# it holds with the mirror's, so both architectures must have added the deltas to the same bits.
#
#   tests/arm64/node-under-qemu.sh [--host-bin DIR] [--arm64-bin DIR] [--sysroot DIR] [--out DIR]
#
# Defaults: build/default/bin (amd64), build/arm64/bin, out/sysroot-arm64, a temporary folder.
# Exit status: 0 pass, 1 fail, 77 skip (no arm64 build, sysroot, qemu or dataset here).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
host_bin="$root/build/default/bin"
arm64_bin="$root/build/arm64/bin"
sysroot="$root/out/sysroot-arm64"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --host-bin) host_bin="$2"; shift 2 ;;
    --arm64-bin) arm64_bin="$2"; shift 2 ;;
    --sysroot) sysroot="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--host-bin DIR] [--arm64-bin DIR] [--sysroot DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
# Limited data, so that the node under emulation is done in a few minutes.
train_limit=30000
test_limit=10000
data_dir=/usr/share/datasets/fashion-mnist

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$arm64_bin/edgetrain-node" ] || skip "no arm64 build at $arm64_bin (scripts/cross-build.sh arm64)"
[ -f "$sysroot/.sysroot/complete" ] || skip "no complete arm64 sysroot at $sysroot"
command -v qemu-aarch64-static >/dev/null || skip "qemu-aarch64-static is not installed (qemu-user-static)"
[ -f "$data_dir/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST at $data_dir (dataset-fashion-mnist)"
for program in edgetrain-node edgetrain-cli; do
  [ -x "$host_bin/$program" ] || skip "no amd64 $program at $host_bin"
done
# qemu -L looks an absolute path up in the sysroot first and falls back to the host's: a sysroot
# that had the dataset would shadow the real one.
[ ! -e "$sysroot$data_dir" ] || fail "$sysroot$data_dir would shadow the host's dataset"
if command -v file >/dev/null; then
  file -L "$arm64_bin/edgetrain-node" | grep -q 'ARM aarch64' \
    || fail "$arm64_bin/edgetrain-node is not an aarch64 executable: $(file -L "$arm64_bin/edgetrain-node")"
fi

if [ -z "$out" ]; then
  out="$(mktemp -d)"
fi
mkdir -p "$out"
key="$out/cluster.key"
head -c 32 /dev/urandom | base64 > "$key"
chmod 600 "$key"

pids=()
stop_nodes() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}
trap stop_nodes EXIT

# start_node NAME DISCOVERY_PORT COMMAND...: one node on a free control port, one engine thread.
start_node() {
  local name="$1" discovery="$2"
  shift 2
  rm -f "$out/$name.port"
  "$@" --name "$name" --port 0 --discovery-port "$discovery" --threads 1 --no-multicast \
    --key-file "$key" --data-dir "$data_dir" --print-port > "$out/$name.port" 2> "$out/$name.log" &
  pids+=($!)
  for _ in $(seq 300); do # qemu takes a few seconds to start Qt
    [ -s "$out/$name.port" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || fail "node $name did not start: $(cat "$out/$name.log")"
    sleep 0.1
  done
  [ -s "$out/$name.port" ] || fail "node $name printed no port in 30 s"
  nodes+=("127.0.0.1:$(cat "$out/$name.port")")
}

# train RUN [MODE [TRAIN_LIMIT]]: trains across the nodes started last (sync, train_limit
# images by default); prints the test accuracy in percent.
train() {
  local run="$1" mode="${2:-sync}" limit="${3:-$train_limit}" started_s=$SECONDS
  "$host_bin/edgetrain-cli" train --nodes "$(IFS=,; echo "${nodes[*]}")" --key-file "$key" \
    --model lenet5 --dataset fashion-mnist --mode "$mode" --epochs 1 --batch 64 --lr 0.05 --schedule cosine --seed 0 \
    --train-limit "$limit" --test-limit "$test_limit" --threads 1 \
    --collective-timeout 120s --json > "$out/$run.json" 2> "$out/$run.log" \
    || fail "$run: edgetrain-cli train failed: $(tail -n 5 "$out/$run.log")"
  grep -q '"finished":true' "$out/$run.json" || fail "$run: the training did not finish"
  local accuracy
  accuracy="$(tail -n 1 "$out/$run.json" | grep -o '"test_accuracy":[0-9.eE+-]*' | tail -n 1 | cut -d: -f2)"
  [ -n "$accuracy" ] || fail "$run: no test accuracy in $out/$run.json"
  awk -v a="$accuracy" 'BEGIN { printf "%.2f\n", 100 * a }'
  echo "$run: $((SECONDS - started_s)) s" >&2
}

# Discovery ports of their own (the nodes answer probes on them), apart from other runs'.
port_base=$((47000 + ($$ % 400) * 5))
nodes=()
start_node amd64-1 $((port_base + 1)) "$host_bin/edgetrain-node"
start_node amd64-2 $((port_base + 2)) "$host_bin/edgetrain-node"
start_node amd64-3 $((port_base + 3)) "$host_bin/edgetrain-node"
reference="$(train amd64-only)"
stop_nodes

nodes=()
start_node amd64-1 $((port_base + 1)) "$host_bin/edgetrain-node"
start_node amd64-2 $((port_base + 2)) "$host_bin/edgetrain-node"
start_node arm64-1 $((port_base + 4)) qemu-aarch64-static -L "$sysroot" "$arm64_bin/edgetrain-node"
mixed="$(train mixed)"
mixed_async="$(train mixed-async async 15000)"
stop_nodes

echo "amd64 x3: test accuracy $reference %"
echo "amd64 x2 + arm64 under qemu: test accuracy $mixed %"
echo "amd64 x2 + arm64 under qemu, async on 15,000 images: test accuracy $mixed_async %"
grep "connected to 'arm64-1'" "$out/mixed.log" || fail "the coordinator never connected to arm64-1"
grep -q "connected to 'arm64-1' .*(arm64," "$out/mixed.log" \
  || fail "arm64-1 did not report its arch as arm64"
grep -E "edgetrain.worker.*training samples" "$out/arm64-1.log" \
  || fail "arm64-1 did not load its training data"
grep -q "finished at step" "$out/arm64-1.log" || fail "arm64-1 did not finish the job"
awk -v a="$reference" -v b="$mixed" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.0) }' \
  || fail "the accuracies differ by more than 1 point"
grep -Eq '"mirror_checks":3[,}]' "$out/mixed-async.json" \
  || fail "the parameter server did not check the three nodes' weights against its mirrors"
grep -Eq '"mirror_mismatches":0[,}]' "$out/mixed-async.json" \
  || fail "a node's weights differ from the parameter server's mirror of them"
! grep -q "malformed gradient push" "$out/mixed-async.log" || fail "a node's async push was refused"
[ "$(grep -c "finished at step" "$out/arm64-1.log")" -ge 2 ] || fail "arm64-1 did not finish the async job"
# The async run's accuracy is reported, not judged: this one epoch of a mixed cluster once ended
# at chance in CI (loss 2.30, never left LeNet-5's early plateau) while 3 runs here reached
# 72-74 %; what this script checks is that the arm64 node speaks the exchange.
echo "PASS: within 1 point (logs and JSON in $out)"
