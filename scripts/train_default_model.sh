#!/usr/bin/env bash
# Re-creates the shipped default model, models/querytitle-zh-tiny, and its
# starting point, models/querytitle-zh-tiny-mlm, from nothing: generates the
# query-title data (seed 1), pretrains a 12x12 BERT as a masked language
# model on the training pairs from random initialisation (seed 1), then
# fine-tunes the relevance classifier from it (seed 1). See the models'
# cards for the times on 2 cores.
#   scripts/train_default_model.sh [BUILD_DIR] [OUT_DIR]
# OUT_DIR defaults to out/querytitle-zh-tiny (the starting point goes to
# OUT_DIR-mlm), so the shipped models are not overwritten; compare their
# train_log.json and test accuracy with the cards.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-out/querytitle-zh-tiny}
MLM="$OUT-mlm"
DATA=out/querytitle-data
/usr/bin/python3 scripts/querytitle_data.py "$DATA" --seed 1 --words
# One libtorch thread and one OpenBLAS thread: on 2 cores the two thread
# pools spin against each other (measured 4x slower with 2+2 threads when
# the other core is busy; see bench/RESULTS.md). Bit-identical weights need
# the same thread counts and build.
export OPENBLAS_NUM_THREADS=1
ARCH=(--layers 12 --heads 12 --hidden 96 --intermediate 384 --max_len 64)
# 1. The starting point: masked-LM pretraining on the training pairs (their
#    grades unused), as BERT is pretrained: 15% of the characters chosen,
#    80% of those replaced by [MASK], 10% by a random entry, 10% kept.
"$BUILD/bin/bertology-train" --objective=mlm \
  --train "$DATA/train.tsv" --dev "$DATA/dev.tsv" --out "$MLM" "${ARCH[@]}" \
  --epochs 3 --batch_size 32 --lr 5e-4 --dropout 0 --seed 1 --threads 1
# 2. The classifier, fine-tuned from it (its vocabulary and architecture)
#    on the classification loss alone: no auxiliary objective, so whatever
#    the heads do was not trained into them (the previous default model was
#    fine-tuned with --aux_neighbour_layer 2, which put neighbour heads on
#    layer 1; models/querytitle-zh-tiny/README.md).
"$BUILD/bin/bertology-train" --init_from "$MLM" \
  --train "$DATA/train.tsv" --dev "$DATA/dev.tsv" --out "$OUT" \
  --epochs 6 --batch_size 32 --lr 5e-4 --dropout 0 --seed 1 --threads 1
mkdir -p "$OUT/data"
cp "$DATA/dev.tsv" "$DATA/test.tsv" "$DATA/test_words.tsv" "$OUT/data/"
