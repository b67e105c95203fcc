#!/bin/bash
# Labelling throughput on one core: the HOG teacher every K frames plus a tracker, over the
# whole of vtest.avi (opencv-doc), in frames per second (real time is 25 fps here).
#
#   tests/benchmarks/label_throughput.sh [--build build/default] [--trackers "kcf mosse csrt"] [--every "5 10"]
set -euo pipefail
BUILD=build/default
TRACKERS="kcf mosse medianflow mil csrt"
EVERY="5 10 20"
VIDEO=/usr/share/doc/opencv-doc/examples/data/vtest.avi
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --trackers) TRACKERS=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    --video) VIDEO=$2; shift 2 ;;
    *) echo "label_throughput.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
printf "%-11s %6s %10s %8s %14s %18s\n" tracker every "frames/s" tracks "teacher boxes" "tracker-only boxes"
for tracker in $TRACKERS; do
    for every in $EVERY; do
        taskset -c 0 "$BUILD/bin/edgetrain-cli" label --source "$VIDEO" --tracker "$tracker" --every "$every" \
            --threads 1 --out "$OUT/$tracker-$every" --json 2>/dev/null | tail -1 >"$OUT/r.json"
        python3 - "$OUT/r.json" "$tracker" "$every" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<11} {sys.argv[3]:>6} {r['label_fps']:10.1f} {r['tracks']:8d} {r['teacher_boxes']:14d} {r['tracker_only_boxes']:18d}")
PY
    done
done
