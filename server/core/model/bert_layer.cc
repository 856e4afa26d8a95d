#include "server/core/model/bert_layer.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>

namespace bertology {

Activation ActivationFromName(const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (name == "relu") return Activation::kRelu;
  return Activation::kGeluErf;
}

bool FusedAttentionAvailable() { return TORCH_VERSION_MAJOR >= 2; }

torch::Tensor FusedAttention(const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v, const LayerMask& mask,
                             const AttentionContext& context) {
#if TORCH_VERSION_MAJOR >= 2
  // The additive [B, 1, 1, T] mask keeps padding out, as in the explicit
  // path; the default scale is 1 / sqrt(d), HF's.
  torch::Tensor out = torch::scaled_dot_product_attention(
      q, k, v, context.extended_mask, /*dropout_p=*/0.0, /*is_causal=*/false);
  return MaskFusedOutputs(out, v, mask, context.fills);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)context;
  TORCH_CHECK(false, "fused attention needs libtorch >= 2.0, this is ",
              TORCH_VERSION);
#endif
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& config,
                                             double attention_dropout)
    : num_heads_(config.num_attention_heads), head_size_(config.head_size()) {
  const int d = config.hidden_size;
  query_ = register_module("query", torch::nn::Linear(d, d));
  key_ = register_module("key", torch::nn::Linear(d, d));
  value_ = register_module("value", torch::nn::Linear(d, d));
  dropout_ = register_module("dropout", torch::nn::Dropout(attention_dropout));
}

torch::Tensor QueryPositions(const torch::Tensor& x,
                             const AttentionContext& context,
                             int64_t query_rows) {
  if (context.packed != nullptr) {
    const int64_t t = context.packed->positions();
    if (query_rows <= 0 || query_rows >= t) return x;
    TORCH_CHECK(query_rows == 1, "a packed pass queries all positions or 1");
    return context.packed->FirstTokens(x);
  }
  const int64_t t = x.size(1);
  if (query_rows <= 0 || query_rows >= t) return x;
  return x.narrow(1, 0, query_rows).contiguous();
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& hidden,
                                             const AttentionContext& context,
                                             const LayerMask& mask,
                                             torch::Tensor* probs_out,
                                             int64_t query_rows,
                                             torch::Tensor* outputs_out) {
  const PackedTokens* packed = context.packed;
  const int64_t b = packed != nullptr ? packed->rows() : hidden.size(0);
  const int64_t t = packed != nullptr ? packed->positions() : hidden.size(1);
  const int64_t tq = query_rows > 0 ? std::min(query_rows, t) : t;
  // [B, T, D] -> [B, H, T, d] (HF's transpose_for_scores); a packed [N, D]
  // is unpacked first, a packed query of each row's first token ([B, D]) is
  // [B, 1, D].
  auto heads = [&](const torch::Tensor& x, int64_t positions) {
    torch::Tensor padded = x;
    if (packed != nullptr) {
      padded = positions == t ? packed->Unpack(x) : x.view({b, 1, x.size(-1)});
    }
    return padded.view({b, positions, num_heads_, head_size_})
        .permute({0, 2, 1, 3});
  };
  torch::Tensor q = heads(query_(QueryPositions(hidden, context, tq)), tq);
  torch::Tensor k = heads(key_(hidden), t);
  torch::Tensor v = heads(value_(hidden), t);

  torch::Tensor out;  // [B, H, Q, d]
  if (context.fused && probs_out == nullptr && !is_training()) {
    out = FusedAttention(q, k, v, mask, context);
  } else {
    torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2));
    scores = scores / std::sqrt(static_cast<double>(head_size_));
    scores = scores + context.extended_mask;
    torch::Tensor probs = torch::softmax(scores, -1);
    probs = dropout_(probs);

    probs = ApplyHeadMask(probs, mask, context.fills);
    if (probs_out != nullptr) *probs_out = probs;
    out = torch::matmul(probs, v);
  }
  out = ApplyOutputFill(out, mask, tq);
  if (mask.patch_where.defined()) {
    out = torch::where(mask.patch_where.narrow(2, 0, tq),
                       mask.patch_values.narrow(2, 0, tq), out);
  }
  out = out.permute({0, 2, 1, 3}).reshape({b, tq, num_heads_ * head_size_});
  if (packed != nullptr) {
    out = tq == t ? packed->Pack(out) : out.view({b, out.size(2)});
  }
  if (outputs_out != nullptr) *outputs_out = out;
  return out;
}

