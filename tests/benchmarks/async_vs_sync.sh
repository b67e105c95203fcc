#!/bin/bash
# Async against sync on the same local nodes (issue #17: async >= 0.8x sync throughput on
# LeNet-5 on 3 local nodes, with the same accuracy after 3 epochs). Starts --nodes plain
# edgetrain-node processes (--threads 1, OMP_NUM_THREADS=1) on loopback, or uses a lab's nodes
# (--lab DIR: `edgetrain-cli lab up --out DIR` made it), and trains LeNet-5 with each --modes
# entry in turn, --rounds times, alternating. A mode is sync, local-sgd, or async with its
# options: async (the defaults), async:float32, async:pipelined, async:float32:pipelined.
# Reports per mode the median of the per-run images/s (each run's mean over its epochs; the
# first epoch included), the spread, the test accuracy after the last epoch, the bytes each
# node received, and the ratio of each mode's median to the first mode's (the modes alternate
# within each round, so both medians come from the same stretch of time).
#
#   tests/benchmarks/async_vs_sync.sh [--nodes 3 | --lab DIR] [--rounds 3] [--epochs 3]
#       [--train-limit 20000] [--test-limit 2000] [--batch 64]
#       [--modes sync,async,async:float32] [--build build/default] [--out DIR]
set -euo pipefail

NODES=3
LAB=""
ROUNDS=3
EPOCHS=3
TRAIN_LIMIT=20000
TEST_LIMIT=2000
BATCH=64
MODES=sync,async,async:float32
BUILD=build/default
OUT=out/async-vs-sync
while [ $# -gt 0 ]; do
    case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --lab) LAB=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --train-limit) TRAIN_LIMIT=$2; shift 2 ;;
    --test-limit) TEST_LIMIT=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "async_vs_sync.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
BIN=$(cd "$BUILD/bin" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1

if [ -n "$LAB" ]; then
    [ -s "$LAB/nodes" ] && [ -s "$LAB/cluster.key" ] ||
        { echo "async_vs_sync.sh: $LAB has no nodes or cluster.key (edgetrain-cli lab up --out $LAB)" >&2; exit 2; }
    KEY=$LAB/cluster.key
    LIST=$(paste -sd, "$LAB/nodes")
    WHERE="the lab in $LAB ($(wc -l <"$LAB/nodes") nodes)"
else
    KEY=$WORK/cluster.key
    head -c 32 /dev/urandom | base64 >"$KEY"
    chmod 600 "$KEY"
    LIST=""
    for ((i = 0; i < NODES; i++)); do
        "$BIN/edgetrain-node" --name "bench-$i" --port 0 --key-file "$KEY" --threads 1 \
            --no-multicast --discovery-port $((45600 + i)) --print-port \
            >"$WORK/port$i" 2>"$WORK/node$i.log" &
        PIDS+=($!)
    done
    for ((i = 0; i < NODES; i++)); do
        for _ in $(seq 100); do [ -s "$WORK/port$i" ] && break; sleep 0.1; done
        [ -s "$WORK/port$i" ] || { echo "async_vs_sync.sh: node $i did not start" >&2; cat "$WORK/node$i.log" >&2; exit 1; }
        LIST+="${LIST:+,}127.0.0.1:$(head -1 "$WORK/port$i")"
    done
    WHERE="$NODES local nodes (--threads 1) on $(getconf _NPROCESSORS_ONLN) cores"
fi
echo "async against sync: LeNet-5 b$BATCH, $TRAIN_LIMIT images, $EPOCHS epochs, $ROUNDS rounds, on $WHERE"
: >"$OUT/runs.jsonl"
IFS=, read -r -a modes <<<"$MODES"
for ((round = 1; round <= ROUNDS; round++)); do
    for m in "${modes[@]}"; do
        args=(--mode "${m%%:*}")
        case "$m" in async*) args+=(--exchange bf16 --pipeline off) ;; esac
        case "$m" in *float32*) args+=(--exchange float32) ;; esac
        case "$m" in *pipelined*) args+=(--pipeline on) ;; esac
        "$BIN/edgetrain-cli" train --model lenet5 --nodes "$LIST" --key-file "$KEY" "${args[@]}" \
            --epochs "$EPOCHS" --batch "$BATCH" --train-limit "$TRAIN_LIMIT" \
            --test-limit "$TEST_LIMIT" --json 2>"$WORK/train.log" | tail -1 >"$WORK/run.json" ||
            { echo "async_vs_sync.sh: $m failed:" >&2; tail -5 "$WORK/train.log" >&2; exit 1; }
        python3 - "$WORK/run.json" "$m" "$round" >>"$OUT/runs.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
eps = r["epochs"]
print(json.dumps({"mode": sys.argv[2], "round": int(sys.argv[3]),
                  "images_per_second": sum(e["images_per_second"] for e in eps) / len(eps),
                  "epoch_images_per_second": [e["images_per_second"] for e in eps],
                  "test_accuracy": eps[-1]["test_accuracy"],
                  "received_bytes_per_node": [n["received_bytes"] for n in r.get("resources_by_node", [])],
                  "max_staleness": r.get("max_staleness"), "finished": r["finished"]}))
PY
        tail -1 "$OUT/runs.jsonl" | python3 -c "
import json, sys
r = json.loads(sys.stdin.read())
print(f\"round {r['round']} {r['mode']:>22}: {r['images_per_second']:8.0f} img/s, test accuracy {r['test_accuracy']:.3f}\")"
    done
done
python3 - "$OUT/runs.jsonl" "$MODES" "$WHERE" >"$OUT/summary.txt" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
modes = sys.argv[2].split(",")
print(f"on {sys.argv[3]}")
ref = statistics.median(r["images_per_second"] for r in runs if r["mode"] == modes[0])
for m in modes:
    rs = [r for r in runs if r["mode"] == m]
    ips = [r["images_per_second"] for r in rs]
    acc = [r["test_accuracy"] for r in rs]
    rx = [b for r in rs for b in r["received_bytes_per_node"]]
    print(f"{m:>22}: median {statistics.median(ips):8.0f} img/s (spread {min(ips):.0f}-{max(ips):.0f}), "
          f"{statistics.median(ips) / ref:4.2f}x {modes[0]}; test accuracy median "
          f"{statistics.median(acc):.3f} ({min(acc):.3f}-{max(acc):.3f}); "
          f"received per node {statistics.median(rx) / 2**20 if rx else 0:.0f} MiB")
PY
cat "$OUT/summary.txt"
echo "results: $OUT/runs.jsonl, $OUT/summary.txt"
