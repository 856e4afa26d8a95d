// Masked-language-model pretraining pieces: HF's BertLMPredictionHead (the
// `cls.predictions.*` weights of a BertForMaskedLM) and BERT's token
// masking. Internal to bertology-train.
#ifndef BERTOLOGY_TRAIN_MASKED_LM_H_
#define BERTOLOGY_TRAIN_MASKED_LM_H_

#include <torch/torch.h>

#include <cstdint>
#include <random>

#include "server/core/checkpoint/bert_config.h"
#include "server/train/train_data.h"

namespace bertology {

// cls.predictions: transform (dense, GELU, LayerNorm) then the decoder,
// whose weight is the word-embedding matrix (tied, as HF ties it, so it is
// passed in, not owned) plus `bias` ([V]). named_parameters() gives
// transform.dense.{weight,bias}, transform.LayerNorm.{weight,bias}, bias:
// prefix them with "cls.predictions." for an HF state dict.
class BertLMHeadImpl : public torch::nn::Module {
 public:
  explicit BertLMHeadImpl(const BertConfig& config);
  // hidden [N, D], word_embeddings [V, D] -> logits [N, V].
  torch::Tensor forward(const torch::Tensor& hidden,
                        const torch::Tensor& word_embeddings);

 private:
  torch::nn::Sequential transform_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(BertLMHead);

struct MlmTokens {
  int mask_id = 0;
  int vocab_size = 0;
  // Never chosen: [CLS], [SEP], [PAD] (HF's special-tokens mask).
  std::vector<int64_t> special_ids;
};

// A batch with its masked-LM corruption: `ids` are the model's inputs,
// `targets` [B, T] the original id at each chosen position and -100
// elsewhere. Each real, non-special token is chosen with probability
// `probability`; a chosen token becomes [MASK] (80%), a uniformly drawn
// vocabulary id (10%) or stays (10%). Draws only from `rng`, so a fixed
// seed gives the same corruption whatever libtorch's threads do.
struct MlmBatch {
  torch::Tensor ids, targets;
};
MlmBatch MaskTokens(const Batch& batch, const MlmTokens& tokens,
                    double probability, std::mt19937_64& rng);

// Cross-entropy of the head's predictions at the chosen positions (a zero
// that keeps the graph when none is chosen), and how many of them the
// argmax gets right.
struct MlmLoss {
  torch::Tensor loss;
  int64_t correct = 0;
  int64_t predicted = 0;
};
MlmLoss MaskedLmLoss(const torch::Tensor& hidden, const torch::Tensor& targets,
                     BertLMHeadImpl& head,
                     const torch::Tensor& word_embeddings);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_MASKED_LM_H_
