#!/usr/bin/env bash
# Which thread settings to serve with: libtorch intra-op threads x OpenBLAS
# threads (and GNU OpenMP's wait policy), timed on the encoder pass and the
# sweep of one model. The numbers behind ConfigureThreads in bench/RESULTS.md.
# Usage: bench/thread_matrix.sh BUILD_DIR MODEL_DIR DATA_TSV [EXAMPLES MASKS]
set -euo pipefail
BIN=$1/bin/bertology-bench-core
MODEL=$2
DATA=$3
EXAMPLES=${4:-32}
MASKS=${5:-0}
printf "%-9s %-8s %-8s %12s %12s %10s %12s\n" intra_op openblas omp_wait \
  "fwd GFLOP/s" "sgemm GF/s" "fraction" "sweep rows/s"
for combo in "1 1 -" "1 2 -" "2 1 -" "2 2 -" "2 2 PASSIVE"; do
  read -r intra blas wait <<<"$combo"
  env_args=()
  [[ $wait != - ]] && env_args=(OMP_WAIT_POLICY=$wait)
  json=$(env "${env_args[@]}" "$BIN" --model="$MODEL" --data="$DATA" \
    --examples="$EXAMPLES" --masks="$MASKS" --threads="$intra" \
    --openblas_threads="$blas")
  /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); e = r["encoder"]; s = r["sweep"]
print("%-9s %-8s %-8s %12.1f %12.1f %10.2f %12.0f" % (sys.argv[1], sys.argv[2],
      sys.argv[3], e["gflops"], e["sgemm_gflops"], e["fraction"], s["engine_rate"]))
' "$intra" "$blas" "$wait" <<<"$json"
done
