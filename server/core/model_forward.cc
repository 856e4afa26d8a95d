// Model::Forward: validation at the service boundary, then one
// BertForSequenceClassificationImpl::Run under torch::InferenceMode.
#include <torch/torch.h>

#include <exception>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/bert_model.h"
#include "server/core/model.h"

namespace bertology {
namespace {

std::string Shape(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

bool HasShape(const torch::Tensor& t, std::vector<int64_t> shape) {
  return t.defined() && t.sizes().equals(shape);
}

// Layer indices as a per-layer bitmap of size `size`, each in [lo, hi).
absl::StatusOr<std::vector<bool>> LayerSet(const std::vector<int>& layers,
                                           int lo, int hi, int size,
                                           const char* field) {
  std::vector<bool> set(size, false);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < lo || layers[i] >= hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]=", layers[i], " out of range [", lo,
                       ", ", hi, ")"));
    }
    set[layers[i]] = true;
  }
  return set;
}

// Checks the mask values on the host and returns which layers it touches
// (empty when none: the pass then runs unmasked).
absl::StatusOr<std::vector<bool>> MaskedLayers(const torch::Tensor& head_mask) {
  torch::Tensor m = head_mask.to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t b = m.size(0), l = m.size(1), h = m.size(2);
  const float* v = m.data_ptr<float>();
  std::vector<bool> masked(l, false);
  bool any = false;
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = 0; j < h; ++j) {
        const float x = v[(r * l + i) * h + j];
        if (!(x >= 0.0f && x <= 1.0f)) {  // also catches NaN
          return absl::InvalidArgumentError(
              absl::StrCat("head_mask[", r, "][", i, "][", j, "]=", x,
                           " must be finite and in [0, 1] (row ", r,
                           ": a mask of the wrong shape?)"));
        }
        if (x != 1.0f) masked[i] = any = true;
      }
    }
  }
  if (!any) masked.clear();
  return masked;
}

}  // namespace

absl::StatusOr<ForwardOutput> Model::Forward(
    const ModelInput& input, const ForwardOptions& options) const {
  const int num_layers = config_.num_hidden_layers;
  const int num_heads = config_.num_attention_heads;
  if (options.compute_logits && !has_classifier_) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", dir_,
                     " has no classifier (a plain BertModel): Classify needs "
                     "BertForSequenceClassification"));
  }
  try {
    torch::InferenceMode inference_mode;
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
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence length ", t, " exceeds max_position_embeddings ",
          config_.max_position_embeddings));
    }
    // Out-of-range ids would be a device-side assert on CUDA: refuse here.
    auto check_range = [](const torch::Tensor& x, int64_t hi,
                          const char* field) -> absl::Status {
      const int64_t lo_v = x.min().item<int64_t>();
      const int64_t hi_v = x.max().item<int64_t>();
      if (lo_v < 0 || hi_v >= hi) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, " values must be in [0, ", hi, "), got [", lo_v,
                         ", ", hi_v, "]"));
      }
      return absl::OkStatus();
    };
    if (absl::Status s = check_range(ids, config_.vocab_size, "input_ids");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = check_range(input.token_type_ids,
                                     config_.type_vocab_size, "token_type_ids");
        !s.ok()) {
      return s;
    }

    BertRunOptions run;
    run.compute_logits = options.compute_logits;
    run.start_layer = options.start_layer;
    if (options.start_layer < 0 || options.start_layer > num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("start_layer=", options.start_layer,
                       " out of range [0, ", num_layers, "]"));
    }
    if (options.start_layer > 0) {
      if (!HasShape(options.start_hidden, {b, t, config_.hidden_size})) {
        return absl::InvalidArgumentError(absl::StrCat(
            "start_hidden must be [", b, ", ", t, ", ", config_.hidden_size,
            "] for start_layer=", options.start_layer, ", got ",
            options.start_hidden.defined() ? Shape(options.start_hidden)
                                           : "undefined"));
      }
      run.start_hidden = options.start_hidden.to(device_, scalar_type_);
    }
    auto attention = LayerSet(options.attention_layers, options.start_layer,
                              num_layers, num_layers, "attention_layers");
    if (!attention.ok()) return attention.status();
    run.attention_layers = *std::move(attention);
    auto capture = LayerSet(options.capture_hidden, options.start_layer,
                            num_layers + 1, num_layers + 1, "capture_hidden");
    if (!capture.ok()) return capture.status();
    run.capture_hidden = *std::move(capture);

    if (options.head_mask.defined()) {
      if (!HasShape(options.head_mask, {b, num_layers, num_heads})) {
        return absl::InvalidArgumentError(absl::StrCat(
            "head_mask must be [", b, ", ", num_layers, ", ", num_heads,
            "] (rows, layers, heads), got ", Shape(options.head_mask)));
      }
      auto masked = MaskedLayers(options.head_mask);
      if (!masked.ok()) return masked.status();
      if (!masked->empty()) {
        run.masked_layers = *std::move(masked);
        run.head_mask = options.head_mask.to(device_, scalar_type_);
      }
    }
    if (run.head_mask.defined() && options.uniform_rows.defined()) {
      if (!HasShape(options.uniform_rows, {b})) {
        return absl::InvalidArgumentError(
            absl::StrCat("uniform_rows must be [", b, "], got ",
                         Shape(options.uniform_rows)));
      }
      if (options.uniform_rows.ne(0).any().item<bool>()) {
        run.uniform_rows = options.uniform_rows.to(device_, scalar_type_);
      }
    }

    run.cls_only_last_layer = options.cls_only_last_layer;
    BertRunOutput out =
        module_->Run(ids, input.token_type_ids, input.attention_mask, run);
    ForwardOutput result;
    if (out.logits.defined()) {
      result.logits = out.logits.to(torch::kCPU, torch::kFloat);
    }
    for (auto& [layer, probs] : out.attentions) {
      result.attentions[layer] = probs.to(torch::kCPU, torch::kFloat);
    }
    result.hidden = std::move(out.hidden);
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("forward pass failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("forward pass failed: ", e.what()));
  }
}

}  // namespace bertology
