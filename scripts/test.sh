#!/usr/bin/env bash
# Install what is missing, build with warnings as errors, run every test suite, then build the
# amd64 Debian packages and check them (scripts/package.sh, scripts/check-packages.sh).
# Extra arguments go to ctest (e.g. -L unit, -R tst_layers); a run with them skips the packages.
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
if [ $# -eq 0 ] && [ "$(dpkg --print-architecture)" = amd64 ]; then
  scripts/package.sh amd64
  scripts/check-packages.sh
fi
