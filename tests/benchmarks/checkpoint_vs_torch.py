#!/usr/bin/python3
"""EdgeTrain's checkpointing against PyTorch's checkpoint_sequential, at equal memory.

    scripts/install-deps.sh bench && scripts/build.sh default
    /usr/bin/python3 tests/benchmarks/checkpoint_vs_torch.py [--models resnet56,resnet110]

PyTorch side (../shared/bench/torch_checkpoint_mem.py, Debian's python3-torch): ResNet-56/110,
batch 32, 32x32x3, checkpoint_sequential with 0 (none), 2, 4 and round(sqrt(depth)) segments.
Its step memory is the peak RSS growth of a training step over the state after setup (weights
and batch exist; gradients, momentum, activations and scratch are what the step adds), with
glibc's mmap threshold pinned (MALLOC_MMAP_THRESHOLD_=131072) so that RSS follows live memory;
its time factor is the step time against no checkpointing, alternating in one process.

EdgeTrain side: for each PyTorch point, the budget is that same step memory plus what
EdgeTrain's budget also covers (weights and the input batch). `edgetrain-cli memory --budget
--run` picks the cheapest schedule for it, runs real steps and reports the measured peak and
the time factor against its own store-all, alternating. EdgeTrain wins a point when it fits and
its time factor is lower. Also: the smallest budget EdgeTrain can train in, against the
smallest PyTorch reaches.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLI = os.path.join(REPO, "build", "default", "bin", "edgetrain-cli")
MIB = 1024 * 1024


def torch_script(bench_dir):
    path = os.path.join(bench_dir, "torch_checkpoint_mem.py")
    if not os.path.exists(path):
        sys.exit(f"checkpoint_vs_torch.py: {path} not found (use --shared-bench DIR)")
    return path


def run_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet56,resnet110")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--shared-bench", default=os.path.join(REPO, "..", "shared", "bench"))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    script = torch_script(a.shared_bench)
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    results = []
    wins = losses = 0
    for model in a.models.split(","):
        depth = int(model[6:])
        segs = [0, 2, 4, int(round(math.sqrt(depth)))]
        timing = run_json([sys.executable, script, "time", "--model", model, "--threads", str(a.threads),
                           "--rounds", str(a.rounds), "--steps", "2", "--batch", "32"], env)
        torch_factor = {c["segments"]: c["ratio_vs_nockpt_median"] for c in timing["configs"]}
        print(f"\n{model}, batch 32, {a.threads} thread(s)")
        print(f"{'PyTorch':>10} {'step MiB':>9} {'factor':>7} | {'EdgeTrain schedule':>18} {'budget MiB':>10} "
              f"{'measured MiB':>12} {'factor':>7} {'predicted':>9}  winner")
        floor = None
        for s in segs:
            mem = run_json([sys.executable, script, "mem", "--model", model, "--segments", str(s),
                            "--threads", "1", "--batch", "32"], env)
            params = mem["params"]
            step_bytes = mem["step_rss_delta_mb"] * MIB
            # EdgeTrain's budget also covers the weights (and BN statistics) and the input batch.
            budget = int(step_bytes + 4 * params + 32 * 3 * 32 * 32 * 4)
            et = run_json([CLI, "memory", "--model", model, "--batch", "32", "--threads", str(a.threads),
                           "--budget", str(budget), "--run", "--steps", str(a.steps), "--json"])
            tf = torch_factor[s]
            row = {"model": model, "torch_segments": s, "torch_step_bytes": step_bytes,
                   "torch_time_factor": tf, "budget_bytes": budget, "edgetrain": et}
            results.append(row)
            if not et["fits"]:
                print(f"{'seg ' + str(s):>10} {step_bytes / MIB:9.1f} {tf:7.3f} | {'nothing fits':>18} "
                      f"{budget / MIB:10.1f}")
                losses += s != 0
                continue
            ef = et["measured_time_factor"]
            win = ef < tf if s != 0 else None
            if win is not None:
                wins += win
                losses += not win
            print(f"{'seg ' + str(s) if s else 'none':>10} {step_bytes / MIB:9.1f} {tf:7.3f} | "
                  f"{et['schedule']:>18} {budget / MIB:10.1f} {et['measured_peak_bytes'] / MIB:12.1f} "
                  f"{ef:7.3f} {et['predicted_recompute_factor']:9.3f}  "
                  f"{'' if win is None else ('EdgeTrain' if win else 'PyTorch')}")
            floor = budget if floor is None else min(floor, budget)
        least = run_json([CLI, "memory", "--model", model, "--batch", "32", "--threads", str(a.threads),
                          "--budget", "1MiB", "--json"])
        print(f"smallest budget: PyTorch (seg {segs[-1]}) needs {floor / MIB:.1f} MiB; "
              f"EdgeTrain trains in {least['min_budget_bytes'] / MIB:.1f} MiB")
        results.append({"model": model, "torch_min_budget_bytes": floor,
                        "edgetrain_min_budget_bytes": least["min_budget_bytes"]})
    print(f"\nEdgeTrain faster at equal memory in {wins} of {wins + losses} checkpointed points")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if losses == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
