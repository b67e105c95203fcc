#!/bin/bash
# Soak: hours of training with churn on an edge lab (or plain local nodes where no lab can be
# set up), measured from outside. tests/chaos/chaos.py runs sync, async, local-SGD and shipping
# jobs one after another while nodes are killed, frozen, cut off and slowed at random, and checks
# every run's invariants; the first node is never killed, and its agent's RSS, open descriptors
# and threads are sampled between runs (no job on it): after the warm-up (a tenth of the soak, at
# most 10 minutes) its descriptors and threads must not grow, nor its RSS by more than 10 %.
#
#   tests/benchmarks/soak.sh [--minutes 120] [--bin build/default/bin] [--out DIR]
#       [--devices pi4:3] [--seed N]
#
# Prints the chaos summary; OUT/agents.csv has every sample, OUT/chaos.json every run.
set -euo pipefail
cd "$(dirname "$0")/../.."
MINUTES=120
BIN=build/default/bin
OUT=""
DEVICES=pi4:3
SEED=$RANDOM
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --devices) DEVICES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/edgetrain-soak.XXXXXX)
echo "soak: $MINUTES minutes, seed $SEED, results in $OUT"
status=0
tests/chaos/chaos.py --auto --steady --minutes "$MINUTES" --bin "$BIN" --out "$OUT" \
    --devices "$DEVICES" --seed "$SEED" || status=$?
python3 - "$OUT/chaos.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{d['runs']} runs, {d['faults']} faults ({d['runs_finished']} finished, "
      f"{d['runs_stopped_with_reason']} stopped with a reason), {len(d['violations'])} violations, "
      f"{d['seconds'] / 60:.0f} min")
s = d.get("steady_agent")
if s:
    mib = 1 << 20
    print(f"steady agent {s['node']}, {s['samples']} idle samples, after "
          f"{s['warmup_seconds']:.0f} s of warm-up: RSS {s['rss_after_warmup'] / mib:.1f} -> "
          f"{s['rss_last'] / mib:.1f} MiB (max {s['rss_max'] / mib:.1f}), descriptors "
          f"{s['fds_after_warmup']} -> {s['fds_last']} (max {s['fds_max']}), threads "
          f"{s['threads_after_warmup']} -> {s['threads_last']} (max {s['threads_max']})")
for v in d["violations"]:
    print("  " + v)
PY
exit $status
