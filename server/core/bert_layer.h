// One BERT encoder layer as torch::nn modules, with submodule names equal to
// HF's (`attention.self.query`, `attention.output.LayerNorm`,
// `intermediate.dense`, `output.dense`, ...) so that `named_parameters()`
// keys match an HF state dict under `bert.encoder.layer.{i}.`.
//
// The computation follows HF's eager BertLayer op for op (v4.x
// modeling_bert.py), plus request-scoped head masks applied to the attention
// probabilities after the softmax and dropout (see head_mask.h).
//
// Thread safety: forward() keeps no state in the module; in eval mode it may
// run from many threads at once. Dropout is active only in train mode.
#ifndef BERTOLOGY_CORE_BERT_LAYER_H_
#define BERTOLOGY_CORE_BERT_LAYER_H_

#include <torch/nn.h>
#include <torch/types.h>

#include <string>

#include "server/core/bert_config.h"

namespace bertology {

enum class Activation { kGeluErf, kGeluTanh, kRelu };

// "gelu" -> kGeluErf, "gelu_new"/"gelu_pytorch_tanh" -> kGeluTanh, "relu".
// Unknown names map to kGeluErf (BertConfig::FromJson refuses them earlier).
Activation ActivationFromName(const std::string& name);

// The per-batch attention context shared by all layers of one forward pass.
// All tensors on the model's device in the compute dtype.
struct AttentionContext {
  // [B, 1, 1, T]: (1 - attention_mask) * finfo(dtype).min, HF style.
  torch::Tensor extended_mask;
  // [B, 1, 1, T]: attention_mask / sum(attention_mask), the uniform
  // distribution over each row's real tokens. Defined only when some row
  // uses AblationMode::kUniform.
  torch::Tensor uniform;
  // [B, 1, 1, 1]: 1 for kUniform rows, 0 for kZero. Undefined: all kZero.
  torch::Tensor uniform_rows;
};

// This layer's head mask for the batch: [B, H] values in [0, 1], or
// undefined for "all heads kept" (the probabilities are then untouched).
// p' = m * p + s * (1 - m) * u, with s the row's uniform flag, which is
// m * p in zero mode and m * p + (1 - m) * u in uniform mode.
struct LayerMask {
  torch::Tensor values;
};

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  BertSelfAttentionImpl(const BertConfig& config, double attention_dropout);
  // hidden [B, T, D] -> context [B, Q, D]; `*probs_out` (when not null) gets
  // the post-mask probabilities [B, H, Q, T]. Q = T, or `query_rows` when
  // > 0: only the first Q positions are queried (keys and values still come
  // from all T), e.g. Q = 1 in the last layer when only [CLS] is read.
  torch::Tensor forward(const torch::Tensor& hidden,
                        const AttentionContext& context, const LayerMask& mask,
                        torch::Tensor* probs_out, int64_t query_rows = 0);

 private:
  int num_heads_;
  int head_size_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(BertSelfAttention);

// dense -> dropout -> LayerNorm(x + residual): HF's BertSelfOutput and
// BertOutput differ only in the dense layer's input width.
class BertResidualOutputImpl : public torch::nn::Module {
 public:
  BertResidualOutputImpl(int in_features, const BertConfig& config,
                         double hidden_dropout);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& residual);

 private:
  torch::nn::Linear dense_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(BertResidualOutput);

class BertAttentionImpl : public torch::nn::Module {
 public:
  BertAttentionImpl(const BertConfig& config, double hidden_dropout,
                    double attention_dropout);
  // As BertSelfAttention::forward, then the residual block: [B, Q, D].
  torch::Tensor forward(const torch::Tensor& hidden,
                        const AttentionContext& context, const LayerMask& mask,
                        torch::Tensor* probs_out, int64_t query_rows = 0);

 private:
  BertSelfAttention self_{nullptr};
  BertResidualOutput output_{nullptr};
};
TORCH_MODULE(BertAttention);

class BertIntermediateImpl : public torch::nn::Module {
 public:
  explicit BertIntermediateImpl(const BertConfig& config);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  Activation activation_;
  torch::nn::Linear dense_{nullptr};
};
TORCH_MODULE(BertIntermediate);

class BertLayerImpl : public torch::nn::Module {
 public:
  BertLayerImpl(const BertConfig& config, double hidden_dropout,
                double attention_dropout);
  // hidden [B, T, D] -> [B, T, D], or [B, Q, D] for query_rows Q > 0 (the
  // first Q positions' outputs, each exactly as in the full pass).
  torch::Tensor forward(const torch::Tensor& hidden,
                        const AttentionContext& context, const LayerMask& mask,
                        torch::Tensor* probs_out, int64_t query_rows = 0);

 private:
  BertAttention attention_{nullptr};
  BertIntermediate intermediate_{nullptr};
  BertResidualOutput output_{nullptr};
};
TORCH_MODULE(BertLayer);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_LAYER_H_
