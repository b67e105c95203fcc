#!/usr/bin/env bash
# The main job: install what is missing, build, and open the desktop app on the demo session:
# three local edgetrain-node processes (127.0.0.1, a demo key) and vtest.avi with the hog+motion
# teacher and the verified frames of tests/data/vtest, ready to click through the seven steps.
# Without a display the same session runs headless (about 3.5 minutes) and writes the PDF report, the charts (PNG + SVG) and the CSV files
# to out/demo/report/. Extra arguments go to edgetrain (e.g. --headless, --out DIR).
# scripts/cli-demo.sh is the same story told by edgetrain-cli, step by step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
args=(--demo --out out/demo)
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "No display: running the demo session headless; the report goes to out/demo/report/"
  args+=(--headless)
fi
exec build/default/bin/edgetrain "${args[@]}" "$@"
