#!/usr/bin/env bash
# make bench: the issue-6 performance table for the shipped default model and
# a random BERT-base-shaped checkpoint (written here, never committed).
# Usage: scripts/bench.sh [BUILD_DIR]   (env: see the defaults below)
# Writes out/bench/*.json, bench/results-cpu.json, and prints one table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
BIN=$BUILD_DIR/bin
OUT=${BENCH_OUT:-out/bench}
# The test venv (make bench makes it): Debian's torch plus HF transformers,
# whose BertForSequenceClassification is the PyTorch-loop anchor.
PY=${BENCH_PYTHON:-$BUILD_DIR/test-venv/bin/python}
MODEL=${BENCH_MODEL:-models/querytitle-zh-tiny}
# libtorch's pool (element-wise ops) 1 and OpenBLAS's (float32 GEMMs) all
# cores, as the server defaults to: the best of bench/thread_matrix.sh on
# both models; with both pools wide their threads spin against each other.
THREADS=${BENCH_THREADS:-1}
BLAS_THREADS=${BENCH_BLAS_THREADS:-$(nproc)}
# Sizes chosen so the whole run stays well under 10 minutes on 2 cores.
TINY_EXAMPLES=${BENCH_TINY_EXAMPLES:-256}
# 48 of the default model's 144 heads (every third): the C++ naive loop's
# cost is per mask, and on a slow day all 144 took 3 of the 10 minutes.
TINY_MASKS=${BENCH_TINY_MASKS:-48}
BASE_EXAMPLES=${BENCH_BASE_EXAMPLES:-64}
BASE_MASKS=${BENCH_BASE_MASKS:-24}
SECONDS_PER_POINT=${BENCH_SECONDS:-3}

for b in bertology-bench-core bertology-bench-grpc bertology-server; do
  if [[ ! -x $BIN/$b ]]; then
    echo "bench: $BIN/$b is missing (is add_subdirectory(bench) in CMakeLists.txt?)" >&2
    exit 1
  fi
done
if [[ ! -f $MODEL/config.json ]]; then
  echo "bench: no model at $MODEL (set BENCH_MODEL=DIR)" >&2
  exit 1
fi
# Debian 12's OpenBLAS falls back to its SSE3 kernels on CPUs it does not
# know (OpenBLAS #4267; server/core/process/blas_core.h). The C++ binaries
# fix that for themselves; the same fix goes to the Python anchors here, so
# that engine and loop run the same kernels (the core in use is in the
# JSON, openblas_core).
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  core_type=$("$BIN/bertology-bench-core" --print_openblas_core 2>/dev/null || true)
  if [[ -n $core_type ]]; then
    export OPENBLAS_CORETYPE=$core_type
    echo "bench: OPENBLAS_CORETYPE=$core_type for every process of this run" >&2
  fi
fi
mkdir -p "$OUT"
[[ -z ${BENCH_SKIP_CORE:-} ]] && rm -f "$OUT"/core-*.json
rm -f "$OUT"/grpc-*.json "$OUT"/bf16.json

# Held-out labelled examples: the query-title test split (seed 1).
"$PY" scripts/querytitle_data.py "$OUT/data" --seed 1 --train 0 --dev 0 \
  --test 1000 >/dev/null
DATA=$OUT/data/test.tsv
BASE_DIR=$OUT/bert-base-random
if [[ ! -f $BASE_DIR/model.safetensors ]]; then
  echo "bench: writing a random BERT-base checkpoint to $BASE_DIR" >&2
  "$BIN/bertology-bench-core" --model="$MODEL" --threads="$THREADS" \
    --make_random_model="$BASE_DIR"
fi

