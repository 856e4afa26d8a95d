#include "server/core/model/bert_layer.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "server/core/model/device_copy.h"

namespace bertology {

Activation ActivationFromName(const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (name == "relu") return Activation::kRelu;
  return Activation::kGeluErf;
}

// ---- Ablation modes: the one place for their formulas. ----
// A new AblationMode (head_mask.h) needs its case here and nothing else: the
// switch has no default, so the compiler names a mode left out.
std::vector<AttentionContext::AblationFill> MakeAblationFills(
    const std::vector<AblationMode>& row_modes,
    const torch::Tensor& attention_mask) {
  std::vector<AttentionContext::AblationFill> fills;
  // Each mode in use once, in enum order (a fixed order of additions).
  const std::set<AblationMode> modes(row_modes.begin(), row_modes.end());
  for (AblationMode mode : modes) {
    torch::Tensor target;
    switch (mode) {
      case AblationMode::kZero:  // p' = m * p: nothing moves in
        break;
      // p' = m * p, then the head's output moves towards the reference's
      // (LayerMask::output_fill, applied after p @ V): nothing here.
      case AblationMode::kMean:
      case AblationMode::kMeanByRole:
      case AblationMode::kResample:
        break;
      case AblationMode::kUniform:
        // Uniform over the row's real tokens (Kovaleva et al. 2019). Rows
        // with no real token would divide by 0; they attend nowhere.
        target = attention_mask /
                 attention_mask.sum(-1, /*keepdim=*/true).clamp_min(1);
        break;
    }
    if (!target.defined()) continue;
    std::vector<float> in_mode(row_modes.size(), 0.0f);
    for (size_t r = 0; r < row_modes.size(); ++r) {
      in_mode[r] = row_modes[r] == mode ? 1.0f : 0.0f;
    }
    const int64_t b = static_cast<int64_t>(row_modes.size());
    torch::Tensor rows = ToDevice(torch::tensor(in_mode, torch::kFloat)
                                      .to(attention_mask.scalar_type())
                                      .view({b, 1, 1, 1}),
                                  attention_mask.device());
    fills.push_back({mode, rows, target});
  }
  return fills;
}

torch::Tensor ApplyHeadMask(const torch::Tensor& probs, const LayerMask& mask,
                            const AttentionContext& context) {
  if (!mask.values.defined()) return probs;
  // [B, H] -> [B, H, 1, 1]. A head whose value is 0 for every zero-mode row
  // contributes nothing; skipping its matmuls is a later optimisation.
  const torch::Tensor m =
      mask.values.view({mask.values.size(0), mask.values.size(1), 1, 1});
  torch::Tensor out = probs * m;
  for (const AttentionContext::AblationFill& fill : context.fills) {
    out = out + ((1 - m) * fill.target) * fill.rows;
  }
  return out;
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
  if (!mask.values.defined()) return out;
  const torch::Tensor m =
      mask.values.view({mask.values.size(0), mask.values.size(1), 1, 1});
  out = out * m;
  for (const AttentionContext::AblationFill& fill : context.fills) {
    // target [B, 1, 1, T] @ V [B, H, T, d] -> [B, H, 1, d]: what a head
    // attending as `target` outputs, the same for every query.
    out = out + ((1 - m) * torch::matmul(fill.target, v)) * fill.rows;
  }
  return out;
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

    probs = ApplyHeadMask(probs, mask, context);
    if (probs_out != nullptr) *probs_out = probs;
    out = torch::matmul(probs, v);
  }
  if (mask.output_fill.defined()) {
    // kMean / kMeanByRole / kResample: o' = m * o + (1 - m) * fill; the m * o
    // part came from the m-scaled probabilities (ApplyHeadMask). Rows in
    // other modes have a zero fill, so their output is unchanged (x + 0 =
    // x). A positional fill is cut to the query positions (the first tq).
    const torch::Tensor m =
        mask.values.view({mask.values.size(0), mask.values.size(1), 1, 1});
    const torch::Tensor fill = mask.positional_fill
                                   ? mask.output_fill.narrow(2, 0, tq)
                                   : mask.output_fill;
    out = out + (1 - m) * fill;
  }
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
  TORCH_CHECK(!mask.patch_where.defined(),
              "a layer started from head outputs cannot be patched");
  if (!mask.values.defined()) return outputs;
  TORCH_CHECK(context.fills.empty(),
              "a layer started from head outputs cannot mask rows in mode "
              "uniform (their outputs need the values)");
  torch::Tensor m = mask.values;  // [B, H]
  // [B, H, d], or [B, T, H, d] for a positional fill.
  torch::Tensor fill;
  if (mask.output_fill.defined()) {
    fill = mask.positional_fill ? mask.output_fill.permute({0, 2, 1, 3})
                                : mask.output_fill.squeeze(2);
  }
  torch::Tensor o;  // outputs with heads split, m and fill broadcastable
  const PackedTokens* packed = context.packed;
  if (outputs.dim() == 2) {  // packed: [N, D], or [B, D] (first tokens)
    const int64_t n = outputs.size(0);
    const bool all_tokens = packed != nullptr && n == packed->tokens();
    if (all_tokens) m = packed->PerToken(m);
    if (fill.defined() && mask.positional_fill) {
      fill = all_tokens ? packed->Pack(fill) : fill.select(1, 0);
    } else if (fill.defined() && all_tokens) {
      fill = packed->PerToken(fill);
    }
    o = outputs.view({n, num_heads_, head_size_});
    m = m.unsqueeze(-1);  // [., H, 1]
  } else {                // [B, Q, D]
    o = outputs.view(
        {outputs.size(0), outputs.size(1), num_heads_, head_size_});
    m = m.view({m.size(0), 1, m.size(1), 1});
    if (fill.defined()) {
      fill = mask.positional_fill ? fill.narrow(1, 0, outputs.size(1))
                                  : fill.unsqueeze(1);  // [B, 1, H, d]
    }
  }
  torch::Tensor out = o * m;
  if (fill.defined()) out = out + (1 - m) * fill;
  return out.view(outputs.sizes());
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
