#!/usr/bin/env bash
# The outputs a behaviour-preserving change must leave byte-identical
# (issue 32): a Classify of a dataset and of a pair, GetAttention as
# float32, float16 and word-level, a sweep (CSV, JSON, report folder),
# AnalyzeHeads, Patch, SegmentWords, CompareAttention and a short training
# run, all through the real binaries of BIN_DIR on the shipped model.
#   scripts/refactor_outputs.sh BIN_DIR OUT_DIR PORT
# Run it with the build before and after, then `diff -r` the two folders:
# only sweep.json's channel names (the port) and train_log.json's elapsed_s
# may differ.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "$1")
OUT=$2
PORT=$3
M=models/querytitle-zh-tiny
D=$M/data/test.tsv
T=--target=127.0.0.1:$PORT
A=(--text-a="$(cut -f1 $D | sed -n 2p)" --text-b="$(cut -f2 $D | sed -n 2p)")

main() {
  rm -rf "$OUT"
  mkdir -p "$OUT"
  "$BIN/bertology-server" --model=querytitle=$M --listen=127.0.0.1:"$PORT" \
    --metrics_listen= >"$OUT/server.log" 2>&1 &
  SERVER=$!
  trap 'kill "$SERVER" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    "$BIN/bertology" health "$T" >/dev/null 2>&1 && break
    sleep 0.3
  done
  "$BIN/bertology" classify "$T" --data=$D --limit=50 >"$OUT/classify.txt" \
    2>&1
  "$BIN/bertology" classify "$T" "${A[@]}" >"$OUT/classify1.txt"
  "$BIN/bertology" attention "$T" "${A[@]}" --out="$OUT/attention.json"
  "$BIN/bertology" attention "$T" "${A[@]}" --float16 \
    --out="$OUT/attention16.json"
  "$BIN/bertology" attention "$T" "${A[@]}" --word \
    --out-dir="$OUT/attention-word" >/dev/null
  "$BIN/bertology" sweep "$T" --data=$D --limit=200 --heads --layers --quiet \
    --out-csv="$OUT/sweep.csv" --out-json="$OUT/sweep.json" \
    --out-dir="$OUT/sweep" >/dev/null
  "$BIN/bertology" analyze "$T" --data=$D --limit=100 \
    --out-dir="$OUT/analyze" >/dev/null 2>&1
  # The corrupted title: the clean one's characters reversed (same length).
  local title
  title=$(cut -f2 $D | sed -n 2p)
  "$BIN/bertology" patch "$T" --clean="$title" \
    --corrupted="$(echo "$title" | rev)" --out="$OUT/patch" >/dev/null
  "$BIN/bertology" segment "$T" --data=$M/data/test_words.tsv --limit=50 \
    --out-dir="$OUT/segment" >/dev/null
  "$BIN/bertology" compare "$T" --model-a=querytitle --model-b=querytitle \
    --data=$D --limit=20 --detail=0:1:1 --out-dir="$OUT/compare" >/dev/null
  OPENBLAS_NUM_THREADS=1 "$BIN/bertology-train" \
    --train=<(head -301 $M/data/dev.tsv) --dev=<(sed -n '1p;302,351p' $M/data/dev.tsv) \
    --out="$OUT/train" --layers 2 --heads 2 --hidden 16 --intermediate 32 \
    --max_len 32 --epochs 1 --batch_size 16 --seed 1 --threads 1 \
    >/dev/null 2>&1
  rm -f "$OUT/server.log"
}

main
