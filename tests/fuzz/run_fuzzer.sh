#!/usr/bin/env bash
# run_fuzzer.sh BINARY SEED_DIR WORK_DIR SECONDS MAX_LEN [libFuzzer flags]
#
# Runs one libFuzzer target for SECONDS on WORK_DIR/corpus, seeded from
# SEED_DIR (read only: new inputs go to WORK_DIR/corpus), with a 10 s
# per-input timeout so hangs are caught and crash, timeout and OOM inputs
# written to WORK_DIR/artifacts/. Every seed and regression input runs
# first, so an old crash fails at once. Exits non-zero on any finding.
# Prints the executions and the CPU seconds used.
set -uo pipefail
bin=$1 seeds=$2 work=$3 secs=$4 max_len=$5
shift 5
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/fuzz.log"
"$bin" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
  -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$@" "$work/corpus" "$seeds" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
times >"$work/times"  # not in a pipeline: a subshell has no children
cpu=$(tail -1 "$work/times" | awk '{
  split($1, u, "m"); split($2, s, "m");
  printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
echo "$(basename "$bin"): rc=$rc execs=${execs:-?} cpu_s=$cpu" \
  "corpus=$(find "$work/corpus" -type f | wc -l)"
if [ $rc -ne 0 ]; then
  tail -60 "$log"
  echo "findings in $work/artifacts:" && ls -l "$work/artifacts"
fi
exit $rc
