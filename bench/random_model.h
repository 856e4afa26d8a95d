// A BERT-shaped checkpoint with random weights, written at bench time so the
// repository carries no 400 MB file: the numbers measure speed, not accuracy.
#ifndef BERTOLOGY_BENCH_RANDOM_MODEL_H_
#define BERTOLOGY_BENCH_RANDOM_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace bertology::bench {

struct RandomBertShape {
  int layers = 12;
  int heads = 12;
  int hidden = 768;
  int intermediate = 3072;
  int max_position = 512;
  uint64_t seed = 1;
};

// Writes an HF model directory `out_dir` (config.json, model.safetensors,
// vocab.txt, tokenizer_config.json) of BertForSequenceClassification with
// `shape`, taking the vocabulary, tokenizer settings and labels from the
// model directory `vocab_dir` so that the same examples tokenise the same.
// Weights ~ N(0, 0.02) as HF initialises them; LayerNorms are 1 and 0.
absl::Status WriteRandomBert(const std::string& vocab_dir,
                             const std::string& out_dir,
                             const RandomBertShape& shape);

}  // namespace bertology::bench

#endif  // BERTOLOGY_BENCH_RANDOM_MODEL_H_
