#!/bin/bash
# Checks the edge lab's emulation against its profiles, from outside (wall time of real jobs):
#
# 1. Speed: the same LeNet-5 training steps (Fashion-MNIST, batch 64) on one emulated device at
#    a time and on a plain node here with one engine thread and no limits, rounds alternating. The
#    device's slowdown against this core should be 1 / its CPU quota in cores (the profile's
#    GEMM rate over this machine's, as `lab up` measured it): within 15 %.
# 2. Link: two emulated laptops train the MLP (535,818 parameters = 2.14 MB of gradients) in
#    sync mode on a shaped link and on a 10 Gbit/s one; the difference of the marginal step
#    times is the ring allreduce's, which should be within 10 % of its bandwidth bound: each
#    node sends and receives 2 (k-1)/k x S bytes per step (k = 2: S) at the link rate, in
#    Ethernet frames.
#
# Needs root (the lab), a Release or default build, Fashion-MNIST.
#   tests/benchmarks/lab_check.sh [--build build/default] [--rounds 3] [--link 50mbit]
set -euo pipefail
BUILD=build/default
ROUNDS=3
LINK=50mbit
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --link) LINK=$2; shift 2 ;;
    *) echo "lab_check.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
CLI=$BUILD/bin/edgetrain-cli
OUT=$(mktemp -d)
LAB=$OUT/lab
cleanup() {
    "$CLI" lab down --out "$LAB" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

seconds() { # the first epoch's training seconds from a train --json line
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["epochs"][0]["train_seconds"])'
}

echo "== 1. speed: a LeNet-5 step (batch 64) on each device and on one core here"
"$CLI" lab up --devices pi3:1,pi4:1,pi5:1 --out "$LAB" --json 2>/dev/null | tail -1 >"$OUT/up.json"
mapfile -t NODES <"$LAB/nodes"
# "Here": a plain edgetrain-node with one engine thread and no limits, so that both sides of
# the ratio run the same job through the same agent.
OMP_NUM_THREADS=1 "$BUILD/bin/edgetrain-node" --name here --port 0 --print-port --threads 1 \
    --key-file "$LAB/cluster.key" --no-multicast --discovery-port 47999 >"$OUT/here.port" \
    2>"$OUT/here.log" &
HERE_PID=$!
trap 'kill $HERE_PID 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 50); do [ -s "$OUT/here.port" ] && break; sleep 0.1; done
HERE=127.0.0.1:$(head -1 "$OUT/here.port")
# The step time: epochs 2-4 of a 4-epoch job (4096 images, 64 steps each), so the job's start
# (the first epoch's warm-up, the data) stays out; the epochs' mean over 64.
JOB=(--model lenet5 --epochs 4 --batch 64 --train-limit 4096 --test-limit 64 --seed 1 --json)
: >"$OUT/speed.txt"
step() { # node -> seconds per step
    "$CLI" train "${JOB[@]}" --nodes "$1" --key-file "$LAB/cluster.key" 2>/dev/null |
        python3 -c 'import json,sys; e=json.loads(sys.stdin.read().strip().splitlines()[-1])["epochs"]; print(sum(x["train_seconds"] for x in e[1:]) / len(e[1:]) / 64)'
}
for round in $(seq "$ROUNDS"); do
    echo "round $round here $(step "$HERE")" | tee -a "$OUT/speed.txt"
    for i in "${!NODES[@]}"; do
        echo "round $round node$i $(step "${NODES[$i]}")" | tee -a "$OUT/speed.txt"
    done
done
"$CLI" lab down --out "$LAB" >/dev/null 2>&1
kill $HERE_PID 2>/dev/null || true
set +e
python3 - "$OUT/up.json" "$OUT/speed.txt" <<'EOF'
import json, statistics, sys
up = json.load(open(sys.argv[1]))
runs = {}
for line in open(sys.argv[2]):
    _, _, who, t = line.split()
    runs.setdefault(who, []).append(float(t))
