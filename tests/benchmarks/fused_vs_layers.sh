#!/bin/bash
# The fused batch norm + ReLU (and a residual block's end) against the same model run layer by
# layer (`bench --fuse off`, the reference the layer tests compare with), training steps on
# synthetic data. Rounds alternate fused / layer by layer (the machine is noisy), OMP_NUM_THREADS
# pinned to --threads on both sides; prints each round, then per model the median img/s, the
# spread (min-max over rounds) and the ratio fused / layer by layer.
#
#   tests/benchmarks/fused_vs_layers.sh [--build build/default] [--rounds 5] [--steps 20]
#       [--threads 1] [--models "resnet20:32 resnet56:32 detector:8"]
set -euo pipefail
BUILD=build/default
ROUNDS=5
STEPS=20
THREADS=1
MODELS="resnet20:32 resnet56:32 detector:8"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    *) echo "fused_vs_layers.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=$THREADS
for round in $(seq "$ROUNDS"); do
    for m in $MODELS; do
        model=${m%%:*}
        batch=${m##*:}
        for fuse in on off; do
            "$BUILD/bin/edgetrain-cli" bench --model "$model" --batch "$batch" --threads "$THREADS" \
                --steps "$STEPS" --warmup 2 --fuse "$fuse" --json 2>/dev/null | tail -1 \
                >"$OUT/$model-$fuse-$round.json"
            python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(f'round {sys.argv[2]}: {d[\"model\"]} b{d[\"batch\"]} fuse {sys.argv[3]}: {d[\"images_per_second\"]:.1f} img/s')" \
                "$OUT/$model-$fuse-$round.json" "$round" "$fuse"
        done
    done
done
python3 - "$OUT" "$ROUNDS" "$MODELS" "$THREADS" <<'PY'
import json, statistics, sys
out, rounds, models, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
print(f"{'model':<14} {'fused img/s':>22} {'layer by layer img/s':>24} {'ratio':>7}   ({threads} thread(s), {rounds} rounds)")
for m in models:
    model = m.split(':')[0]
    rates = {f: [json.load(open(f"{out}/{model}-{f}-{r}.json"))["images_per_second"]
                 for r in range(1, rounds + 1)] for f in ("on", "off")}
    med = {f: statistics.median(v) for f, v in rates.items()}
    ratios = sorted(a / b for a, b in zip(rates["on"], rates["off"]))
    print(f"{m:<14} {med['on']:>9.1f} [{min(rates['on']):.1f}-{max(rates['on']):.1f}] "
          f"{med['off']:>11.1f} [{min(rates['off']):.1f}-{max(rates['off']):.1f}] "
          f"{med['on'] / med['off']:>7.3f}   (per round {ratios[0]:.3f}-{ratios[-1]:.3f})")
PY
