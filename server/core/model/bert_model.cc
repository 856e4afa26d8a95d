#include "server/core/model/bert_model.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/model/device_copy.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/packed_tokens.h"

namespace bertology {
namespace {

// finfo(dtype).min, as HF's get_extended_attention_mask uses.
double LowestValue(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case torch::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      return std::numeric_limits<float>::lowest();
  }
}

// Layer indices as a bitmap of `size`; each must be in [0, size).
std::vector<bool> LayerBits(const std::vector<int>& layers, int size) {
  std::vector<bool> bits(size, false);
  for (int l : layers) {
    TORCH_CHECK(l >= 0 && l < size, "layer index ", l, " out of range [0, ",
                size, ")");
    bits[l] = true;
  }
  return bits;
}

// The rows' head masks as tensors for one pass.
struct BatchHeadMask {
  // [B, L, H] on the device in the compute dtype (nullptr rows all 1);
  // undefined when no row masks any head.
  torch::Tensor values;
  // [B, L, H, 1, d], or [B, L, H, T, d] when some row's fill differs by
  // position: kMean / kMeanByRole / kResample rows' reference outputs
  // (zeros for the other rows); undefined when no masked row is in those
  // modes.
  torch::Tensor output_fill;
  bool positional_fill = false;
  std::vector<bool> masked_layers;      // [L]: some row masks some head there
  std::vector<AblationMode> row_modes;  // [B]: kZero for rows without a mask
};

// Row r's fill [T, L, H, d], position by position (positions past the
// row's length take position 0's: padding is never read).
torch::Tensor PositionalFill(const HeadMask& mask, const TokenLayout& layout,
                             int draw, int64_t t, const torch::Device& device) {
  const HeadReference& ref = *mask.reference();
  std::vector<int64_t> index(t, 0);
  const torch::Tensor* table = &ref.role_means;
  if (mask.mode() == AblationMode::kMeanByRole) {
    for (int p = 0; p < layout.length && p < t; ++p) {
      index[p] = static_cast<int64_t>(layout.RoleAt(p));
    }
    index.assign(index.begin(), index.end());
  } else {
    const int source = ResampleSource(ref, layout, mask.draws(), draw);
    TORCH_CHECK(source >= 0, "no resample source for a row (unchecked)");
    const std::vector<int64_t> rows =
        ResampleTokenRows(ref, source, layout, mask.draws().alignment);
    for (int64_t p = 0; p < t; ++p) {
      index[p] = p < static_cast<int64_t>(rows.size()) ? rows[p] : rows[0];
    }
    table = &ref.token_outputs;
  }
  return table->index_select(
      0, ToDevice(torch::tensor(index, torch::kLong), device));
}

// Which layers are masked comes from HeadMask::AffectedHeads on the host, so
// the pass never reads a tensor back to learn it.
BatchHeadMask MakeBatchHeadMask(const std::vector<const HeadMask*>& masks,
                                const RowPositions* positions, int64_t rows,
                                int64_t t, int layers, int heads, int head_size,
                                const torch::Device& device,
                                torch::ScalarType dtype) {
  BatchHeadMask out;
  out.masked_layers.assign(layers, false);
  out.row_modes.assign(rows, AblationMode::kZero);
  bool any = false, any_fill = false;
  for (const HeadMask* m : masks) {
    if (m == nullptr) continue;
    TORCH_CHECK(m->layers() == layers && m->heads() == heads,
                "head mask of shape ", m->layers(), "x", m->heads(),
                " for a model of ", layers, "x", heads);
    const std::vector<LayerHead> affected = m->AffectedHeads();
    for (const LayerHead& lh : affected) {
      out.masked_layers[lh.layer] = any = true;
    }
    if (ModeNeedsReference(m->mode()) && !affected.empty()) {
      TORCH_CHECK(m->reference() != nullptr, "a head mask in mode ",
                  AblationModeName(m->mode()), " without reference statistics");
      any_fill = true;
      if (ModeFillsByPosition(m->mode())) {
        TORCH_CHECK(positions != nullptr &&
                        static_cast<int64_t>(positions->layouts.size()) == rows,
                    "a head mask in mode ", AblationModeName(m->mode()),
                    " without the rows' token layouts");
        out.positional_fill = true;
      }
    }
  }
  if (!any) return out;  // no mask at all: the probabilities stay untouched
  torch::Tensor values = torch::ones({rows, layers, heads}, torch::kFloat);
  float* v = values.data_ptr<float>();
  std::vector<torch::Tensor> fills;
  torch::Tensor zeros;
  if (any_fill) {
    zeros = torch::zeros({layers, heads, head_size},
                         torch::TensorOptions().dtype(dtype).device(device));
    if (out.positional_fill) zeros = zeros.unsqueeze(0).expand({t, -1, -1, -1});
  }
  for (int64_t r = 0; r < rows; ++r) {
    const HeadMask* m = masks[r];
    if (m != nullptr) {
      std::copy(m->values().begin(), m->values().end(), v + r * layers * heads);
      out.row_modes[r] = m->mode();
    }
    if (!any_fill) continue;
    if (m == nullptr || !ModeNeedsReference(m->mode()) || m->IsIdentity()) {
      fills.push_back(zeros);
    } else if (ModeFillsByPosition(m->mode())) {
      const int draw = positions->draws.empty() ? 0 : positions->draws.at(r);
      fills.push_back(
          PositionalFill(*m, positions->layouts[r], draw, t, device));
    } else if (out.positional_fill) {
      fills.push_back(
          m->reference()->mean.unsqueeze(0).expand({t, -1, -1, -1}));
    } else {
      fills.push_back(m->reference()->mean);
    }
  }
  out.values = ToDevice(values.to(dtype), device);
  if (any_fill) {
    // [B, L, H, d] -> [B, L, H, 1, d]; [B, T, L, H, d] -> [B, L, H, T, d].
    out.output_fill = out.positional_fill
                          ? torch::stack(fills).permute({0, 2, 3, 1, 4})
                          : torch::stack(fills).unsqueeze(3);
  }
  return out;
}

// A mask given as a tensor (Run's mask_tensor): every layer is masked, so
// the graph reaches every head's value even where it is 1.
BatchHeadMask TensorHeadMask(const torch::Tensor& mask_tensor,
                             AblationMode mode, int64_t rows, int layers,
                             int heads, torch::ScalarType dtype) {
  TORCH_CHECK(mask_tensor.is_floating_point(), "mask_tensor must be float");
  torch::Tensor values = mask_tensor;
  if (values.dim() == 2) values = values.unsqueeze(0).expand({rows, -1, -1});
  TORCH_CHECK(values.dim() == 3 && values.size(0) == rows &&
                  values.size(1) == layers && values.size(2) == heads,
              "mask_tensor of shape ", mask_tensor.sizes(), " for ", rows,
              " rows of a model of ", layers, "x", heads);
  BatchHeadMask out;
  out.values = values.to(dtype);  // differentiable
  out.masked_layers.assign(layers, true);
  out.row_modes.assign(rows, mode);
  return out;
}

// An ActivationPatch as per-layer tensors: where each layer's rows take the
// source's values.
class PatchPlan {
 public:
  PatchPlan() = default;
  void Build(const ActivationPatch& patch, int64_t rows, int64_t t, int layers,
             int heads, int head_size) {
    TORCH_CHECK(static_cast<int64_t>(patch.row_sites.size()) == rows,
                "activation patch: one site list per row");
    const torch::Device device = patch.layer_inputs.device();
    residual_.resize(layers + 1);
    head_.resize(layers);
    std::vector<torch::Tensor> residual_bits(layers + 1), head_bits(layers);
    auto position_range = [&](int p) {
      TORCH_CHECK(p >= -1 && p < t, "patch position ", p, " out of range [0, ",
                  t, ")");
      return p < 0 ? std::pair<int64_t, int64_t>(0, t)
                   : std::pair<int64_t, int64_t>(p, p + 1);
    };
    for (int64_t r = 0; r < rows; ++r) {
      for (const PatchSite& site : patch.row_sites[r]) {
        const auto [p0, p1] = position_range(site.position);
        if (site.kind == PatchSite::Kind::kResidual) {
          TORCH_CHECK(site.layer >= 0 && site.layer <= layers,
                      "patch layer out of range");
          torch::Tensor& bits = residual_bits[site.layer];
          if (!bits.defined()) bits = torch::zeros({rows, t, 1}, torch::kBool);
          bits[r].narrow(0, p0, p1 - p0).fill_(true);
        } else {
          TORCH_CHECK(site.layer >= 0 && site.layer < layers &&
                          site.head >= 0 && site.head < heads,
                      "patch head out of range");
          torch::Tensor& bits = head_bits[site.layer];
          if (!bits.defined()) {
            bits = torch::zeros({rows, heads, t, 1}, torch::kBool);
          }
          bits[r][site.head].narrow(0, p0, p1 - p0).fill_(true);
        }
      }
    }
    for (int l = 0; l <= layers; ++l) {
      if (!residual_bits[l].defined()) continue;
      residual_[l] = {ToDevice(residual_bits[l], device),
                      patch.layer_inputs[l].unsqueeze(0)};  // [1, T, D]
    }
    for (int l = 0; l < layers; ++l) {
      if (!head_bits[l].defined()) continue;
      // [T, D] -> [1, H, T, d]
      head_[l] = {ToDevice(head_bits[l], device),
                  patch.head_outputs[l]
                      .view({t, heads, head_size})
                      .permute({1, 0, 2})
                      .unsqueeze(0)};
    }
  }
  // True when layer `l`'s input (l = L: the encoder output) is patched.
  bool Touches(int l) const {
    return l < static_cast<int>(residual_.size()) &&
           residual_[l].where.defined();
  }
  torch::Tensor PatchResidual(int l, const torch::Tensor& hidden) const {
    if (!Touches(l)) return hidden;
    const int64_t q = hidden.size(1);  // 1 after a [CLS]-only last layer
    return torch::where(residual_[l].where.narrow(1, 0, q),
                        residual_[l].values.narrow(1, 0, q), hidden);
  }
  void PatchHeads(int l, LayerMask* mask) const {
    if (l >= static_cast<int>(head_.size()) || !head_[l].where.defined()) {
      return;
    }
    mask->patch_where = head_[l].where;
    mask->patch_values = head_[l].values;
  }