torch::Tensor BertSelfAttentionImpl::MaskOutputs(
    const torch::Tensor& outputs, const AttentionContext& context,
    const LayerMask& mask) const {
  return MaskHeadOutputs(outputs, mask, context.fills, context.packed,
                         num_heads_, head_size_);
}

BertResidualOutputImpl::BertResidualOutputImpl(int in_features,
                                               const BertConfig& config,
                                               double hidden_dropout) {
  dense_ = register_module("dense",
                           torch::nn::Linear(in_features, config.hidden_size));
  layer_norm_ = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})
                               .eps(config.layer_norm_eps)));
  dropout_ = register_module("dropout", torch::nn::Dropout(hidden_dropout));
}

torch::Tensor BertResidualOutputImpl::forward(const torch::Tensor& x,
                                              const torch::Tensor& residual) {
  return layer_norm_(dropout_(dense_(x)) + residual);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& config,
                                     double hidden_dropout,
                                     double attention_dropout) {
  self_ = register_module("self", BertSelfAttention(config, attention_dropout));
  output_ = register_module(
      "output", BertResidualOutput(config.hidden_size, config, hidden_dropout));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& hidden,
                                         const AttentionContext& context,
                                         const LayerMask& mask,
                                         torch::Tensor* probs_out,
                                         int64_t query_rows,
                                         torch::Tensor* outputs_out) {
  torch::Tensor context_out =
      self_(hidden, context, mask, probs_out, query_rows, outputs_out);
  return output_(context_out, QueryPositions(hidden, context, query_rows));
}

torch::Tensor BertAttentionImpl::forward_from_head_outputs(
    const torch::Tensor& hidden, const torch::Tensor& head_outputs,
    const AttentionContext& context, const LayerMask& mask,
    int64_t query_rows) {
  TORCH_CHECK(head_outputs.sizes() == hidden.sizes(), "head outputs of shape ",
              head_outputs.sizes(), " for hidden states of shape ",
              hidden.sizes());
  return output_(
      self_->MaskOutputs(QueryPositions(head_outputs, context, query_rows),
                         context, mask),
      QueryPositions(hidden, context, query_rows));
}

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& config)
    : activation_(ActivationFromName(config.hidden_act)) {
  dense_ = register_module(
      "dense", torch::nn::Linear(config.hidden_size, config.intermediate_size));
}

torch::Tensor BertIntermediateImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = dense_(x);
  switch (activation_) {
    case Activation::kGeluErf:
      return torch::gelu(h);
    case Activation::kGeluTanh:
      return torch::gelu(h, "tanh");
    case Activation::kRelu:
      return torch::relu(h);
  }
  return h;
}

BertLayerImpl::BertLayerImpl(const BertConfig& config, double hidden_dropout,
                             double attention_dropout) {
  attention_ = register_module(
      "attention", BertAttention(config, hidden_dropout, attention_dropout));
  intermediate_ = register_module("intermediate", BertIntermediate(config));
  output_ = register_module(
      "output",
      BertResidualOutput(config.intermediate_size, config, hidden_dropout));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& hidden,
                                     const AttentionContext& context,
                                     const LayerMask& mask,
                                     torch::Tensor* probs_out,
                                     int64_t query_rows,
                                     torch::Tensor* outputs_out) {
  torch::Tensor attention =
      attention_(hidden, context, mask, probs_out, query_rows, outputs_out);
  return output_(intermediate_(attention), attention);
}

torch::Tensor BertLayerImpl::forward_from_head_outputs(
    const torch::Tensor& hidden, const torch::Tensor& head_outputs,
    const AttentionContext& context, const LayerMask& mask,
    int64_t query_rows) {
  torch::Tensor attention = attention_->forward_from_head_outputs(
      hidden, head_outputs, context, mask, query_rows);
  return output_(intermediate_(attention), attention);
}

}  // namespace bertology
