// The Engine's passes: validation at the boundary, then one
// BertForSequenceClassificationImpl::Run under torch::InferenceMode (or grad
// mode, RunWithGrad), which builds the head-mask tensors from the rows'
// HeadMasks (head_mask_tensors.h).
#include "server/core/model/engine.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/core/model/bert_model.h"
#include "server/core/model/device_copy.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"
#include "server/core/model/reference_tensors.h"

namespace bertology {
namespace {

// The token type ids a model takes: [0, type_vocab_size), or only 0 for
// DistilBERT, which has none.
int TokenTypes(const BertConfig& config) {
  return std::max(1, config.type_vocab_size);
}

std::string Shape(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

bool HasShape(const torch::Tensor& t, std::vector<int64_t> shape) {
  return t.defined() && t.sizes().equals(shape);
}

// Each of `layers` in [lo, hi); errors name "field[i]".
absl::Status CheckLayers(const std::vector<int>& layers, int lo, int hi,
                         const char* field) {
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < lo || layers[i] >= hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]=", layers[i], " out of range [", lo,
                       ", ", hi, ")"));
    }
  }
  return absl::OkStatus();
}

// Values of [lo, hi) only: out-of-range ids would be a device-side assert
// on CUDA.
absl::Status CheckRange(const torch::Tensor& x, int64_t end,
                        const char* field) {
  IdRange range(x.min().item<int64_t>());
  range.Add(x.max().item<int64_t>());
  return range.Check(end, field);
}

// A pass's outputs as Engine returns them: logits and attentions float32
// on the CPU (differentiably, under grad mode), hidden states and head
// outputs where they are.
TensorOutput ToTensorOutput(BertRunOutput out) {
  TensorOutput result;
  if (out.logits.defined()) {
    result.logits = out.logits.to(torch::kCPU, torch::kFloat);
  }
  for (auto& [layer, probs] : out.attentions) {
    result.attentions[layer] = probs.to(torch::kCPU, torch::kFloat);
  }
  result.hidden = std::move(out.hidden);
  result.head_outputs = std::move(out.head_outputs);
  return result;
}

// Runs `fn` under InferenceMode, turning libtorch's exceptions into status.
template <typename Fn>
auto CatchTorch(Fn fn) -> decltype(fn()) {
  try {
    torch::InferenceMode inference_mode;
    return fn();
  } catch (const c10::OutOfMemoryError& e) {
    // The caller may run fewer rows (the sweep splits the batch).
    return absl::ResourceExhaustedError(absl::StrCat(
        "forward pass out of memory: ", e.what_without_backtrace()));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("forward pass failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("forward pass failed: ", e.what()));
  }
}

// As CatchTorch, with grad mode on and outside InferenceMode.
template <typename Fn>
auto CatchTorchWithGrad(Fn fn) -> decltype(fn()) {
  try {
    torch::AutoGradMode grad_mode(true);
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("forward pass with grad failed: ",
                                            e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("forward pass with grad failed: ", e.what()));
  }
}

}  // namespace

Engine::Engine(const Model& model,
               std::shared_ptr<BertForSequenceClassificationImpl> module,
               ModelPlacement placement)
    : model_(model), module_(std::move(module)), placement_(placement) {}

Engine::~Engine() = default;

EngineOptions Engine::Resolved(const EngineOptions& options) const {
  EngineOptions out = options;
  if (out.attention_kernel == AttentionKernel::kAuto) {
    out.attention_kernel = placement_.attention;
  }
  return out;
}

