#!/usr/bin/python3
"""EdgeTrain's engine against PyTorch at its best, alternately, in one run on one machine.

    scripts/install-deps.sh bench && scripts/build.sh default
    /usr/bin/python3 tests/benchmarks/engine_vs_torch.py [--rounds 5] [--out bench.json]

PyTorch side: Debian's python3-torch with its BLAS sgemm_ routed to oneDNN by
../shared/bench/dnnl_sgemm_shim.cpp (built here on first use and LD_PRELOADed), the same
models (../shared/bench/models.py) and the same step (zero_grad, forward, cross-entropy,
backward, SGD momentum 0.9) on random data. EdgeTrain side: `edgetrain-cli bench --json`
(`--conv im2col|dnnl` passes the convolution backend on; the default is the CLI's).
Each round runs an EdgeTrain block then a PyTorch block for every (model, threads), so machine
noise hits both; the ratio is median EdgeTrain img/s over median PyTorch img/s. Also prints
SGEMM 1024^3 GFLOP/s of each GEMM backend against this CPU's FMA ceiling (measured by the CLI).
"""
import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLI = os.path.join(REPO, "build", "default", "bin", "edgetrain-cli")
CONFIGS = [("lenet5", 64, "1x28x28"), ("resnet20", 32, "3x32x32"), ("resnet56", 32, "3x32x32")]
# Issue #17's minimum ratios, by (model, threads); issue #2's were 1.0 (LeNet-5), 0.8 (ResNet-20).
TARGETS = {("lenet5", 1): 2.0, ("lenet5", 2): 2.0, ("resnet20", 1): 2.0, ("resnet20", 2): 1.6,
           ("resnet56", 1): 2.0, ("resnet56", 2): 1.6}
CEILING_SHARE = 0.60  # useful GFLOP/s of a ResNet-20 step at one thread over the FMA ceiling


def shared_bench(path):
    for candidate in (path, os.path.join(REPO, "..", "shared", "bench")):
        if candidate and os.path.exists(os.path.join(candidate, "models.py")):
            return os.path.abspath(candidate)
    sys.exit("engine_vs_torch.py: cannot find ../shared/bench (use --shared-bench DIR)")


def ensure_shim(bench_dir):
    """Builds the oneDNN sgemm shim and re-executes this script with it preloaded."""
    shim = os.path.join(REPO, "build", "bench", "libdnnl_sgemm_shim.so")
    if os.environ.get("EDGETRAIN_SHIM") == shim:
        return shim
    if not os.path.exists(shim):
        os.makedirs(os.path.dirname(shim), exist_ok=True)
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", os.path.join(bench_dir, "dnnl_sgemm_shim.cpp"),
                        "-o", shim, "-ldl"], check=True)
    env = dict(os.environ, LD_PRELOAD=shim, EDGETRAIN_SHIM=shim)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def edgetrain_block(model, batch, shape, threads, steps, conv):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EDGETRAIN_SHIM")}
    env["OMP_NUM_THREADS"] = str(threads)
    args = [CLI, "bench", "--model", model, "--batch", str(batch), "--input", shape,
            "--threads", str(threads), "--steps", str(steps), "--warmup", "3", "--json"]
    if conv:
        args += ["--conv", conv]
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    flops_per_step = r["gflops"] * st.median(r["step_seconds"])
    return [batch / s for s in r["step_seconds"]], flops_per_step, r.get("conv", "im2col")


def torch_block(step, batch, threads, steps):
    import torch
    torch.set_num_threads(threads)
    for _ in range(3):
        step()
    ips = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ips.append(batch / (time.perf_counter() - t0))
    return ips


def gemm_figures():
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EDGETRAIN_SHIM")}
    out = subprocess.run([CLI, "bench", "--gemm-size", "1024", "--threads", "1", "--json"],
                         capture_output=True, text=True, env=env, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["results"], r["fma_peak_gflops_per_core"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shared-bench", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--conv", default="", help="EdgeTrain's convolution backend (im2col or dnnl)")
    a = ap.parse_args()
    bench_dir = shared_bench(a.shared_bench)
    ensure_shim(bench_dir)
    if not os.path.exists(CLI):
        sys.exit(f"engine_vs_torch.py: {CLI} missing; run scripts/build.sh default first")
    sys.path.insert(0, bench_dir)
    import torch
    import torch.nn.functional as F
    import models

    threads = [int(t) for t in a.threads.split(",")]
    torch.manual_seed(0)
    steps_for = {"lenet5": 60, "resnet20": 12, "resnet56": 5}
    flops = {}
    conv_backend = ""
    samples = {}
    torch_steps = {}
    for name, batch, shape in CONFIGS:
        model, s = models.build(name)
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(batch, *s), torch.randint(0, 10, (batch,))

        def step(model=model, opt=opt, x=x, y=y):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
        torch_steps[name] = step
    for r in range(a.rounds):
        for name, batch, shape in CONFIGS:
            for t in threads:
                key = (name, t)
                e, flops[name], conv_backend = edgetrain_block(name, batch, shape, t, steps_for[name],
                                                                a.conv)
                p = torch_block(torch_steps[name], batch, t, steps_for[name])
                samples.setdefault(key, ([], []))
                samples[key][0].extend(e)
                samples[key][1].extend(p)
        print(f"# round {r + 1}/{a.rounds} done", flush=True)

    rows = []
    print(f"\nEdgeTrain's convolution backend: {conv_backend}")
    print(f"\n{'workload':<16}{'thr':>4}{'EdgeTrain img/s':>17}{'PyTorch img/s':>15}{'ratio':>8}{'target':>8}")
    ok = True
    for name, batch, _ in CONFIGS:
        for t in threads:
            e, p = samples[(name, t)]
            me, mp = st.median(e), st.median(p)
            ratio = me / mp
            target = TARGETS[(name, t)]
            ok &= ratio >= target
            rows.append({"model": name, "batch": batch, "threads": t, "edgetrain_img_s": me,
                         "torch_img_s": mp, "ratio": ratio, "target": target})
            print(f"{name + ' b' + str(batch):<16}{t:>4}{me:>17,.0f}{mp:>15,.0f}{ratio:>8.2f}{target:>8.2f}")
    gemm, peak = gemm_figures()
    print(f"\nSGEMM 1024^3, 1 thread (FMA ceiling of one core, measured: {peak:.0f} GFLOP/s):")
    for g in gemm:
        print(f"  {g['backend']:<6}{g['gflops']:7.1f} GFLOP/s = {100 * g['gflops'] / peak:5.1f} % of the ceiling")
    e, _ = samples[("resnet20", 1)] if ("resnet20", 1) in samples else ([], [])
    share = None
    if e:
        useful = flops["resnet20"] * st.median(e) / 32  # GFLOP per step x steps/s
        share = useful / peak
        ok &= share >= CEILING_SHARE
        print(f"\nResNet-20 b32 training step, 1 thread: {useful:.1f} GFLOP/s of useful work = "
              f"{100 * share:.1f} % of the ceiling (target {100 * CEILING_SHARE:.0f} %)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "conv": conv_backend, "resnet20_ceiling_share": share, "gemm": gemm, "fma_peak_gflops_per_core": peak, "torch": torch.__version__,
                       "time": time.strftime("%Y-%m-%d %H:%M:%S")}, f, indent=1)
    print("\nall ratios meet their targets" if ok else "\nsome ratios are below their targets")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
