#!/usr/bin/env bash
# run_fuzzers.sh BUILD_DIR SECONDS [NAME ...]   (`make fuzz`)
#
# Runs every fuzz target of BUILD_DIR (BERTOLOGY_FUZZ=ON), or the NAMEs
# given, one after the other (one process: the machine has 2 cores) for
# SECONDS each, on BUILD_DIR/fuzz/campaign-NAME/corpus seeded from the repo.
# Findings stay in BUILD_DIR/fuzz/campaign-NAME/artifacts; fix the parser
# and copy the input to tests/fuzz/corpus/NAME/regression-WHAT.
set -uo pipefail
build=$1 secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
failed=0
while read -r name bin seeds max_len; do
  [ -n "$name" ] || continue
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  "$here/run_fuzzer.sh" "$bin" "$seeds" "$build/fuzz/campaign-$name" \
    "$secs" "$max_len" || failed=1
done <"$build/fuzz/fuzzers.txt"
exit $failed
