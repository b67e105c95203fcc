#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang 16, ASan + UBSan, every library
# instrumented) and runs each for a while on a copy of its seed corpus, tests/fuzz/corpus/<name>
# (the copy grows, the checked-in seeds do not). Prints each target's executions, coverage and
# result; exits non-zero if any target found a crash, a leak, a timeout, an out-of-memory or a
# sanitizer report. The input that did it is kept in the artifacts folder, with the target's log:
#   build/fuzz/bin/fuzz_<name> -minimize_crash=1 -runs=20000 <artifact>   makes it small
#   build/fuzz/bin/fuzz_<name> <artifact>                                  replays it
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (30)] [ARTIFACTS_DIR (build/fuzz/artifacts)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
artifacts="${2:-build/fuzz/artifacts}"
targets=(frame messages files annotations boxes)
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: seconds must be a positive number, got '$seconds'" >&2; exit 2; }

# clang 16 (clang 14 cannot compile the engine) and its libFuzzer and sanitizer runtimes; no OpenMP
# (libomp-16-dev would replace the tsan preset's libomp-14-dev: the fuzz build is one thread)
# (scripts/install-deps.sh installs them; scripts/test.sh runs this for 30 s a target).
missing=()
for p in clang-16 libclang-rt-16-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz.sh: missing ${missing[*]}: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)"

mkdir -p "$artifacts"
artifacts="$(cd "$artifacts" && pwd)"
# The corpus copies, and where the file targets write each input (fuzzinput.h): RAM if there is
# /dev/shm (thousands of files a second).
work="$(mktemp -d "$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/edgetrain-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export EDGETRAIN_FUZZ_TMPDIR="$work/inputs"
# Every sanitizer report ends the run as a finding; leaks count. Options the caller set come
# after ours (UBSAN_OPTIONS=suppressions=FILE: go on past a known, reported finding).
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

echo "Fuzzing ${#targets[@]} targets for ${seconds} s each; logs and findings in $artifacts"
printf '%-12s %12s %9s %8s %8s %13s  %s\n' target executions exec/s cov ft "corpus" result
failed=0
start=$SECONDS
for t in "${targets[@]}"; do
  corpus="$work/corpus-$t"
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  before=$(find "$corpus" -type f | wc -l)
  log="$artifacts/fuzz_$t.log"
  rc=0
  build/fuzz/bin/fuzz_"$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$corpus" >"$log" 2>&1 || rc=$?
  after=$(find "$corpus" -type f | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  coverage=$(grep -E '^#[0-9]+' "$log" | grep 'cov:' | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$coverage")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$coverage")
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    failed=1
    if grep -q 'ERROR: LeakSanitizer' "$log"; then result=leak
    elif grep -q 'ERROR: AddressSanitizer' "$log"; then
      result="asan: $(grep -m1 -o 'ERROR: AddressSanitizer: [A-Za-z-]*' "$log" | cut -d' ' -f3)"
    elif grep -q 'runtime error:' "$log"; then
      result="ubsan: $(grep -m1 'runtime error:' "$log" | sed 's/.*runtime error: //' | cut -c1-60)"
    elif grep -q 'ERROR: libFuzzer: timeout' "$log"; then result=timeout
    elif grep -q 'ERROR: libFuzzer: out-of-memory' "$log"; then result=out-of-memory
    elif grep -q 'ERROR: libFuzzer: deadly signal' "$log"; then result=crash
    else result="exit $rc"
    fi
    unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    [ -n "$unit" ] && result="$result ($unit)"
  fi
  printf '%-12s %12s %9s %8s %8s %13s  %s\n' "fuzz_$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "$before -> $after" "$result"
done
echo "Wall time: $((SECONDS - start)) s of fuzzing (build not counted)"
exit "$failed"
