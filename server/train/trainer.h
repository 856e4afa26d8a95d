// Trains, with the same torch::nn module the server runs, and writes an
// HF-format model directory:
//   objective "classify": a BertForSequenceClassification on labelled text
//     pairs, from random initialisation or fine-tuned from a starting point
//     (init_from, e.g. the output of the "mlm" objective);
//   objective "mlm": masked-language-model pretraining of a BertForMaskedLM
//     on the same pairs (labels, if any, unused), as BERT was pretrained.
#ifndef BERTOLOGY_TRAIN_TRAINER_H_
#define BERTOLOGY_TRAIN_TRAINER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/pair_dataset.h"

namespace bertology {

struct TrainOptions {
  std::string objective = "classify";  // or "mlm"
  std::string train_path;
  std::string dev_path;  // optional: evaluated after every epoch
  std::string out_dir;
  PairDatasetOptions columns;  // which columns hold text_a, text_b, label

  // A model directory (config.json, vocab.txt, weights) to start from
  // instead of random initialisation: its vocabulary, tokenizer settings,
  // architecture and bert.embeddings/bert.encoder weights are taken (the
  // architecture options below are then ignored); the pooler and
  // classifier are initialised afresh unless it has them with the same
  // shapes. "classify" only.
  std::string init_from;

  // Architecture (without init_from).
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

  // "mlm": the share of real tokens ([CLS]/[SEP] excluded) chosen per
  // sequence for prediction, of which 80% become [MASK], 10% a random
  // vocabulary entry and 10% stay (HF's DataCollatorForLanguageModeling).
  double mlm_probability = 0.15;

  // "F32" or "F16": dtype of the written model.safetensors.
  std::string save_dtype = "F32";
};

// Writes out_dir/{config.json, model.safetensors, vocab.txt,
// tokenizer_config.json, train_log.json}. The weights written are those of
// the epoch with the best dev accuracy (masked-token accuracy for "mlm"; the
// last epoch without a dev set).
// Progress goes to stderr. Deterministic for a fixed seed and thread count.
absl::Status Train(const TrainOptions& options);

// Train() for objective "mlm" (masked_lm_trainer.cc): writes a
// BertForMaskedLM (bert.embeddings, bert.encoder, cls.predictions; no
// pooler; the decoder weight tied to the word embeddings, so not written, as
// HF's save_pretrained leaves it out). Dev "accuracy" is the share of chosen
// dev tokens predicted right, with the dev corruption drawn the same way
// every epoch.
absl::Status TrainMaskedLm(const TrainOptions& options);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_TRAINER_H_
