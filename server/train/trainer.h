// Fine-tunes (here: trains from random initialisation) a
// BertForSequenceClassification on labelled text pairs, with the same
// torch::nn module the server runs, and writes an HF-format model directory.
#ifndef BERTOLOGY_TRAIN_TRAINER_H_
#define BERTOLOGY_TRAIN_TRAINER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/pair_dataset.h"

namespace bertology {

struct TrainOptions {
  std::string train_path;
  std::string dev_path;  // optional: evaluated after every epoch
  std::string out_dir;
  PairDatasetOptions columns;  // which columns hold text_a, text_b, label

  // Architecture.
  int layers = 12;
  int heads = 12;
  int hidden = 128;
  int intermediate = 512;
  int max_len = 64;  // tokens per pair, [CLS]/[SEP] included
  bool do_lower_case = true;
  int min_word_count = 5;

  // Optimisation: AdamW, linear warm-up then linear decay to 0, gradient
  // clipping by global norm.
  int epochs = 3;
  int batch_size = 32;
  double learning_rate = 5e-4;
  double warmup_fraction = 0.06;
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;
  double dropout = 0.1;
  uint64_t seed = 1;
  int max_train_examples = 0;  // 0: all
  // Auxiliary objective (0: off): from the output of encoder layer
  // aux_neighbour_layer - 1, linear heads predict each token's previous and
  // next token. A model trained from scratch otherwise learns the bag of
  // characters and never word order (pretrained BERT gets order from its
  // masked-LM pretraining); this dense signal builds neighbour-attending
  // heads early. The heads are discarded: the written model is a plain
  // BertForSequenceClassification.
  int aux_neighbour_layer = 0;
  double aux_weight = 1.0;

  // "F32" or "F16": dtype of the written model.safetensors.
  std::string save_dtype = "F32";
};

// Writes out_dir/{config.json, model.safetensors, vocab.txt,
// tokenizer_config.json, train_log.json}. The weights written are those of
// the epoch with the best dev accuracy (the last epoch without a dev set).
// Progress goes to stderr. Deterministic for a fixed seed and thread count.
absl::Status Train(const TrainOptions& options);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_TRAINER_H_
