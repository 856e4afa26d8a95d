#include "server/core/model/bert_model.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/model/packed_tokens.h"
#include "server/core/model/patch_plan.h"

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

std::string ShapeString(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& config,
                                       double hidden_dropout)
    : padding_offset_positions_(UsesPaddingOffsetPositions(config.family)),
      pad_token_id_(config.pad_token_id) {
  const int e =
      config.embedding_size > 0 ? config.embedding_size : config.hidden_size;
  word_embeddings_ = register_module(
      "word_embeddings", torch::nn::Embedding(config.vocab_size, e));
  position_embeddings_ =
      register_module("position_embeddings",
                      torch::nn::Embedding(config.max_position_embeddings, e));
  if (config.type_vocab_size > 0) {
    token_type_embeddings_ =
        register_module("token_type_embeddings",
                        torch::nn::Embedding(config.type_vocab_size, e));
  }
  layer_norm_ = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e}).eps(
                       config.layer_norm_eps)));
  dropout_ = register_module("dropout", torch::nn::Dropout(hidden_dropout));
  if (e != config.hidden_size) {
    project_ =
        register_module("project", torch::nn::Linear(e, config.hidden_size));
  }
}

torch::Tensor BertEmbeddingsImpl::PositionIds(
    const torch::Tensor& input_ids) const {
  if (!padding_offset_positions_) {
    return torch::arange(input_ids.size(1), torch::TensorOptions()
                                                .dtype(torch::kLong)
                                                .device(input_ids.device()))
        .unsqueeze(0);
  }
  // HF's create_position_ids_from_input_ids: padding keeps pad_token_id.
  const torch::Tensor real = input_ids.ne(pad_token_id_).to(torch::kLong);
  return torch::cumsum(real, 1) * real + pad_token_id_;
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids,
                                          const torch::Tensor& token_type_ids) {
  return forward_words(word_embeddings_(input_ids), input_ids, token_type_ids);
}

torch::Tensor BertEmbeddingsImpl::forward_words(
    const torch::Tensor& words, const torch::Tensor& input_ids,
    const torch::Tensor& token_type_ids) {
  // HF's order, (words + types) + positions: BERT's results stay bit for
  // bit what they were before the families.
  torch::Tensor x = words;
  if (!token_type_embeddings_.is_empty()) {
    x = x + token_type_embeddings_(token_type_ids);
  }
  x = x + position_embeddings_(PositionIds(input_ids));
  x = dropout_(layer_norm_(x));
  return project_.is_empty() ? x : project_(x);
}

BertEncoderImpl::BertEncoderImpl(const BertConfig& config,
                                 const BertDropout& dropout) {
  layers_ = register_module("layer", torch::nn::ModuleList());
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    typed_.push_back(BertLayer(config, dropout.hidden, dropout.attention));
    layers_->push_back(typed_.back());
  }
}

BertPoolerImpl::BertPoolerImpl(const BertConfig& config,
                               PoolerActivation activation)
    : activation_(activation) {
  dense_ = register_module(
      "dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
}

torch::Tensor BertPoolerImpl::forward(const torch::Tensor& hidden) {
  const torch::Tensor x = dense_(hidden.select(1, 0));
  switch (activation_) {
    case PoolerActivation::kRelu:
      return torch::relu(x);
    case PoolerActivation::kGelu:
      return torch::gelu(x);  // exact erf, HF's "gelu"
    case PoolerActivation::kTanh:
      break;
  }
  return torch::tanh(x);
}

BertModelImpl::BertModelImpl(
    const BertConfig& config, const BertDropout& dropout,
    std::optional<PoolerActivation> pooler_activation) {
  embeddings =
      register_module("embeddings", BertEmbeddings(config, dropout.hidden));
  encoder = register_module("encoder", BertEncoder(config, dropout));
  if (pooler_activation.has_value()) {
    pooler = register_module("pooler", BertPooler(config, *pooler_activation));
  }
}

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(
    const BertConfig& config, int num_labels, BertDropout dropout,
    HeadKind kind, PoolerActivation pooler_activation)
    : num_layers_(config.num_hidden_layers),
      num_heads_(config.num_attention_heads),
      head_size_(config.head_size()),
      kind_(num_labels > 0 ? kind : HeadKind::kEncoder) {
  if (kind_ == HeadKind::kEncoder) num_labels = 0;
  bert = register_module(
      "bert", BertModel(config, dropout,
                        kind_ == HeadKind::kSequenceClassification
                            ? std::optional<PoolerActivation>(pooler_activation)
                            : std::nullopt));
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
    const std::vector<const HeadMask*>& masks, const EngineOptions& options,
    const LayerStart& start, const ActivationPatch* patch,
    const RowPositions* positions) {
  const int64_t b = input_ids.size(0);
  TORCH_CHECK(masks.empty() || static_cast<int64_t>(masks.size()) == b,
              "one head mask (or nullptr) per row");
  return RunUnder(input_ids, token_type_ids, attention_mask,
                  MakeBatchHeadMask(masks, positions, mask_shape(input_ids),
                                    input_ids.device(), compute_dtype()),
                  options, start, patch);
}

MaskShape BertForSequenceClassificationImpl::mask_shape(
    const torch::Tensor& input_ids) const {
  return MaskShape{input_ids.size(0), input_ids.size(1), num_layers_,
                   num_heads_, head_size_};
}

torch::ScalarType BertForSequenceClassificationImpl::compute_dtype() const {
  return bert->embeddings->parameters().front().scalar_type();
}

BertRunOutput BertForSequenceClassificationImpl::RunUnder(
    const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
    const torch::Tensor& attention_mask, const BatchHeadMask& head_mask,
    const EngineOptions& options, const LayerStart& start,
    const ActivationPatch* patch) {
  TORCH_CHECK(!options.compute_logits || has_classifier(),
              "compute_logits on a model without a classifier");
  const int64_t b = input_ids.size(0);
  const int64_t t = input_ids.size(1);
  const torch::ScalarType dtype = compute_dtype();
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
  if (head_mask.values.defined()) {
    context.fills = MakeAblationFills(head_mask.row_modes, mask);
  }
  const PatchPlan patches =
      patch == nullptr
          ? PatchPlan()
          : PatchPlan(*patch, b, t, num_layers_, num_heads_, head_size_);
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
    LayerMask layer_mask = head_mask.ForLayer(l);
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

absl::Status LoadStateDict(
    const StateDict& weights, BertForSequenceClassificationImpl* module,
    const std::function<std::string(const std::string&)>& file_key) {
  torch::NoGradGuard no_grad;
  for (auto& item : module->named_parameters(/*recurse=*/true)) {
    const std::string& key = item.key();
    const std::string name = file_key ? file_key(key) : key;
    torch::Tensor& param = item.value();
    auto it = weights.find(key);
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
