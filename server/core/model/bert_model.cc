#include "server/core/model/bert_model.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  std::vector<bool> masked_layers;      // [L]: some row masks some head there
  std::vector<AblationMode> row_modes;  // [B]: kZero for rows without a mask
};

// Which layers are masked comes from HeadMask::AffectedHeads on the host, so
// the pass never reads a tensor back to learn it.
BatchHeadMask MakeBatchHeadMask(const std::vector<const HeadMask*>& masks,
                                int64_t rows, int layers, int heads,
                                const torch::Device& device,
                                torch::ScalarType dtype) {
  BatchHeadMask out;
  out.masked_layers.assign(layers, false);
  out.row_modes.assign(rows, AblationMode::kZero);
  bool any = false;
  for (const HeadMask* m : masks) {
    if (m == nullptr) continue;
    TORCH_CHECK(m->layers() == layers && m->heads() == heads,
                "head mask of shape ", m->layers(), "x", m->heads(),
                " for a model of ", layers, "x", heads);
    for (const LayerHead& lh : m->AffectedHeads()) {
      out.masked_layers[lh.layer] = any = true;
    }
  }
  if (!any) return out;  // no mask at all: the probabilities stay untouched
  torch::Tensor values = torch::ones({rows, layers, heads}, torch::kFloat);
  float* v = values.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    if (masks[r] == nullptr) continue;
    std::copy(masks[r]->values().begin(), masks[r]->values().end(),
              v + r * layers * heads);
    out.row_modes[r] = masks[r]->mode();
  }
  out.values = values.to(device, dtype);
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
    const torch::Tensor& start_hidden, const torch::Tensor& mask_tensor,
    AblationMode mask_mode) {
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

  AttentionContext context;
  torch::Tensor mask = attention_mask.to(dtype).view({b, 1, 1, t});
  context.extended_mask = (1 - mask) * LowestValue(dtype);
  TORCH_CHECK(!mask_tensor.defined() || masks.empty(),
              "mask_tensor and per-row head masks together");
  const BatchHeadMask head_mask =
      mask_tensor.defined()
          ? TensorHeadMask(mask_tensor, mask_mode, b, num_layers_, num_heads_,
                           dtype)
          : MakeBatchHeadMask(masks, b, num_layers_, num_heads_,
                              input_ids.device(), dtype);
  if (head_mask.values.defined()) {
    context.fills = MakeAblationFills(head_mask.row_modes, mask);
  }

  BertRunOutput out;
  auto captured = [&](int layer) { return capture_hidden[layer]; };
  auto capture = [&](int layer, const torch::Tensor& hidden) {
    if (captured(layer)) out.hidden[layer] = hidden;
  };
  torch::Tensor hidden;
  if (options.start_layer == 0) {
    hidden = bert->embeddings(input_ids, token_type_ids);
  } else {
    TORCH_CHECK(start_hidden.defined(), "start_layer > 0 needs start_hidden");
    hidden = start_hidden;
  }
  for (int l = options.start_layer; l < num_layers_; ++l) {
    capture(l, hidden);
    LayerMask layer_mask;
    if (head_mask.masked_layers[l]) {
      layer_mask.values = head_mask.values.select(1, l);  // [B, H]
    }
    const bool want_probs = want_attention[l];
    // A token classifier reads every position of the last layer.
    const bool cls_only = l == num_layers_ - 1 && options.cls_only_last_layer &&
                          options.compute_logits &&
                          kind_ == HeadKind::kSequenceClassification &&
                          !want_probs && !captured(num_layers_);
    torch::Tensor probs;
    hidden = bert->encoder->layer(l).forward(hidden, context, layer_mask,
                                             want_probs ? &probs : nullptr,
                                             cls_only ? 1 : 0);
    if (want_probs) out.attentions[l] = probs;
  }
  capture(num_layers_, hidden);

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
