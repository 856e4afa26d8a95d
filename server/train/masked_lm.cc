#include "server/train/masked_lm.h"

#include <algorithm>

namespace bertology {

BertLMHeadImpl::BertLMHeadImpl(const BertConfig& config) {
  const int d = config.hidden_size;
  torch::nn::Sequential transform;
  transform->push_back("dense", torch::nn::Linear(d, d));
  transform->push_back("act", torch::nn::GELU());
  transform->push_back(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(
                       config.layer_norm_eps)));
  transform_ = register_module("transform", transform);
  bias_ = register_parameter("bias", torch::zeros({config.vocab_size}));
}

torch::Tensor BertLMHeadImpl::forward(const torch::Tensor& hidden,
                                      const torch::Tensor& word_embeddings) {
  return torch::nn::functional::linear(transform_->forward(hidden),
                                       word_embeddings, bias_);
}

MlmBatch MaskTokens(const Batch& batch, const MlmTokens& tokens,
                    double probability, std::mt19937_64& rng) {
  MlmBatch out;
  out.ids = batch.ids.clone();
  out.targets = torch::full_like(batch.ids, -100);
  auto ids = out.ids.accessor<int64_t, 2>();
  auto targets = out.targets.accessor<int64_t, 2>();
  auto real = batch.mask.accessor<int64_t, 2>();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> any_id(0, tokens.vocab_size - 1);
  const auto& special = tokens.special_ids;
  for (int64_t r = 0; r < ids.size(0); ++r) {
    for (int64_t t = 0; t < ids.size(1); ++t) {
      if (!real[r][t]) continue;
      if (std::find(special.begin(), special.end(), ids[r][t]) !=
          special.end()) {
        continue;
      }
      if (unit(rng) >= probability) continue;
      targets[r][t] = ids[r][t];
      const double how = unit(rng);
      if (how < 0.8) {
        ids[r][t] = tokens.mask_id;
      } else if (how < 0.9) {
        ids[r][t] = any_id(rng);
      }
    }
  }
  return out;
}

MlmLoss MaskedLmLoss(const torch::Tensor& hidden, const torch::Tensor& targets,
                     BertLMHeadImpl& head,
                     const torch::Tensor& word_embeddings) {
  MlmLoss out;
  const torch::Tensor chosen = targets.ne(-100);
  const torch::Tensor gold = targets.index({chosen});
  out.predicted = gold.size(0);
  if (out.predicted == 0) {
    out.loss = hidden.sum() * 0.0;
    return out;
  }
  const torch::Tensor logits =
      head.forward(hidden.index({chosen}), word_embeddings);
  out.loss = torch::nn::functional::cross_entropy(logits, gold);
  out.correct = logits.argmax(-1).eq(gold).sum().item<int64_t>();
  return out;
}

}  // namespace bertology
