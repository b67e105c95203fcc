#!/usr/bin/python3
"""Where PyTorch's training step spends its time: the share of its convolutions (issue #17).

    /usr/bin/python3 tests/benchmarks/torch_conv_share.py [--threads 1,2] [--steps 20]

The same models and step as engine_vs_torch.py (../shared/bench/models.py; zero_grad, forward,
cross-entropy, backward, SGD momentum 0.9 on random data, the oneDNN sgemm shim preloaded),
profiled with torch.profiler: the self CPU time of the convolution operators (forward and both
backward passes, whatever kernel PyTorch chose: oneDNN's mkldnn_convolution or im2col + GEMM)
against the self CPU time of the whole step. PyTorch's convolutions on this machine are oneDNN's,
the engine's default convolutions are the same library's primitives: with kernels no faster
than those, the engine's time per step is at least PyTorch's convolution time, so its ratio to
PyTorch cannot pass 1 / share. Prints, per model and thread count, the operator that ran the
convolutions, its share, and that bound.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engine_vs_torch as evt  # noqa: E402  (the shim and ../shared/bench lookup)

CONV_OPS = ("convolution", "conv2d")  # aten::mkldnn_convolution, convolution_backward, ...
# The dispatch layers above the kernels: their self time is the framework's, not a convolution's.
WRAPPERS = ("aten::conv2d", "aten::convolution", "aten::_convolution")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--shared-bench", default="")
    a = ap.parse_args()
    bench_dir = evt.shared_bench(a.shared_bench)
    evt.ensure_shim(bench_dir)
    sys.path.insert(0, bench_dir)
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    import models

    print(f"PyTorch {torch.__version__}, oneDNN (mkldnn) "
          f"{'on' if torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled else 'off'}")
    print(f"{'workload':<16}{'thr':>4}{'step ms':>9}{'conv ms':>9}{'share':>8}{'bound':>8}  conv operators")
    for name, batch, _ in evt.CONFIGS:
        for t in [int(x) for x in a.threads.split(",")]:
            torch.set_num_threads(t)
            torch.manual_seed(0)
            model, s = models.build(name)
            model.train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x, y = torch.randn(batch, *s), torch.randint(0, 10, (batch,))

            def step():
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x), y).backward()
                opt.step()
            for _ in range(3):
                step()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(a.steps):
                    step()
            events = prof.key_averages()
            total = sum(e.self_cpu_time_total for e in events)
            conv = [e for e in events if any(k in e.key for k in CONV_OPS)
                    and e.key not in WRAPPERS and e.self_cpu_time_total > 0]
            conv_us = sum(e.self_cpu_time_total for e in conv)
            share = conv_us / total
            top = sorted(conv, key=lambda e: -e.self_cpu_time_total)[:3]
            ops = ", ".join(f"{e.key} {100 * e.self_cpu_time_total / total:.0f} %" for e in top)
            print(f"{name + ' b' + str(batch):<16}{t:>4}{total / a.steps / 1000:>9.2f}"
                  f"{conv_us / a.steps / 1000:>9.2f}{100 * share:>7.1f}%{1 / share:>7.2f}x  {ops}",
                  flush=True)


if __name__ == "__main__":
    main()