 private:
  struct Where {
    torch::Tensor where, values;
  };
  std::vector<Where> residual_, head_;
};

PatchPlan MakePatchPlan(const ActivationPatch* patch, int64_t rows, int64_t t,
                        int layers, int heads, int head_size) {
  PatchPlan plan;
  if (patch != nullptr) plan.Build(*patch, rows, t, layers, heads, head_size);
  return plan;
}

std::string ShapeString(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& config,
                                       double hidden_dropout) {
  const int d = config.hidden_size;
  word_embeddings_ = register_module(
      "word_embeddings", torch::nn::Embedding(config.vocab_size, d));
  position_embeddings_ =
      register_module("position_embeddings",
                      torch::nn::Embedding(config.max_position_embeddings, d));
  token_type_embeddings_ = register_module(
      "token_type_embeddings", torch::nn::Embedding(config.type_vocab_size, d));
  layer_norm_ = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(
                       config.layer_norm_eps)));
  dropout_ = register_module("dropout", torch::nn::Dropout(hidden_dropout));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids,
                                          const torch::Tensor& token_type_ids) {
  const int64_t t = input_ids.size(1);
  torch::Tensor positions = torch::arange(
      t, torch::TensorOptions().dtype(torch::kLong).device(input_ids.device()));
  torch::Tensor x = word_embeddings_(input_ids) +
                    token_type_embeddings_(token_type_ids) +
                    position_embeddings_(positions).unsqueeze(0);
  return dropout_(layer_norm_(x));
}