absl::Status Engine::CheckStartHeadOutputs(
    const ModelInput& input, const std::vector<const HeadMask*>& masks,
    const EngineOptions& options) const {
  const BertConfig& config = model_.config();
  const int64_t b = input.input_ids.size(0), t = input.input_ids.size(1);
  if (!input.start_hidden.defined() ||
      !HasShape(input.start_head_outputs, {b, t, config.hidden_size})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_head_outputs must be [", b, ", ", t, ", ", config.hidden_size,
        "] beside start_hidden, got ", Shape(input.start_head_outputs),
        input.start_hidden.defined() ? "" : " without start_hidden"));
  }
  const int start = options.start_layer;
  auto has = [start](const std::vector<int>& layers) {
    return std::find(layers.begin(), layers.end(), start) != layers.end();
  };
  if (input.patch != nullptr || has(options.attention_layers) ||
      has(options.capture_head_outputs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_head_outputs: layer ", start,
        " runs no attention, so it takes no patch and returns no attention or "
        "head outputs"));
  }
  for (size_t r = 0; r < masks.size(); ++r) {
    if (masks[r] != nullptr && masks[r]->mode() == AblationMode::kUniform &&
        !masks[r]->IsIdentity()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "start_head_outputs with rows[", r,
          "].mask in mode uniform (its heads' outputs need the attention)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::CheckRun(const ModelInput& input,
                              const std::vector<const HeadMask*>& masks,
                              const EngineOptions& options) const {
  const BertConfig& config = model_.config();
  const int num_layers = config.num_hidden_layers;
  if (options.compute_logits) RETURN_IF_ERROR(model_.CheckCanClassify());
  const torch::Tensor& ids = input.input_ids;
  if (!ids.defined() || ids.dim() != 2 || ids.size(0) == 0 ||
      ids.size(1) == 0) {
    return absl::InvalidArgumentError(
        "input_ids must be a non-empty [B, T] tensor");
  }
  const int64_t b = ids.size(0), t = ids.size(1);
  if (!HasShape(input.token_type_ids, {b, t}) ||
      !HasShape(input.attention_mask, {b, t})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token_type_ids and attention_mask must have input_ids' shape ",
        Shape(ids)));
  }
  if (t > config.max_input_tokens()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence length ", t, " exceeds the ", config.max_input_tokens(),
        " positions max_position_embeddings covers"));
  }
  if (!input.ranges_checked) {
    RETURN_IF_ERROR(CheckRange(ids, config.vocab_size, "input_ids"));
    RETURN_IF_ERROR(
        CheckRange(input.token_type_ids, TokenTypes(config), "token_type_ids"));
  }
  if (options.attention_kernel == AttentionKernel::kFused &&
      !FusedAttentionAvailable()) {
    return absl::FailedPreconditionError(
        "attention_kernel=fused needs libtorch >= 2.0");
  }
  if (options.start_layer < 0 || options.start_layer > num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_layer=", options.start_layer, " out of range [0, ",
                     num_layers, "]"));
  }
  const std::vector<int64_t> hidden_shape = {b, t, config.hidden_size};
  if ((options.start_layer > 0 || input.start_hidden.defined()) &&
      !HasShape(input.start_hidden, hidden_shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_hidden must be [", b, ", ", t, ", ", config.hidden_size,
        "] for start_layer=", options.start_layer, ", got ",
        input.start_hidden.defined() ? Shape(input.start_hidden)
                                     : "undefined"));
  }
  RETURN_IF_ERROR(CheckLayers(options.attention_layers, options.start_layer,
                              num_layers, "attention_layers"));
  RETURN_IF_ERROR(CheckLayers(options.capture_hidden, options.start_layer,
                              num_layers + 1, "capture_hidden"));
  RETURN_IF_ERROR(CheckLayers(options.capture_head_outputs, options.start_layer,
                              num_layers, "capture_head_outputs"));
  if (input.start_head_outputs.defined()) {
    RETURN_IF_ERROR(CheckStartHeadOutputs(input, masks, options));
  }
  if (!masks.empty() && static_cast<int64_t>(masks.size()) != b) {
    return absl::InvalidArgumentError(
        absl::StrCat("masks has ", masks.size(), " entries for ", b, " rows"));
  }
  if (input.patch != nullptr) {
    if (!masks.empty()) {
      return absl::InvalidArgumentError("activation patches with head masks");
    }
    if (static_cast<int64_t>(input.patch->row_sites.size()) != b) {
      return absl::InvalidArgumentError(
          absl::StrCat("patch has ", input.patch->row_sites.size(),
                       " site lists for ", b, " rows"));
    }
    const int64_t d = config.hidden_size;
    if (!HasShape(input.patch->head_outputs, {num_layers, t, d}) ||
        !HasShape(input.patch->layer_inputs, {num_layers + 1, t, d})) {
      return absl::InvalidArgumentError(
          absl::StrCat("patch activations must be [", num_layers, ", ", t, ", ",
                       d, "] and [", num_layers + 1, ", ", t, ", ", d, "]"));
    }
  }
  if (!input.draws.empty() && static_cast<int64_t>(input.draws.size()) != b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "draws has ", input.draws.size(), " entries for ", b, " rows"));
  }
  for (size_t r = 0; r < masks.size(); ++r) {
    if (masks[r] == nullptr) continue;
    const std::string field = absl::StrCat("rows[", r, "].mask");
    RETURN_IF_ERROR(model_.CheckHeadMask(*masks[r], field));
    if (ModeFillsByPosition(masks[r]->mode()) && !masks[r]->IsIdentity()) {
      if (static_cast<int64_t>(input.layouts.size()) != b) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, " in mode ", AblationModeName(masks[r]->mode()),
            " needs each row's token layout (ModelInput::layouts, set by "
            "MakeBatch)"));
      }
      const int draw = input.draws.empty() ? 0 : input.draws[r];
      if (masks[r]->mode() == AblationMode::kResample &&
          (draw < 0 || draw >= masks[r]->draws().count)) {
        return absl::InvalidArgumentError(
            absl::StrCat("rows[", r, "].draw=", draw, " out of range [0, ",
                         masks[r]->draws().count, ")"));
      }
      RETURN_IF_ERROR(CheckReferenceFits(*masks[r]->reference(),
                                         input.layouts[r], masks[r]->mode(),
                                         masks[r]->draws(), field));
    }
    // Layers below start_layer are not run (their output is start_hidden),
    // so a mask there would be silently ignored.
    for (const LayerHead& lh : masks[r]->AffectedHeads()) {
      if (lh.layer < options.start_layer) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rows[", r, "].mask changes layer ", lh.layer, " head ", lh.head,
            ", below start_layer=", options.start_layer,
            " (layers below start_layer are not run)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelInput> Engine::MakeBatch(
    const std::vector<const Encoding*>& encodings) const {
  if (encodings.empty()) return absl::InvalidArgumentError("empty batch");
  const int max_seq_len = model_.max_seq_len();
  const BertConfig& config = model_.config();
  const int pad_id = std::max(0, model_.tokenizer().specials().pad_id);
  size_t longest = 0;
  for (size_t i = 0; i < encodings.size(); ++i) {
    const size_t n = encodings[i]->tokens.size();
    if (n == 0 || n > static_cast<size_t>(max_seq_len)) {
      return absl::InvalidArgumentError(absl::StrCat("encoding ", i, " has ", n,
                                                     " tokens; must be in [1, ",
                                                     max_seq_len, "]"));
    }
    longest = std::max(longest, n);
  }
  const int64_t b = static_cast<int64_t>(encodings.size());
  const int64_t t = static_cast<int64_t>(longest);
  try {
    torch::Tensor ids = torch::full({b, t}, pad_id, torch::kLong);
    torch::Tensor types = torch::zeros({b, t}, torch::kLong);
    torch::Tensor mask = torch::zeros({b, t}, torch::kLong);
    auto ids_a = ids.accessor<int64_t, 2>();
    auto types_a = types.accessor<int64_t, 2>();
    auto mask_a = mask.accessor<int64_t, 2>();
    // Ranges checked here, on the host: on CUDA a check of the device
    // tensors would wait for the device twice per batch.
    IdRange id_range{pad_id}, type_range{0};
    // The pair role is the token type where the model has two (BERT,
    // ELECTRA); RoBERTa's one type and DistilBERT's none are all 0, as HF's
    // tokenizers give them.
    const bool typed = config.type_vocab_size > 1;
    for (int64_t r = 0; r < b; ++r) {
      const std::vector<Token>& tokens = encodings[r]->tokens;
      for (size_t j = 0; j < tokens.size(); ++j) {
        ids_a[r][j] = tokens[j].id;
        types_a[r][j] = typed ? tokens[j].segment : 0;
        mask_a[r][j] = 1;
        id_range.Add(tokens[j].id);
        type_range.Add(types_a[r][j]);
      }
    }
    RETURN_IF_ERROR(id_range.Check(config.vocab_size, "input_ids"));
    RETURN_IF_ERROR(type_range.Check(TokenTypes(config), "token_type_ids"));
    const torch::Device& device = placement_.device;
    ModelInput input{ToDevice(ids, device), ToDevice(types, device),
                     ToDevice(mask, device), torch::Tensor()};
    input.ranges_checked = true;
    input.layouts.reserve(encodings.size());
    for (const Encoding* e : encodings) {
      input.layouts.push_back(TokenLayout::Of(*e));
    }
    return input;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("MakeBatch: ", e.what()));
  }
}

