#!/bin/bash
# A fused tile group (the first stages run tile by tile, issue #43) against the same model
# untiled, on one device: training steps on synthetic data, rounds alternating tiled / untiled
# with OMP_NUM_THREADS pinned to --threads on both sides. Per workload it prints the median
# images/s of each with the spread (min-max over rounds) and the step-time ratio, then memory:
# the early group's peak beyond its input and output as the planner simulates it (the engine's
# own allocations), and for the whole step the engine's measured peak and the process's
# anonymous RSS growth (`memory --run`), tiled and untiled.
#
#   tests/benchmarks/tiled_vs_untiled.sh [--build build/default] [--rounds 5] [--steps 4]
#       [--threads 1] [--workloads "detector:3x576x768:2:2:4x4 resnet18:3x224x224:4:1:4x4"]
# A workload is model:input:batch:group:grid.
set -euo pipefail
BUILD=build/default
ROUNDS=5
STEPS=4
THREADS=1
WORKLOADS="detector:3x576x768:2:2:4x4 resnet18:3x224x224:4:1:4x4"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    *) echo "tiled_vs_untiled.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
CLI="$BUILD/bin/edgetrain-cli"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=$THREADS
for w in $WORKLOADS; do
    IFS=: read -r model input batch group grid <<<"$w"
    tiles=(--tiles "$grid" --group "$group")
    for round in $(seq "$ROUNDS"); do
        for side in untiled tiled; do
            extra=()
            [ "$side" = tiled ] && extra=("${tiles[@]}")
            "$CLI" bench --model "$model" --input "$input" --batch "$batch" --threads "$THREADS" \
                --steps "$STEPS" --warmup 1 "${extra[@]}" --json 2>/dev/null | tail -1 \
                >"$OUT/$model-$side-$round.json"
            python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(f'round {sys.argv[2]}: {sys.argv[3]} {sys.argv[4]}: {d[\"images_per_second\"]:.2f} img/s')" \
                "$OUT/$model-$side-$round.json" "$round" "$model" "$side"
        done
    done
    "$CLI" memory --model "$model" --input "$input" --batch "$batch" --threads "$THREADS" \
        "${tiles[@]}" --json 2>/dev/null | tail -1 >"$OUT/$model-plan.json"
    "$CLI" memory --model "$model" --input "$input" --batch "$batch" --threads "$THREADS" \
        --run --steps 2 --json 2>/dev/null | tail -1 >"$OUT/$model-run-untiled.json"
    "$CLI" memory --model "$model" --input "$input" --batch "$batch" --threads "$THREADS" \
        "${tiles[@]}" --run --steps 2 --json 2>/dev/null | tail -1 >"$OUT/$model-run-tiled.json"
done
python3 - "$OUT" "$ROUNDS" "$THREADS" $WORKLOADS <<'PY'
import json, statistics, sys
out, rounds, threads, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
mib = lambda b: f"{b / 2**20:.1f} MiB"
print(f"{threads} thread(s), {rounds} rounds")
print("| workload | untiled img/s | tiled img/s | step time tiled / untiled | group peak untiled → tiled "
      "| step peak (engine) untiled → tiled | RSS growth untiled → tiled | planner's step factor |")
print("|---|---|---|---|---|---|---|---|")
for w in workloads:
    model, inp, batch, group, grid = w.split(":")
    rate = {s: [json.load(open(f"{out}/{model}-{s}-{r}.json"))["images_per_second"]
                for r in range(1, rounds + 1)] for s in ("untiled", "tiled")}
    med = {s: statistics.median(v) for s, v in rate.items()}
    ratios = sorted(u / t for u, t in zip(rate["untiled"], rate["tiled"]))
    plan = json.load(open(f"{out}/{model}-plan.json"))
    ru = json.load(open(f"{out}/{model}-run-untiled.json"))
    rt = json.load(open(f"{out}/{model}-run-tiled.json"))
    rss = lambda d: mib(d["measured_rss_bytes"]) if d.get("measured_rss_bytes") is not None else "n/a"
    print(f"| {model} {inp} b{batch}, first {group} stages on {grid} "
          f"| {med['untiled']:.2f} [{min(rate['untiled']):.2f}-{max(rate['untiled']):.2f}] "
          f"| {med['tiled']:.2f} [{min(rate['tiled']):.2f}-{max(rate['tiled']):.2f}] "
          f"| {med['untiled'] / med['tiled']:.2f} (rounds {ratios[0]:.2f}-{ratios[-1]:.2f}) "
          f"| {mib(plan['untiled_group_peak_bytes'])} → {mib(plan['tiled_group_peak_bytes'])} "
          f"({plan['untiled_group_peak_bytes'] / plan['tiled_group_peak_bytes']:.1f}x) "
          f"| {mib(ru['measured_peak_bytes'])} → {mib(rt['measured_peak_bytes'])} "
          f"| {rss(ru)} → {rss(rt)} | {plan['predicted_step_factor']:.2f} |")
PY
