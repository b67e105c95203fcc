#!/bin/bash
# The memory budget is the process's, measured from outside the engine: for ResNet-56 at batch
# 32 and the full-frame student (the detector at 3x192x256, batch 12) at four budgets each,
# `edgetrain-cli memory --run` plans within the budget (the process's own overhead measured and
# left out) and reports the process's anonymous RSS growth over the steps (the kernel's VmHWM,
# not the engine's count). Then the same command runs inside a cgroup v1 memory limit of the
# budget + the RSS the process had before the model (code, libraries, runtime: the stated fixed
# part); it must finish, without the kernel's OOM killer.
#
#   tests/benchmarks/memory_promise.sh [--build build/default] [--threads 1] [--gemm dnnl]
#       [--no-cgroup]
# Exit 1 if a plan that fits grew the process past its budget or a run failed in its cgroup.
set -euo pipefail
BUILD=build/default
THREADS=1
GEMM=dnnl
CGROUP=1
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --gemm) GEMM=$2; shift 2 ;;
    --no-cgroup) CGROUP=0; shift ;;
    *) echo "memory_promise.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
CLI=$BUILD/bin/edgetrain-cli
[ -x "$CLI" ] || { echo "memory_promise.sh: $CLI not built" >&2; exit 2; }
CG_ROOT=/sys/fs/cgroup/memory
if [ "$CGROUP" = 1 ] && { [ "$(id -u)" != 0 ] || [ ! -w "$CG_ROOT" ]; }; then
    echo "memory_promise.sh: no writable cgroup v1 memory controller ($CG_ROOT, root): RSS only"
    CGROUP=0
fi
export OMP_NUM_THREADS=$THREADS
OUT=$(mktemp -d)
CG=""
cleanup() {
    [ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null || true
    rm -rf "$OUT"
}
trap cleanup EXIT

field() { python3 -c "import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print('' if v is None else v)" "$1" "$2"; }
mib() { python3 -c "print('%.1f' % (int('$1') / 1048576))"; }

failed=0
printf '%-26s %8s  %-22s %9s %9s %9s %9s %7s  %s\n' model budget schedule overhead engine rss \
    rss/bgt recomp cgroup
run_case() {
    local label=$1 budget=$2; shift 2
    local args=("$@" --budget "$budget" --run --steps 4 --threads "$THREADS" --gemm "$GEMM" --json)
    "$CLI" memory "${args[@]}" 2>"$OUT/err" | tail -1 >"$OUT/m.json" || {
        echo "$label $budget: edgetrain-cli memory failed: $(tail -1 "$OUT/err")"; failed=1; return; }
    local fits budgetBytes overhead engine rss base sched tf
    fits=$(field "$OUT/m.json" fits); budgetBytes=$(field "$OUT/m.json" budget_bytes)
    overhead=$(field "$OUT/m.json" process_overhead_bytes)
    engine=$(field "$OUT/m.json" measured_peak_bytes); rss=$(field "$OUT/m.json" measured_rss_bytes)
    base=$(field "$OUT/m.json" baseline_rss_bytes); sched=$(field "$OUT/m.json" schedule)
    tf=$(field "$OUT/m.json" measured_time_factor)
    local ratio verdict cg="-"
    ratio=$(python3 -c "print('%.3f' % ($rss / $budgetBytes))")
    if [ "$fits" != True ]; then
        verdict="(does not fit: the smallest budget is $(mib "$(field "$OUT/m.json" min_budget_bytes)") MiB)"
    elif [ "$rss" -gt "$budgetBytes" ]; then
        verdict="OVER"; failed=1
    else
        verdict="ok"
    fi
    if [ "$CGROUP" = 1 ] && [ "$fits" = True ]; then
        CG=$CG_ROOT/edgetrain-promise-$$
        mkdir -p "$CG"
        local limit=$((budgetBytes + base))
        echo "$limit" >"$CG/memory.limit_in_bytes"
        local rc=0
        (echo $BASHPID >"$CG/cgroup.procs" && exec "$CLI" memory "${args[@]}") >/dev/null 2>"$OUT/cgerr" || rc=$?
        local failcnt oom
        failcnt=$(cat "$CG/memory.failcnt")
        oom=$(awk '/oom_kill /{print $2}' "$CG/memory.oom_control" 2>/dev/null || echo "?")
        cg="limit $(mib "$limit") MiB: exit $rc, limit hit $failcnt times, oom kills ${oom:-?}"
        if [ "$rc" != 0 ] || { [ -n "$oom" ] && [ "$oom" != 0 ] && [ "$oom" != "?" ]; }; then
            failed=1; cg="$cg FAILED"
        fi
        rmdir "$CG"; CG=""
    fi
    printf '%-26s %8s  %-22s %9s %9s %9s %9s %7s  %s %s\n' "$label" "$budget" "${sched:0:22}" \
        "$(mib "${overhead:-0}")" "$(mib "$engine")" "$(mib "$rss")" "$ratio" "${tf:0:5}" "$verdict" "$cg"
}

for b in 48MiB 64MiB 96MiB 128MiB; do
    run_case "resnet56 b32" "$b" --model resnet56 --batch 32
done
for b in 64MiB 80MiB 96MiB 128MiB; do
    run_case "detector 3x192x256 b12" "$b" --model detector --input 3x192x256 --batch 12
done
echo "sizes in MiB; overhead: the process's growth over a step beyond the engine's tensors, measured and planned within the budget; rss: the process's anonymous RSS growth at its peak over 4 steps; recomp: step time against store-all"
exit $failed