absl::StatusOr<TensorOutput> Engine::Run(
    const ModelInput& input, const std::vector<const HeadMask*>& masks,
    const EngineOptions& options) const {
  return CatchTorch([&]() -> absl::StatusOr<TensorOutput> {
    const EngineOptions resolved = Resolved(options);
    RETURN_IF_ERROR(CheckRun(input, masks, resolved));
    LayerStart start;
    auto place = [this](const torch::Tensor& x) {
      return x.defined() ? x.to(placement_.device, placement_.dtype) : x;
    };
    start.hidden = place(input.start_hidden);
    start.head_outputs = place(input.start_head_outputs);
    const RowPositions positions{input.layouts, input.draws};
    BertRunOutput out = module_->Run(input.input_ids, input.token_type_ids,
                                     input.attention_mask, masks, resolved,
                                     start, input.patch.get(), &positions);
    return ToTensorOutput(std::move(out));
  });
}

absl::StatusOr<torch::Tensor> Engine::CheckMaskTensor(
    const HeadMaskTensor& mask, int64_t rows) const {
  const BertConfig& config = model_.config();
  const torch::Tensor& m = mask.values;
  const int64_t layers = config.num_hidden_layers;
  const int64_t heads = config.num_attention_heads;
  if (!m.defined() || !m.is_floating_point() ||
      !(HasShape(m, {layers, heads}) || HasShape(m, {rows, layers, heads}))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mask must be a float [", layers, ", ", heads, "] or [B, ", layers,
        ", ", heads, "] tensor, got ", m.defined() ? Shape(m) : "undefined"));
  }
  if (ModeFillsByPosition(mask.mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a mask tensor in mode ", AblationModeName(mask.mode),
        ": only zero, uniform and mean have a gradient form here"));
  }
  if (mask.mode != AblationMode::kMean) return torch::Tensor();
  if (mask.reference == nullptr || mask.reference->tensors == nullptr ||
      !HasShape(mask.reference->tensors->mean,
                {layers, heads, config.hidden_size / heads})) {
    return absl::InvalidArgumentError(
        "a mask tensor in mode mean needs reference statistics of this "
        "model's shape");
  }
  // Statistics are computed under InferenceMode; autograd cannot save an
  // inference tensor, but a copy made here ([L, H, d], small) it can.
  return mask.reference->tensors->mean.clone();
}

