#!/usr/bin/env bash
# Fails when a C++ file differs from what the checked-in .clang-format makes of it, and names the
# files; `scripts/check-format.sh --fix` rewrites them instead. CI runs it from scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/edgetrain-format.$$; then
  grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' /tmp/edgetrain-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/not formatted: /' >&2
  rm -f /tmp/edgetrain-format.$$
  echo "Run scripts/check-format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))." >&2
  exit 1
fi
rm -f /tmp/edgetrain-format.$$
echo "clang-format: ${#files[@]} files as .clang-format has them"