BertEncoderImpl::BertEncoderImpl(const BertConfig& config,
                                 const BertDropout& dropout) {
  layers_ = register_module("layer", torch::nn::ModuleList());
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    typed_.push_back(BertLayer(config, dropout.hidden, dropout.attention));
    layers_->push_back(typed_.back());
  }
}

BertPoolerImpl::BertPoolerImpl(const BertConfig& config) {
  dense_ = register_module(
      "dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
}

torch::Tensor BertPoolerImpl::forward(const torch::Tensor& hidden) {
  return torch::tanh(dense_(hidden.select(1, 0)));
}

BertModelImpl::BertModelImpl(const BertConfig& config,
                             const BertDropout& dropout, bool with_pooler) {
  embeddings =
      register_module("embeddings", BertEmbeddings(config, dropout.hidden));
  encoder = register_module("encoder", BertEncoder(config, dropout));
  if (with_pooler) pooler = register_module("pooler", BertPooler(config));
}

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(
    const BertConfig& config, int num_labels, BertDropout dropout,
    HeadKind kind)
    : num_layers_(config.num_hidden_layers),
      num_heads_(config.num_attention_heads),
      head_size_(config.head_size()),
      kind_(num_labels > 0 ? kind : HeadKind::kEncoder) {
  if (kind_ == HeadKind::kEncoder) num_labels = 0;
  bert = register_module(
      "bert",
      BertModel(config, dropout, kind_ == HeadKind::kSequenceClassification));
  this->dropout =
      register_module("dropout", torch::nn::Dropout(dropout.hidden));
  if (num_labels > 0) {
    classifier = register_module(
        "classifier", torch::nn::Linear(config.hidden_size, num_labels));
  }
}

BertRunOutput BertForSequenceClassificationImpl::Run(
    const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
    const torch::Tensor& attention_mask,
    const std::vector<const HeadMask*>& masks, const ForwardOptions& options,
    const LayerStart& start, const torch::Tensor& mask_tensor,
    AblationMode mask_mode, const ActivationPatch* patch,
    const torch::Tensor& mask_fill, const RowPositions* positions) {
  TORCH_CHECK(!options.compute_logits || has_classifier(),
              "compute_logits on a model without a classifier");
  const int64_t b = input_ids.size(0);
  const int64_t t = input_ids.size(1);
  TORCH_CHECK(masks.empty() || static_cast<int64_t>(masks.size()) == b,
              "one head mask (or nullptr) per row");
  const torch::ScalarType dtype =
      bert->embeddings->parameters().front().scalar_type();
  const std::vector<bool> want_attention =
      LayerBits(options.attention_layers, num_layers_);
  const std::vector<bool> capture_hidden =
      LayerBits(options.capture_hidden, num_layers_ + 1);
  const std::vector<bool> capture_head_outputs =
      LayerBits(options.capture_head_outputs, num_layers_);

  AttentionContext context;
  // kAuto is Model's to resolve (its ModelOptions::attention); the module
  // alone (the trainer, tests) runs explicit.
  context.fused = options.attention_kernel == AttentionKernel::kFused;
  TORCH_CHECK(!context.fused || FusedAttentionAvailable(),
              "fused attention needs libtorch >= 2.0");
  torch::Tensor mask = attention_mask.to(dtype).view({b, 1, 1, t});
  context.extended_mask = (1 - mask) * LowestValue(dtype);
  TORCH_CHECK(!mask_tensor.defined() || masks.empty(),
              "mask_tensor and per-row head masks together");
  TORCH_CHECK(!mask_tensor.defined() || !ModeFillsByPosition(mask_mode),
              "mask_tensor in mode ", AblationModeName(mask_mode),
              " (no tensor form)");
  TORCH_CHECK(
      !mask_tensor.defined() || mask_mode != AblationMode::kMean ||
          (mask_fill.defined() && mask_fill.dim() == 3 &&
           mask_fill.size(0) == num_layers_ &&
           mask_fill.size(1) == num_heads_ && mask_fill.size(2) == head_size_),
      "mask_tensor in mode mean needs a [L, H, d] mask_fill");
  BatchHeadMask head_mask =
      mask_tensor.defined()
          ? TensorHeadMask(mask_tensor, mask_mode, b, num_layers_, num_heads_,
                           dtype)
          : MakeBatchHeadMask(masks, positions, b, t, num_layers_, num_heads_,
                              head_size_, input_ids.device(), dtype);
  if (mask_tensor.defined() && mask_mode == AblationMode::kMean) {
    head_mask.output_fill = mask_fill.to(input_ids.device(), dtype)
                                .unsqueeze(2)
                                .unsqueeze(0)
                                .expand({b, -1, -1, -1, -1});  // [B,L,H,1,d]
  }
  if (head_mask.values.defined()) {
    context.fills = MakeAblationFills(head_mask.row_modes, mask);
  }
  const PatchPlan patches =
      MakePatchPlan(patch, b, t, num_layers_, num_heads_, head_size_);
  // Packed, hidden states are [N, D] between layers ([B, D] after a
  // [CLS]-only one); what leaves the pass is unpacked to [B, T, D].
  PackedTokens packed;
  // Attention probabilities keep the padded pass's rows at padding queries
  // (HF returns them), which a packed pass does not compute.
  // Not on CUDA: building the index reads the mask back to the host (a
  // device sync per pass), and the gathers were never measured to pay there.
  if (options.pack_tokens && !input_ids.is_cuda() && patch == nullptr &&
      options.attention_layers.empty()) {
    // Packing pays where padding costs more GEMM work than the gathers and
    // scatters cost: measured on 2 cores, it lost 10% on the shipped model
    // (d = 96) at 1.4% padding and won 10% on BERT-base (d = 768) at 11%;
    // both fit padding > 10 / d of the real tokens.
    const double min_padding =
        10.0 / static_cast<double>(num_heads_ * head_size_);
    packed = PackedTokens::Make(attention_mask, min_padding);
  }
  if (packed.defined()) context.packed = &packed;
  auto unpack = [&](const torch::Tensor& x) {
    return packed.defined() ? packed.Unpack(x) : x;
  };

  BertRunOutput out;
  auto captured = [&](int layer) { return capture_hidden[layer]; };
  auto capture = [&](int layer, const torch::Tensor& hidden) {
    if (captured(layer)) out.hidden[layer] = unpack(hidden);
  };
  torch::Tensor hidden;
  if (start.hidden.defined()) {
    hidden = start.hidden;
  } else {
    TORCH_CHECK(options.start_layer == 0, "start_layer > 0 needs start.hidden");
    hidden = bert->embeddings(input_ids, token_type_ids);
  }
  TORCH_CHECK(!start.head_outputs.defined() || start.hidden.defined(),
              "start.head_outputs needs start.hidden");
  if (packed.defined()) hidden = packed.Pack(hidden);
  bool cls_only_ran = false;
  for (int l = options.start_layer; l < num_layers_; ++l) {
    hidden = patches.PatchResidual(l, hidden);
    capture(l, hidden);
    LayerMask layer_mask;
    if (head_mask.masked_layers[l]) {
      layer_mask.values = head_mask.values.select(1, l);  // [B, H]
      if (head_mask.output_fill.defined()) {
        // [B, H, 1, d], or [B, H, T, d] per position.
        layer_mask.output_fill = head_mask.output_fill.select(1, l);
        layer_mask.positional_fill = head_mask.positional_fill;
      }
    }
    patches.PatchHeads(l, &layer_mask);
    const bool want_probs = want_attention[l];
    // A token classifier reads every position of the last layer.
    const bool cls_only =
        l == num_layers_ - 1 && options.cls_only_last_layer &&
        options.compute_logits && kind_ == HeadKind::kSequenceClassification &&
        !want_probs && !captured(num_layers_) && !capture_head_outputs[l] &&
        !patches.Touches(num_layers_);
    cls_only_ran = cls_only;
    BertLayerImpl& layer = bert->encoder->layer(l);
    if (l == options.start_layer && start.head_outputs.defined()) {
      TORCH_CHECK(!want_probs && !capture_head_outputs[l],
                  "a layer started from head outputs has no attention to "
                  "return");
      hidden = layer.forward_from_head_outputs(
          hidden,
          packed.defined() ? packed.Pack(start.head_outputs)
                           : start.head_outputs,
          context, layer_mask, cls_only ? 1 : 0);
      continue;
    }
    torch::Tensor probs, head_outputs;
    hidden = layer.forward(hidden, context, layer_mask,
                           want_probs ? &probs : nullptr, cls_only ? 1 : 0,
                           capture_head_outputs[l] ? &head_outputs : nullptr);
    if (want_probs) out.attentions[l] = probs;
    if (capture_head_outputs[l]) out.head_outputs[l] = unpack(head_outputs);
  }
  if (packed.defined()) {
    hidden = cls_only_ran ? hidden.unsqueeze(1) : packed.Unpack(hidden);
  }
  hidden = patches.PatchResidual(num_layers_, hidden);
  if (captured(num_layers_)) out.hidden[num_layers_] = hidden;  // unpacked

  if (options.compute_logits) {
    out.logits = kind_ == HeadKind::kTokenClassification
                     ? classifier(dropout(hidden))
                     : classifier(dropout(bert->pooler(hidden)));
  }
  return out;
}

absl::Status LoadStateDict(const StateDict& weights,
                           BertForSequenceClassificationImpl* module) {
  torch::NoGradGuard no_grad;
  for (auto& item : module->named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor& param = item.value();
    auto it = weights.find(name);
    if (it == weights.end()) {
      return absl::NotFoundError(absl::StrCat("weights lack ", name, " (shape ",
                                              ShapeString(param), ")"));
    }
    const torch::Tensor& src = it->second;
    if (!src.sizes().equals(param.sizes())) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight ", name, " has shape ", ShapeString(src),
                       ", the config needs ", ShapeString(param)));
    }
    if (!src.is_floating_point()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight ", name, " has non-float dtype ",
                       std::string(c10::toString(src.scalar_type()))));
    }
    param.copy_(src);  // converts dtype and device
  }
  return absl::OkStatus();
}

}  // namespace bertology
