#!/bin/bash
# The engine's layer suites cross-compiled for arm64 (the toolchain and sysroot the node's arm64
# package is built with: scripts/cross-build.sh, scripts/arm64-sysroot.sh) and run under
# qemu-user. On arm64 there is no oneDNN in Debian, so every layer runs its portable path
# (im2col + the Eigen GEMM with NEON, the fused batch norm + ReLU's plain loops) and the suites
# check it against the same references as on amd64: the naive convolution, finite-difference
# gradients, the layer-by-layer path, the double-precision GEMM.
#
#   tests/arm64/layers-under-qemu.sh [--sysroot out/sysroot-arm64] [--build build/arm64-tests]
#       [--suites "tst_gemm tst_layers tst_checkpointing"]
#
# Exit status: 0 every suite passed, 1 one failed (or did not build), 77 skip (no sysroot,
# cross compiler or qemu here: scripts/cross-build.sh arm64 sets them up).
set -euo pipefail
cd "$(dirname "$0")/../.."
SYSROOT=out/sysroot-arm64
BUILD=build/arm64-tests
SUITES="tst_gemm tst_layers tst_checkpointing"
while [ $# -gt 0 ]; do
    case "$1" in
    --sysroot) SYSROOT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --suites) SUITES=$2; shift 2 ;;
    *) echo "layers-under-qemu.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
skip() { echo "layers-under-qemu.sh: skipped: $*"; exit 77; }
[ -f "$SYSROOT/.sysroot/complete" ] || skip "no arm64 sysroot at $SYSROOT (scripts/arm64-sysroot.sh)"
command -v aarch64-linux-gnu-g++ >/dev/null || skip "no cross compiler (g++-aarch64-linux-gnu)"
command -v qemu-aarch64-static >/dev/null || skip "qemu-aarch64-static is not installed (qemu-user-static)"
SYSROOT=$(realpath "$SYSROOT")

cmake -S . -B "$BUILD" -G Ninja --toolchain "$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DEDGETRAIN_SYSROOT="$SYSROOT" -DCMAKE_BUILD_TYPE=Release -DEDGETRAIN_NATIVE=OFF \
    -DEDGETRAIN_BUILD_GUI=OFF -DBUILD_TESTING=ON -DEDGETRAIN_WITH_DNNL=OFF \
    -DEDGETRAIN_WERROR=ON >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$(nproc)" --target $SUITES

failed=0
for suite in $SUITES; do
    start=$(date +%s)
    if qemu-aarch64-static -L "$SYSROOT" "$BUILD/tests/$suite" -silent >"$BUILD/$suite.log" 2>&1; then
        result=passed
    else
        result=FAILED
        failed=1
        grep -E "^(FAIL|   Loc)" "$BUILD/$suite.log" | head -20 || true
    fi
    echo "arm64 under qemu: $suite $result, $(grep -m1 '^Totals' "$BUILD/$suite.log" || echo 'no totals'), $(($(date +%s) - start)) s"
done
exit "$failed"
