#!/bin/bash
# Detection speed on ONE core, same frames for every detector: the session's trained student
# (one forward pass per frame), the HOG teacher and motion (background subtraction, which also
# has to see every frame in between). Rounds alternate between the detectors (the machine is
# noisy); prints each round, then the median frames/s, the spread (min-max) and the student's
# ratio against the others. The issue's target: the student >= 25 frames/s at 768x576.
#
#   tests/benchmarks/detect_speed.sh --session DIR [--build build/default] [--rounds 3]
#       [--every 3] [--video vtest.avi] [--detectors "session hog motion"]
set -euo pipefail
BUILD=build/default
ROUNDS=3
EVERY=3
SESSION=""
DETECTORS="session hog motion"
VIDEO=/usr/share/doc/opencv-doc/examples/data/vtest.avi
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    --session) SESSION=$2; shift 2 ;;
    --video) VIDEO=$2; shift 2 ;;
    --detectors) DETECTORS=$2; shift 2 ;;
    *) echo "detect_speed.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [[ " $DETECTORS " == *" session "* && -z "$SESSION" ]]; then
    echo "detect_speed.sh: --session DIR (a session with a trained student) is needed" >&2
    exit 2
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=1
for round in $(seq "$ROUNDS"); do
    for d in $DETECTORS; do
        spec=$d
        [ "$d" = session ] && spec="session:$SESSION"
        taskset -c 0 "$BUILD/bin/edgetrain-cli" detect --source "$VIDEO" --detector "$spec" \
            --every "$EVERY" --threads 1 --json 2>/dev/null | tail -1 >"$OUT/$d-$round.json"
        python3 - "$OUT/$d-$round.json" "$round" "$d" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"round {sys.argv[2]} {sys.argv[3]:<8} {r['fps']:8.1f} frames/s over {len(r['frames'])} frames")
PY
    done
done
python3 - "$OUT" "$ROUNDS" $DETECTORS <<'PY'
import json, statistics, sys
out, rounds, dets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
fps = {d: [json.load(open(f"{out}/{d}-{r}.json"))["fps"] for r in range(1, rounds + 1)] for d in dets}
print(f"{'detector':<9} {'median':>8} {'min':>8} {'max':>8}  (frames/s, one core)")
for d in dets:
    print(f"{d:<9} {statistics.median(fps[d]):8.1f} {min(fps[d]):8.1f} {max(fps[d]):8.1f}")
if "session" in fps:
    s = statistics.median(fps["session"])
    for d in dets:
        if d != "session":
            print(f"student / {d}: {s / statistics.median(fps[d]):.2f}x")
PY