absl::StatusOr<TensorOutput> Engine::RunWithGrad(
    const ModelInput& input, const HeadMaskTensor& mask,
    const EngineOptions& options) const {
  if (c10::InferenceMode::is_enabled()) {
    return absl::FailedPreconditionError(
        "RunWithGrad under InferenceMode: no autograd graph is recorded");
  }
  if (options.start_layer != 0 || !options.capture_hidden.empty()) {
    return absl::InvalidArgumentError(
        "RunWithGrad runs from the embeddings (no start_layer or "
        "capture_hidden)");
  }
  const int64_t b = input.input_ids.defined() && input.input_ids.dim() == 2
                        ? input.input_ids.size(0)
                        : -1;
  ASSIGN_OR_RETURN(const torch::Tensor mean, CheckMaskTensor(mask, b));
  return CatchTorchWithGrad([&]() -> absl::StatusOr<TensorOutput> {
    const EngineOptions resolved = Resolved(options);
    RETURN_IF_ERROR(CheckRun(input, {}, resolved));
    const torch::Tensor values = mask.values.to(placement_.device);
    const BatchHeadMask head_mask =
        TensorHeadMask(values, mask.mode, mean,
                       module_->mask_shape(input.input_ids), placement_.dtype);
    BertRunOutput out =
        module_->RunUnder(input.input_ids, input.token_type_ids,
                          input.attention_mask, head_mask, resolved);
    return ToTensorOutput(std::move(out));
  });
}