core() {  # NAME DIR EXAMPLES MASKS
  echo "bench: sweep + encoder, $1" >&2
  "$BIN/bertology-bench-core" --model="$2" --name="$1" --data="$DATA" \
    --examples="$3" --masks="$4" --threads="$THREADS" \
    --openblas_threads="$BLAS_THREADS" --json_out="$OUT/core-$1.json" >/dev/null
}
# The anchor: the plain PyTorch loop a researcher writes (HF transformers'
# BertForSequenceClassification.from_pretrained in the test venv,
# head_mask, batches of 32 in file order), on the same examples, at its best
# thread count; bench/report.py divides the engine's rate by its rate.
pytorch_loop() {  # NAME DIR EXAMPLES MASKS
  echo "bench: plain PyTorch loop, $1" >&2
  "$PY" bench/pytorch_loop.py --model="$2" --data="$DATA" --examples="$3" \
    --masks="$4" --json_out="$OUT/pytorch-$1.json"
}
if [[ -z ${BENCH_SKIP_CORE:-} ]]; then
  core default "$MODEL" "$TINY_EXAMPLES" "$TINY_MASKS"
  core bert-base "$BASE_DIR" "$BASE_EXAMPLES" "$BASE_MASKS"
  rm -f "$OUT"/pytorch-*.json
  # 24 of the default model's 144 heads keep this part near a minute; the
  # loop's cost per mask does not depend on which head it masks.
  pytorch_loop default "$MODEL" "$TINY_EXAMPLES" "$BASE_MASKS"
  pytorch_loop bert-base "$BASE_DIR" "$BASE_EXAMPLES" "$BASE_MASKS"
  # The opt-in BF16 path (--dtype=BF16), engine alone, on the same examples
  # and masks, beside the loop in bfloat16 (model.to(torch.bfloat16)), the
  # researcher's own BF16 anchor; report.py compares its correct counts
  # with float32's.
  rm -f "$OUT"/core_bf16-*.json "$OUT"/pytorch_bf16-*.json
  for spec in "default $MODEL $TINY_EXAMPLES $TINY_MASKS" \
      "bert-base $BASE_DIR $BASE_EXAMPLES $BASE_MASKS"; do
    read -r name dir examples masks <<<"$spec"
    echo "bench: sweep, BF16, $name" >&2
    "$BIN/bertology-bench-core" --model="$dir" --name="$name" --data="$DATA" \
      --examples="$examples" --masks="$masks" --threads="$THREADS" \
      --openblas_threads="$BLAS_THREADS" --dtype=BF16 --naive=false \
      --lever_shares=false --worker_share=false --eff_reps=2 \
      --json_out="$OUT/core_bf16-$name.json" >/dev/null
    echo "bench: plain PyTorch loop, bfloat16, $name" >&2
    "$PY" bench/pytorch_loop.py --model="$dir" --data="$DATA" \
      --examples="$examples" --masks="$BASE_MASKS" --dtype=bfloat16 \
      --json_out="$OUT/pytorch_bf16-$name.json"
  done
fi

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
SERVER_PID=
stop_server() {
  if [[ -n $SERVER_PID ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap stop_server EXIT

grpc() {  # NAME DIR MAX_BATCH ATTENTION MAX_SEQ_LEN [BATCH_WORKERS]
  local port tag=b$3 blas=$BLAS_THREADS workers=${6:-1}
  port=$(free_port)
  # Several batch workers each run their GEMMs on one OpenBLAS thread (one
  # pool, shared by the process: wide, the workers' calls queue on it).
  if [[ $workers -gt 1 ]]; then
    tag=$tag-w$workers
    blas=1
  fi
  echo "bench: Classify under load, $1, --max_batch_size=$3 --batch_workers=$workers" >&2
  "$BIN/bertology-server" --model="$1=$2" --listen="127.0.0.1:$port" \
    --metrics_listen= --threads="$THREADS" --blas_threads="$blas" \
    --max_batch_size="$3" --batch_workers="$workers" \
    --max_seq_len="$5" --warmup_passes=1 >"$OUT/server-$1-$tag.log" 2>&1 &
  SERVER_PID=$!
  "$BIN/bertology-bench-grpc" --target="127.0.0.1:$port" --data="$DATA" \
    --clients=1,8,32 --seconds="$SECONDS_PER_POINT" --attention="$4" \
    --json_out="$OUT/grpc-$1-$tag.json" >/dev/null
  stop_server
}
# max_seq_len 0: the shipped model's own (64); 128 for BERT-base keeps its
# warm-up pass short and still fits GetAttention's 128 tokens.
grpc default "$MODEL" 1 false 0
grpc default "$MODEL" 32 true 0
grpc default "$MODEL" 32 false 0 "$(nproc)"
grpc bert-base "$BASE_DIR" 1 false 128
grpc bert-base "$BASE_DIR" 32 true 128

# Whether a BF16 path could pay on this CPU (libtorch's BF16 GEMM).
"$PY" bench/bf16_check.py --json_out="$OUT/bf16.json" >&2

"$PY" bench/report.py "$OUT" --json_out=bench/results-cpu.json
