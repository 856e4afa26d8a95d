#include "server/core/patch/patching.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/engine.h"

namespace bertology {

// The target input and the source's activations, on the model's device.
struct ActivationPatcher::Cache {
  const Encoding* target = nullptr;
  // [L + 1, T, D]: the target's input hidden state of every layer.
  torch::Tensor target_inputs;
  std::shared_ptr<const ActivationPatch> source;  // row_sites empty
  ModelInput target_batch;                        // the target alone, [1, T]
};

ActivationPatcher::ActivationPatcher(const Model& model,
                                     std::unique_ptr<Cache> cache)
    : model_(model), cache_(std::move(cache)) {}
ActivationPatcher::~ActivationPatcher() = default;

namespace {

std::vector<float> Row(const torch::Tensor& logits, int64_t r) {
  const torch::Tensor row =
      logits[r].to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(row.data_ptr<float>(),
                            row.data_ptr<float>() + row.numel());
}

template <typename Fn>
auto CatchTorch(const char* what, Fn fn) -> decltype(fn()) {
  try {
    torch::InferenceMode inference_mode;
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(what, " failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, " failed: ", e.what()));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ActivationPatcher>> ActivationPatcher::Create(
    const Model& model, const Encoding& clean, const Encoding& corrupted,
    PatchDirection direction) {
  if (model.head_kind() != HeadKind::kSequenceClassification) {
    return absl::FailedPreconditionError(
        absl::StrCat("Patch scores a sequence classifier's logits; model ",
                     model.dir(), " is a ", model.architecture()));
  }
  if (clean.tokens.size() != corrupted.tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "clean has ", clean.tokens.size(), " tokens and corrupted has ",
        corrupted.tokens.size(),
        "; patching aligns positions one to one, so both must tokenize to "
        "the same length"));
  }
  const int layers = model.config().num_hidden_layers;
  ASSIGN_OR_RETURN(ModelInput both,
                   model.engine().MakeBatch({&clean, &corrupted}));
  EngineOptions options;
  for (int l = 0; l < layers; ++l) options.capture_head_outputs.push_back(l);
  for (int l = 0; l <= layers; ++l) options.capture_hidden.push_back(l);
  ASSIGN_OR_RETURN(TensorOutput out, model.engine().Run(both, {}, options));
  const bool into_corrupted = direction == PatchDirection::kCleanIntoCorrupted;
  const int64_t source_row = into_corrupted ? 0 : 1;
  auto cache = std::make_unique<Cache>();
  cache->target = into_corrupted ? &corrupted : &clean;
  RETURN_IF_ERROR(CatchTorch("the patching source run", [&]() -> absl::Status {
    std::vector<torch::Tensor> outputs, source_inputs, target_inputs;
    for (int l = 0; l < layers; ++l) {
      outputs.push_back(out.head_outputs.at(l)[source_row]);
    }
    for (int l = 0; l <= layers; ++l) {
      source_inputs.push_back(out.hidden.at(l)[source_row]);
      target_inputs.push_back(out.hidden.at(l)[1 - source_row]);
    }
    auto source = std::make_shared<ActivationPatch>();
    source->head_outputs = torch::stack(outputs);
    source->layer_inputs = torch::stack(source_inputs);
    cache->source = std::move(source);
    cache->target_inputs = torch::stack(target_inputs);
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(cache->target_batch,
                   model.engine().MakeBatch({cache->target}));
  std::unique_ptr<ActivationPatcher> patcher(
      new ActivationPatcher(model, std::move(cache)));
  patcher->clean_logits_ = Row(out.logits, 0);
  patcher->corrupted_logits_ = Row(out.logits, 1);
  patcher->num_tokens_ = static_cast<int>(clean.tokens.size());
  return patcher;
}

absl::Status CheckPatchSite(const BertConfig& config, int tokens,
                            const PatchSite& site, const std::string& field) {
  const int layers = config.num_hidden_layers;
  const int heads = config.num_attention_heads;
  const int max_layer =
      site.kind == PatchSite::Kind::kResidual ? layers + 1 : layers;
  if (site.layer < 0 || site.layer >= max_layer) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".layer=", site.layer, " out of range [0, ", max_layer, ")"));
  }
  if (site.kind == PatchSite::Kind::kHead &&
      (site.head < 0 || site.head >= heads)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".head=", site.head, " out of range [0, ", heads, ")"));
  }
  if (site.position < -1 || site.position >= tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".position=", site.position, " out of range [0, ",
                     tokens, ") (the inputs' tokens)"));
  }
  return absl::OkStatus();
}

absl::Status ActivationPatcher::CheckSite(const PatchSite& site,
                                          const std::string& field) const {
  return CheckPatchSite(model_.config(), num_tokens_, site, field);
}

absl::StatusOr<std::vector<std::vector<float>>> ActivationPatcher::Run(
    const std::vector<std::vector<PatchSite>>& rows) const {
  if (rows.empty()) return std::vector<std::vector<float>>{};
  const int layers = model_.config().num_hidden_layers;
  // Rows start at the lowest layer any of them touches: below it every row
  // computes the target's unpatched values, cached by Create.
  int start = layers;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < rows[r].size(); ++i) {
      RETURN_IF_ERROR(
          CheckSite(rows[r][i], absl::StrCat("rows[", r, "][", i, "]")));
      start = std::min(start, rows[r][i].layer);
    }
  }
  const int64_t b = static_cast<int64_t>(rows.size());
  ModelInput input;
  RETURN_IF_ERROR(CatchTorch("patching", [&]() -> absl::Status {
    const ModelInput& one = cache_->target_batch;
    input.input_ids = one.input_ids.expand({b, -1});
    input.token_type_ids = one.token_type_ids.expand({b, -1});
    input.attention_mask = one.attention_mask.expand({b, -1});
    if (start > 0) {
      input.start_hidden =
          cache_->target_inputs[start].unsqueeze(0).expand({b, -1, -1});
    }
    auto patch = std::make_shared<ActivationPatch>(*cache_->source);
    patch->row_sites = rows;
    input.patch = std::move(patch);
    return absl::OkStatus();
  }));
  EngineOptions options;
  options.start_layer = start;
  ASSIGN_OR_RETURN(TensorOutput out, model_.engine().Run(input, {}, options));
  std::vector<std::vector<float>> logits;
  logits.reserve(rows.size());
  for (int64_t r = 0; r < b; ++r) logits.push_back(Row(out.logits, r));
  return logits;
}

}  // namespace bertology