absl::StatusOr<TensorOutput> Engine::RunWithGrad(
    const ModelInput& input, const std::vector<const HeadMask*>& masks,
    const EngineOptions& options) const {
  if (c10::InferenceMode::is_enabled()) {
    return absl::FailedPreconditionError(
        "RunWithGrad under InferenceMode: no autograd graph is recorded");
  }
  return CatchTorchWithGrad([&]() -> absl::StatusOr<TensorOutput> {
    EngineOptions resolved = Resolved(options);
    resolved.pack_tokens = false;  // captures must be the tensors used
    RETURN_IF_ERROR(CheckRun(input, masks, resolved));
    LayerStart start;
    if (input.start_hidden.defined()) {
      start.hidden = input.start_hidden.to(placement_.device, placement_.dtype);
    }
    const RowPositions positions{input.layouts, input.draws};
    BertRunOutput out = module_->Run(input.input_ids, input.token_type_ids,
                                     input.attention_mask, masks, resolved,
                                     start, nullptr, &positions);
    TensorOutput result;
    result.logits = out.logits.defined()
                        ? out.logits.to(torch::kCPU, torch::kFloat)
                        : out.logits;
    result.attentions = std::move(out.attentions);
    result.hidden = std::move(out.hidden);
    result.head_outputs = std::move(out.head_outputs);
    return result;
  });
}

absl::StatusOr<torch::Tensor> Engine::WordEmbeddings(
    const torch::Tensor& input_ids) const {
  if (!input_ids.defined() || input_ids.dim() != 2 ||
      input_ids.scalar_type() != torch::kLong || input_ids.numel() == 0) {
    return absl::InvalidArgumentError("input_ids must be [B, T] int64");
  }
  // Not under InferenceMode: the copy must be a normal tensor, which
  // autograd can save for backward; no grad: it is no parameter's.
  return CatchTorchWithGrad([&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    const torch::Tensor& table = module_->bert->embeddings->word_table();
    RETURN_IF_ERROR(CheckRange(input_ids, table.size(0), "input_ids"));
    return table.index_select(0, input_ids.reshape({-1}).to(table.device()))
        .view({input_ids.size(0), input_ids.size(1), table.size(1)})
        .to(placement_.dtype)
        .clone();
  });
}

absl::StatusOr<torch::Tensor> Engine::EmbedWords(
    const torch::Tensor& words, const ModelInput& input) const {
  const BertConfig& config = model_.config();
  const int64_t e = config.embedding_size;
  if (!words.defined() || words.dim() != 3 || words.size(2) != e ||
      !words.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("words must be float [B, T, ", e, "], got ",
                     words.defined() ? Shape(words) : "undefined"));
  }
  const torch::Tensor& types = input.token_type_ids;
  const torch::Tensor& ids = input.input_ids;
  if (!types.defined() || !HasShape(types, {words.size(0), words.size(1)}) ||
      !ids.defined() || !HasShape(ids, {words.size(0), words.size(1)})) {
    return absl::InvalidArgumentError(
        "input_ids and token_type_ids must be [B, T] as words' first two "
        "dimensions");
  }
  if (words.size(1) > config.max_input_tokens()) {
    return absl::InvalidArgumentError("words are longer than the positions");
  }
  return CatchTorchWithGrad([&]() -> absl::StatusOr<torch::Tensor> {
    RETURN_IF_ERROR(CheckRange(types, TokenTypes(config), "token_type_ids"));
    return module_->bert->embeddings->forward_words(
        words.to(placement_.device, placement_.dtype),
        ids.to(placement_.device), types.to(placement_.device));
  });
}

}  // namespace bertology
