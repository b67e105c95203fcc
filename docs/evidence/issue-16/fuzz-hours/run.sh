#!/bin/bash
# one target: $1 name, $2 seconds
t=$1; s=$2
w=/dev/shm/fz-$t; mkdir -p $w/corpus $w/inputs
extra=()
[ $t = annotations ] && extra+=(/dev/shm/fa/corpus)
[ $t = messages ] && extra+=(/dev/shm/fm/corpus)
export EDGETRAIN_FUZZ_TMPDIR=$w/inputs
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
start=$(date +%s)
/usr/bin/time -v nice -n 10 /tmp/fuzz-bin/fuzz_$t -max_total_time=$s -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix=/tmp/fuzz-hours/$t- $w/corpus /work/main/tests/fuzz/corpus/$t "${extra[@]}" \
  > /tmp/fuzz-hours/fuzz_$t.log 2>&1
echo "rc $? wall $(( $(date +%s) - start )) s" >> /tmp/fuzz-hours/fuzz_$t.log
