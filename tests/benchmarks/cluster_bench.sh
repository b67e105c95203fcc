#!/bin/bash
# The cluster benchmark: gloo allreduce of LeNet-5 / ResNet-20 / ResNet-110 gradient sizes across
# 2-4 node processes against the bandwidth bound 2(n-1)/n * bytes / bandwidth, and the scaling
# of sync training (LeNet-5 on Fashion-MNIST) from 1 to 4 nodes.
#
# As root, where network namespaces work, every node gets its own namespace and a veth link to a
# bridge, shaped with tc to --rate (default 100mbit, the paper's Raspberry Pi links); otherwise the
# nodes share loopback, unshaped. Writes the JSON lines to --out (default out/cluster-bench).
#
#   tests/benchmarks/cluster_bench.sh [--rate 100mbit] [--unshaped] [--build build/default]
#                                     [--train-limit 8192] [--batch 64] [--out DIR]
set -euo pipefail

RATE=100mbit
SHAPED=auto
BUILD=build/default
TRAIN_LIMIT=8192
BATCH=64
OUT=out/cluster-bench
while [ $# -gt 0 ]; do
    case "$1" in
    --rate) RATE=$2; shift 2 ;;
    --unshaped) SHAPED=no; shift ;;
    --build) BUILD=$2; shift 2 ;;
    --train-limit) TRAIN_LIMIT=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "cluster_bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
BIN=$(cd "$BUILD/bin" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
KEY=$WORK/cluster.key
head -c 32 /dev/urandom | base64 >"$KEY"
chmod 600 "$KEY"
PIDS=()
NS=()

cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "${NS[@]:-}"; do [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null || true; done
    ip link del etbr0 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# rate in bytes/s for the bound
rate_bytes() {
    local r=$1 n=${1%%[a-zA-Z]*} unit=${1##*[0-9.]}
    case "$unit" in
    gbit) echo "$n * 125000000" | bc ;;
    mbit) echo "$n * 125000" | bc ;;
    kbit) echo "$n * 125" | bc ;;
    *) echo "cluster_bench.sh: --rate like 100mbit, got $r" >&2; exit 2 ;;
    esac
}

HOSTS=()
if [ "$SHAPED" = auto ] && [ "$(id -u)" = 0 ] && ip netns add etbench-probe 2>/dev/null; then
    ip netns del etbench-probe
    ip link add etbr0 type bridge
    ip addr add 10.77.0.1/24 dev etbr0
    ip link set etbr0 up
    for i in 0 1 2 3; do
        ns=etbench$i
        ip netns add $ns
        NS+=($ns)
        ip link add etv$i type veth peer name eth0 netns $ns
        ip link set etv$i master etbr0
        ip link set etv$i up
        ip netns exec $ns ip addr add 10.77.0.1$i/24 dev eth0
        ip netns exec $ns ip link set eth0 up
        ip netns exec $ns ip link set lo up
        # both directions of each device's link at RATE
        tc qdisc add dev etv$i root tbf rate "$RATE" burst 64kb latency 50ms
        ip netns exec $ns tc qdisc add dev eth0 root tbf rate "$RATE" burst 64kb latency 50ms
        HOSTS+=(10.77.0.1$i)
    done
    BANDWIDTH=$(rate_bytes "$RATE")
    TRANSPORT="veth + bridge, tc tbf $RATE per link"
    run_in() { local i=$1; shift; ip netns exec etbench$i "$@"; }
else
    HOSTS=(127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1)
    BANDWIDTH=""
    TRANSPORT="loopback, unshaped"
    run_in() { shift; "$@"; }
fi
echo "transport: $TRANSPORT"

echo "== allreduce across node processes"
for n in 2 3 4; do
    store=$WORK/store-$n
    mkdir -p "$store"
    bw=${BANDWIDTH:-5000000000}
    for ((r = n - 1; r >= 1; r--)); do
        run_in $r "$BIN/edgetrain-cli" bench --allreduce --rank $r --world $n --store "$store" \
            --hostname "${HOSTS[$r]}" --bandwidth "$bw" --steps 7 >/dev/null 2>&1 &
    done
    run_in 0 "$BIN/edgetrain-cli" bench --allreduce --rank 0 --world $n --store "$store" \
        --hostname "${HOSTS[0]}" --bandwidth "$bw" --steps 7 --json 2>&1 | tee "$WORK/allreduce-$n.txt" | grep -v '^{'
    tail -1 "$WORK/allreduce-$n.txt" >>"$OUT/allreduce.jsonl"
    wait
done

echo "== sync training scaling, LeNet-5, global batch $BATCH, $TRAIN_LIMIT samples"
PORTS=()
for i in 0 1 2 3; do
    run_in $i "$BIN/edgetrain-node" --name "bench-$i" --port 0 --key-file "$KEY" --threads 1 \
        --no-multicast --discovery-port $((45500 + i)) --print-port >"$WORK/port$i" 2>"$WORK/node$i.log" &
    PIDS+=($!)
done
for i in 0 1 2 3; do
    for _ in $(seq 50); do [ -s "$WORK/port$i" ] && break; sleep 0.1; done
    PORTS+=("$(head -1 "$WORK/port$i")")
done
: >"$OUT/scaling.jsonl"
for n in 1 2 3 4; do
    nodes=""
    for ((i = 0; i < n; i++)); do nodes+="${nodes:+,}${HOSTS[$i]}:${PORTS[$i]}"; done
    "$BIN/edgetrain-cli" train --nodes "$nodes" --key-file "$KEY" --mode sync --epochs 2 \
        --batch "$BATCH" --train-limit "$TRAIN_LIMIT" --test-limit 1000 --json 2>/dev/null |
        tail -1 >"$WORK/train-$n.json"
    cat "$WORK/train-$n.json" >>"$OUT/scaling.jsonl"
    python3 - "$WORK/train-$n.json" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["epochs"][-1]  # the second epoch: shares measured, caches warm
print(f"{sys.argv[2]} node(s): {e['images_per_second']:8.0f} img/s, test accuracy {e['test_accuracy']:.3f}")
PY
done
echo "results: $OUT/allreduce.jsonl, $OUT/scaling.jsonl"
