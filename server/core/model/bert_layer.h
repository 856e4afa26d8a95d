// One BERT encoder layer as torch::nn modules, with submodule names equal to
// HF's (`attention.self.query`, `attention.output.LayerNorm`,
// `intermediate.dense`, `output.dense`, ...) so that `named_parameters()`
// keys match an HF state dict under `bert.encoder.layer.{i}.`.
//
// The computation follows HF's eager BertLayer op for op (v4.x
// modeling_bert.py), plus request-scoped head masks applied to the attention
// probabilities after the softmax and dropout (see head_mask.h); the masks'
// formulas are head_mask_tensors.h's, and this file only calls them.
//
// Thread safety: forward() keeps no state in the module; in eval mode it may
// run from many threads at once. Dropout is active only in train mode.
#ifndef BERTOLOGY_CORE_BERT_LAYER_H_
#define BERTOLOGY_CORE_BERT_LAYER_H_

#include <torch/nn.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "common/head_mask.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/model/head_mask_tensors.h"
#include "server/core/model/packed_tokens.h"

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
  // What ablated heads' probabilities move to, one entry per AblationMode
  // with a probability target that some masked row of the batch uses
  // (empty: none). Built once per pass by MakeAblationFills.
  std::vector<AblationFill> fills;
  // Not null: the pass runs packed (packed_tokens.h). Hidden states and head
  // outputs between layers are then [N, D] (N real tokens), or [B, D] after
  // a [CLS]-only layer; attention still runs on the padded [B, H, T, T].
  const PackedTokens* packed = nullptr;
  // Layers that return no probabilities (probs_out null, eval mode) run
  // FusedAttention instead of the explicit softmax. Needs libtorch >= 2.0
  // (FusedAttentionAvailable).
  bool fused = false;
};

// Whether this build's libtorch has scaled_dot_product_attention (>= 2.0).
bool FusedAttentionAvailable();

// The query positions of `x`: all of them when `query_rows` is 0 or the
// row length T, else the first `query_rows` of each row (packed: only 1,
// each row's first token). x: [B, T, D], or [N, D] when `context` is packed.
torch::Tensor QueryPositions(const torch::Tensor& x,
                             const AttentionContext& context,
                             int64_t query_rows);

// Every head's output [B, H, Q, d] under `mask` from queries q [B, H, Q, d],
// keys and values [B, H, T, d], through scaled_dot_product_attention, with
// the mask applied to the outputs instead of the probabilities
// (MaskFusedOutputs; mean, mean_by_role and resample's output fill after,
// as the explicit path). No
// probabilities exist, so no dropout: eval mode only. c10::Error under
// libtorch 1.x.
torch::Tensor FusedAttention(const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v, const LayerMask& mask,
                             const AttentionContext& context);

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  BertSelfAttentionImpl(const BertConfig& config, double attention_dropout);
  // hidden [B, T, D] -> context [B, Q, D] (every head's output, after
  // the mask's output fill and patches; `*outputs_out` gets it when not
  // null); `*probs_out` (when not null) gets the post-mask probabilities
  // [B, H, Q, T]. Q = T, or `query_rows` when > 0: only the first Q
  // positions are queried (keys and values still come from all T), e.g.
  // Q = 1 in the last layer when only [CLS] is read.
  torch::Tensor forward(const torch::Tensor& hidden,
                        const AttentionContext& context, const LayerMask& mask,
                        torch::Tensor* probs_out, int64_t query_rows = 0,
                        torch::Tensor* outputs_out = nullptr);
  // What forward() makes of the unmasked heads' outputs `outputs` (a
  // layer's query positions: [B, Q, D], packed [N, D] or [B, D]) under
  // `mask`: MaskHeadOutputs (head_mask_tensors.h). Equal to forward() for
  // values of 0 and 1; not for kUniform rows or patches: c10::Error.
  torch::Tensor MaskOutputs(const torch::Tensor& outputs,
                            const AttentionContext& context,
                            const LayerMask& mask) const;

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
                        torch::Tensor* probs_out, int64_t query_rows = 0,
                        torch::Tensor* outputs_out = nullptr);
  // As forward(), from the layer's unmasked head outputs `head_outputs`
  // (hidden's shape): the mask via BertSelfAttention::MaskOutputs, then the
  // residual block. No queries, keys, values or attention.
  torch::Tensor forward_from_head_outputs(const torch::Tensor& hidden,
                                          const torch::Tensor& head_outputs,
                                          const AttentionContext& context,
                                          const LayerMask& mask,
                                          int64_t query_rows = 0);

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
  // `*outputs_out`: the heads' outputs, as BertSelfAttention::forward.
  torch::Tensor forward(const torch::Tensor& hidden,
                        const AttentionContext& context, const LayerMask& mask,
                        torch::Tensor* probs_out, int64_t query_rows = 0,
                        torch::Tensor* outputs_out = nullptr);
  // As forward(), given the layer's unmasked head outputs (the same shape as
  // `hidden`, e.g. cached from an unmasked pass): a sweep's mask that first
  // changes this layer skips its queries, keys, values and attention, about
  // a third of the layer's work (BertAttention::forward_from_head_outputs).
  torch::Tensor forward_from_head_outputs(const torch::Tensor& hidden,
                                          const torch::Tensor& head_outputs,
                                          const AttentionContext& context,
                                          const LayerMask& mask,
                                          int64_t query_rows = 0);

 private:
  BertAttention attention_{nullptr};
  BertIntermediate intermediate_{nullptr};
  BertResidualOutput output_{nullptr};
};
TORCH_MODULE(BertLayer);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_LAYER_H_
