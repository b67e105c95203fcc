#!/usr/bin/env bash
# Install what is missing, build with warnings as errors, run every test suite, fuzz every parser
# of outside bytes for 30 s each (scripts/fuzz.sh), inject a dozen faults into training runs
# (tests/chaos/chaos.py), then build the
# amd64 Debian packages and check them (scripts/package.sh, scripts/check-packages.sh); on an
# amd64 machine also cross-build the arm64 packages, check them, and let the packaged arm64 node
# train with two amd64 nodes under qemu-user (tests/arm64/node-under-qemu.sh), and run the
# engine's layer suites built for arm64 under qemu-user (tests/arm64/layers-under-qemu.sh).
# Extra arguments go to ctest (e.g. -L unit, -R tst_layers); a run with them skips the packages.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, printed as it ends and summed up at the end, so a slow CI run says
# where its minutes went (CI has 90 minutes on two cores; docs/development.md).
stage_times=()
stage_start=$SECONDS
stage() {
  local took=$((SECONDS - stage_start))
  stage_times+=("$(printf '%5d s  %s' "$took" "$1")")
  echo "== test.sh: $1 took $took s"
  stage_start=$SECONDS
}
# At the end, or when a stage fails: every stage's time, the failing one as unfinished.
report_times() {
  local status=$?
  echo "== test.sh: where the time went:"
  [ ${#stage_times[@]} -eq 0 ] || printf '%s\n' "${stage_times[@]}"
  if [ "$status" -ne 0 ]; then
    printf '%5d s  (unfinished: failed in the stage after the last one above)\n' "$((SECONDS - stage_start))"
  fi
  echo "$SECONDS s in all"
}
trap report_times EXIT
scripts/install-deps.sh
stage "install"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
scripts/check-format.sh
# No file under app/, net/, vision/, ui/ over 700 lines, no function over 150 (docs/development.md).
scripts/check-shape.py
stage "format and shape checks"
scripts/build.sh ci
stage "build (ci preset)"
# One suite at a time: the suites use both cores themselves, and OpenMP threads that spin
# while another process holds the cores slow everything down.
ctest --preset ci "$@"
stage "test suites (ctest)"
# Every parser that reads bytes from outside, fuzzed for 30 s each (clang 16, ASan + UBSan).
if [ $# -eq 0 ]; then
  scripts/fuzz.sh 30 build/fuzz/artifacts
  stage "fuzz (build and run)"
fi
# Chaos: sync, async, local-SGD and shipping runs while nodes are killed, frozen, cut off and
# slowed at random; every run must finish or stop with a reason, count every sample once, end
# with one set of weights, save what it reports, and leave every agent alive (tests/chaos).
# On an edge lab where one can be set up (root), else on plain local nodes.
if [ $# -eq 0 ]; then
  tests/chaos/chaos.py --auto --bin build/ci/bin --out build/ci/chaos --faults 12 --seed "$RANDOM"
  stage "chaos"
fi
if [ $# -eq 0 ] && [ "$(dpkg --print-architecture)" = amd64 ]; then
  scripts/package.sh amd64
  stage "amd64 packages (release build)"
  scripts/check-packages.sh amd64
  stage "amd64 packages checked"
  # arm64: the sysroot (Debian's arm64 packages, about 280 MB to download) and the cross build.
  scripts/package.sh arm64
  stage "arm64 packages (cross build)"
  scripts/check-packages.sh arm64
  stage "arm64 packages checked"
  arm64_root=build/ci/arm64-package
  rm -rf "$arm64_root"
  dpkg-deb -x out/packages/edgetrain-node_*_arm64.deb "$arm64_root"
  tests/arm64/node-under-qemu.sh --host-bin build/ci/bin --arm64-bin "$arm64_root/usr/bin" \
    --sysroot out/sysroot-arm64 --out build/ci/arm64-node-under-qemu
  stage "arm64 node under qemu"
  # The engine's layer, GEMM and checkpointing suites built for arm64 (no oneDNN there: the
  # portable kernels) and run under qemu-user against the same references.
  # (77, skipped, cannot happen here: the steps above needed the same sysroot, compiler and qemu)
  tests/arm64/layers-under-qemu.sh --sysroot out/sysroot-arm64 --build build/arm64-tests
  stage "arm64 layer suites under qemu"
fi
