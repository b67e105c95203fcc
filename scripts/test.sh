#!/usr/bin/env bash
# Install what is missing, build with warnings as errors, run every test suite.
# Extra arguments go to ctest (e.g. -L unit, -R tst_layers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
scripts/check-format.sh
scripts/build.sh ci
# One suite at a time: the suites use both cores themselves, and OpenMP threads that spin
# while another process holds the cores slow everything down.
ctest --preset ci "$@"
