// Model::Forward and Model::ForwardTensors: validation at the boundary, then
// one BertForSequenceClassificationImpl::Run under torch::InferenceMode,
// which builds the head-mask tensors from the rows' HeadMasks.
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
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"
#include "server/core/model/model_tensors.h"

namespace bertology {
namespace {

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

// A float32 CPU copy of `t`, row-major.
FloatArray ToFloatArray(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kCPU, torch::kFloat).contiguous();
  FloatArray out;
  out.shape.assign(c.sizes().begin(), c.sizes().end());
  out.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return out;
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

ForwardOptions Model::Resolved(const ForwardOptions& options) const {
  ForwardOptions out = options;
  if (out.attention_kernel == AttentionKernel::kAuto) {
    out.attention_kernel = placement_->attention;
  }
  return out;
}

absl::Status Model::CheckCanClassify() const {
  if (has_classifier()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "model ", dir_, " is a ", head_.architecture,
      ": its encoder serves Tokenize and GetAttention, but Classify and "
      "SweepAblation need a sequence classifier (bert.pooler + classifier "
      "[labels, hidden], BertForSequenceClassification) or a token classifier "
      "(classifier [labels, hidden], BertForTokenClassification)"));
}

absl::Status Model::CheckStartHeadOutputs(
    const ModelInput& input, const std::vector<const HeadMask*>& masks,
    const ForwardOptions& options) const {
  const int64_t b = input.input_ids.size(0), t = input.input_ids.size(1);
  if (!input.start_hidden.defined() ||
      !HasShape(input.start_head_outputs, {b, t, config_.hidden_size})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_head_outputs must be [", b, ", ", t, ", ", config_.hidden_size,
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

absl::Status Model::CheckForward(const ModelInput& input,
                                 const std::vector<const HeadMask*>& masks,
                                 const ForwardOptions& options) const {
  const int num_layers = config_.num_hidden_layers;
  if (options.compute_logits) RETURN_IF_ERROR(CheckCanClassify());
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
  if (t > config_.max_position_embeddings) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence length ", t, " exceeds max_position_embeddings ",
                     config_.max_position_embeddings));
  }
  if (!input.ranges_checked) {
    RETURN_IF_ERROR(CheckRange(ids, config_.vocab_size, "input_ids"));
    RETURN_IF_ERROR(CheckRange(input.token_type_ids, config_.type_vocab_size,
                               "token_type_ids"));
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
  const std::vector<int64_t> hidden_shape = {b, t, config_.hidden_size};
  if ((options.start_layer > 0 || input.start_hidden.defined()) &&
      !HasShape(input.start_hidden, hidden_shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_hidden must be [", b, ", ", t, ", ", config_.hidden_size,
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
    const int64_t d = config_.hidden_size;
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
    RETURN_IF_ERROR(CheckHeadMask(*masks[r], field));
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

absl::StatusOr<ForwardOutput> Model::Forward(
    const std::vector<ModelRow>& rows, const ForwardOptions& options) const {
  if (options.start_layer != 0 || !options.capture_hidden.empty() ||
      !options.capture_head_outputs.empty()) {
    return absl::InvalidArgumentError(
        "start_layer, capture_hidden and capture_head_outputs work on "
        "tensors: use ForwardTensors");
  }
  std::vector<const Encoding*> encodings;
  std::vector<const HeadMask*> masks;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].encoding == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows[", r, "].encoding is null"));
    }
    encodings.push_back(rows[r].encoding);
    masks.push_back(rows[r].mask);
  }
  ASSIGN_OR_RETURN(ModelInput input, MakeBatch(encodings));
  for (const ModelRow& row : rows) input.draws.push_back(row.draw);
  return CatchTorch([&]() -> absl::StatusOr<ForwardOutput> {
    const ForwardOptions resolved = Resolved(options);
    RETURN_IF_ERROR(CheckForward(input, masks, resolved));
    const RowPositions positions{input.layouts, input.draws};
    BertRunOutput out = module_->Run(
        input.input_ids, input.token_type_ids, input.attention_mask, masks,
        resolved, LayerStart(), torch::Tensor(), AblationMode::kZero,
        /*patch=*/nullptr, torch::Tensor(), &positions);
    ForwardOutput result;
    if (out.logits.defined()) result.logits = ToFloatArray(out.logits);
    for (const auto& [layer, probs] : out.attentions) {
      result.attentions[layer] = ToFloatArray(probs);
    }
    return result;
  });
}

absl::StatusOr<TensorOutput> Model::ForwardTensors(
    const ModelInput& input, const std::vector<const HeadMask*>& masks,
    const ForwardOptions& options) const {
  return CatchTorch([&]() -> absl::StatusOr<TensorOutput> {
    const ForwardOptions resolved = Resolved(options);
    RETURN_IF_ERROR(CheckForward(input, masks, resolved));
    LayerStart start;
    auto place = [this](const torch::Tensor& x) {
      return x.defined() ? x.to(placement_->device, placement_->dtype) : x;
    };
    start.hidden = place(input.start_hidden);
    start.head_outputs = place(input.start_head_outputs);
    const RowPositions positions{input.layouts, input.draws};
    BertRunOutput out = module_->Run(
        input.input_ids, input.token_type_ids, input.attention_mask, masks,
        resolved, start, torch::Tensor(), AblationMode::kZero,
        input.patch.get(), torch::Tensor(), &positions);
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
  });
}

absl::StatusOr<TensorOutput> Model::ForwardWithGrad(
    const ModelInput& input, const HeadMaskTensor& mask,
    const ForwardOptions& options) const {
  if (c10::InferenceMode::is_enabled()) {
    return absl::FailedPreconditionError(
        "ForwardWithGrad under InferenceMode: no autograd graph is recorded");
  }
  if (options.start_layer != 0 || !options.capture_hidden.empty()) {
    return absl::InvalidArgumentError(
        "ForwardWithGrad runs from the embeddings (no start_layer or "
        "capture_hidden)");
  }
  const torch::Tensor& m = mask.values;
  const int64_t layers = config_.num_hidden_layers;
  const int64_t heads = config_.num_attention_heads;
  const int64_t b = input.input_ids.defined() && input.input_ids.dim() == 2
                        ? input.input_ids.size(0)
                        : -1;
  if (!m.defined() || !m.is_floating_point() ||
      !(HasShape(m, {layers, heads}) || HasShape(m, {b, layers, heads}))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mask must be a float [", layers, ", ", heads, "] or [B, ", layers,
        ", ", heads, "] tensor, got ", m.defined() ? Shape(m) : "undefined"));
  }
  if (ModeFillsByPosition(mask.mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a mask tensor in mode ", AblationModeName(mask.mode),
        ": only zero, uniform and mean have a gradient form here"));
  }
  torch::Tensor fill;
  if (mask.mode == AblationMode::kMean) {
    if (mask.reference == nullptr ||
        !HasShape(mask.reference->mean,
                  {layers, heads, config_.hidden_size / heads})) {
      return absl::InvalidArgumentError(
          "a mask tensor in mode mean needs reference statistics of this "
          "model's shape");
    }
    // Statistics are computed under InferenceMode; autograd cannot save an
    // inference tensor, but a copy made here ([L, H, d], small) it can.
    fill = mask.reference->mean.clone();
  }
  return CatchTorchWithGrad([&]() -> absl::StatusOr<TensorOutput> {
    const ForwardOptions resolved = Resolved(options);
    RETURN_IF_ERROR(CheckForward(input, {}, resolved));
    BertRunOutput out = module_->Run(
        input.input_ids, input.token_type_ids, input.attention_mask, {},
        resolved, LayerStart(), m.to(placement_->device), mask.mode,
        /*patch=*/nullptr, fill);
    TensorOutput result;
    if (out.logits.defined()) {
      result.logits = out.logits.to(torch::kCPU, torch::kFloat);
    }
    for (auto& [layer, probs] : out.attentions) {
      result.attentions[layer] = probs.to(torch::kCPU, torch::kFloat);
    }
    return result;
  });
}

}  // namespace bertology