here = statistics.median(runs["here"])
print(f"this machine: {up['host_core_gflops']:.1f} GFLOP/s per core; a step on one core here: "
      f"median {here*1000:.2f} ms ({min(runs['here'])*1000:.2f}-{max(runs['here'])*1000:.2f})")
ok = True
for i, n in enumerate(up["nodes"]):
    t = statistics.median(runs[f"node{i}"])
    expected = 1.0 / n["cpu_cores"]
    ratio = t / here
    err = ratio / expected - 1
    ok &= abs(err) <= 0.15
    print(f"{n['name']:12s} quota {n['cpu_cores']:.3f} cores: a step {t*1000:.1f} ms "
          f"({min(runs[f'node{i}'])*1000:.1f}-{max(runs[f'node{i}'])*1000:.1f}), slowdown {ratio:.2f} "
          f"against the profile's {expected:.2f}: {err:+.1%} {'ok' if abs(err) <= 0.15 else 'OFF (bar 15 %)'}")
sys.exit(0 if ok else 1)
EOF
speed_ok=$?
set -e

echo "== 2. link: ring allreduce of the MLP's gradients between two devices at $LINK"
# The marginal step time (40 steps minus 20 steps, over 20): the job's fixed costs (connecting,
# the first broadcast of the weights, the test pass) cancel out.
MLP=(--model mlp --epochs 1 --batch 64 --test-limit 64 --seed 1 --mode sync --json)
: >"$OUT/link.txt"
for round in $(seq "$ROUNDS"); do
    for link in "$LINK" 10gbit; do
        "$CLI" lab up --devices laptop:2 --link "$link" --out "$LAB" --json 2>/dev/null |
            tail -1 >"$OUT/link-up.json"
        # the rate the lab really set (a lab slowed by --time-scale slows its links too)
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"][0]["link_bits_per_second"])' \
            "$OUT/link-up.json" >"$OUT/link-$link.bits"
        for limit in 1280 2560; do
            t=$("$CLI" train "${MLP[@]}" --train-limit $limit --nodes "$(paste -sd, "$LAB/nodes")" \
                --key-file "$LAB/cluster.key" 2>/dev/null | seconds)
            echo "round $round $link $limit $t" | tee -a "$OUT/link.txt"
        done
        "$CLI" lab down --out "$LAB" >/dev/null 2>&1
    done
done
set +e
python3 - "$OUT/link.txt" "$LINK" "$(cat "$OUT/link-$LINK.bits")" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    _, r, link, limit, s = line.split()
    t[(r, link, limit)] = float(s)
rounds = sorted({k[0] for k in t})
bits = float(sys.argv[3])
params = 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10
k = 2
# Each node sends 2 (k-1)/k x S bytes per step; on the wire every 1448 bytes of TCP payload
# take a 1514-byte Ethernet frame (IPv4 + TCP with timestamps), which tc counts.
bound = 2 * (k - 1) / k * params * 4 * 8 * (1514 / 1448) / bits
comms = []
for r in rounds:
    shaped = (t[(r, sys.argv[2], "2560")] - t[(r, sys.argv[2], "1280")]) / 20
    fast = (t[(r, "10gbit", "2560")] - t[(r, "10gbit", "1280")]) / 20
    comms.append(shaped - fast)
    print(f"round {r}: marginal step {shaped*1000:.1f} ms at {sys.argv[2]}, "
          f"{fast*1000:.1f} ms at 10gbit: allreduce {1000*(shaped-fast):.1f} ms")
comm = statistics.median(comms)
err = comm / bound - 1
print(f"allreduce of {params} float32 gradients at {bits/1e6:.1f} Mbit/s: median {comm*1000:.1f} ms "
      f"({min(comms)*1000:.1f}-{max(comms)*1000:.1f}) against the bandwidth bound "
      f"{bound*1000:.1f} ms: {err:+.1%} {'ok' if abs(err) <= 0.10 else 'OFF (bar 10 %)'}")
sys.exit(0 if abs(err) <= 0.10 else 1)
PY
link_ok=$?
[ "$speed_ok" = 0 ] && [ "$link_ok" = 0 ]
