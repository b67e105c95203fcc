#!/usr/bin/python3
"""PyTorch reads EdgeTrain's weights: names, layouts, dtypes and numerics.

Trains LeNet-5 briefly with edgetrain-cli, loads the safetensors file into the reference
PyTorch model (../shared/bench/models.py) with load_state_dict(strict=True), evaluates it on the
same Fashion-MNIST test samples with the same normalisation, and expects the same accuracy.
Registered with CTest only where /usr/bin/python3 can import torch.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = "/usr/share/datasets/fashion-mnist"


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(body[b:e], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
        tensors[name] = torch.from_numpy(arr.copy())
    return tensors, meta


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shared-bench", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.shared_bench)
    import models

    limit = 2000
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "lenet5.safetensors")
        out = subprocess.run([a.cli, "train", "--model", "lenet5", "--epochs", "1", "--train-limit", "6000",
                              "--test-limit", str(limit), "--threads", "2", "--save", weights, "--json"],
                             capture_output=True, text=True, check=True).stdout
        edgetrain_acc = json.loads(out.strip().splitlines()[-1])["test_accuracy"]
        state, meta = read_safetensors(weights)

    assert "edgetrain.model_spec" in meta, "the spec travels in __metadata__"
    model = models.lenet5()
    model.load_state_dict(state, strict=True)  # raises on any missing, extra or misshaped tensor
    model.eval()
    x = read_idx(f"{ROOT}/t10k-images-idx3-ubyte.gz")[:limit].astype(np.float32) / 255.0
    y = read_idx(f"{ROOT}/t10k-labels-idx1-ubyte.gz")[:limit].astype(np.int64)
    x = (torch.from_numpy(x).unsqueeze(1) - 0.2860) / 0.3530
    with torch.no_grad():
        torch_acc = (model(x).argmax(1) == torch.from_numpy(y)).float().mean().item()
    print(f"EdgeTrain test accuracy {edgetrain_acc:.4f}, PyTorch on the same weights {torch_acc:.4f}")
    # Float summation order differs; at most one of 2,000 predictions may flip.
    if abs(edgetrain_acc - torch_acc) > 1.0 / limit + 1e-9:
        print("FAIL: PyTorch disagrees with EdgeTrain on the same weights")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
