#include "server/core/patch/attribution_patching.h"

#include <torch/torch.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/engine.h"

namespace bertology {
namespace {

absl::Status CheckInputs(const Model& model, const Encoding& clean,
                         const Encoding& corrupted, int answer, int foil,
                         const std::vector<PatchSite>& sites) {
  if (model.head_kind() != HeadKind::kSequenceClassification) {
    return absl::FailedPreconditionError(
        "attribution patching reads a sequence classifier's logits");
  }
  if (clean.tokens.size() != corrupted.tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "clean has ", clean.tokens.size(), " tokens and corrupted has ",
        corrupted.tokens.size(), ": patching aligns positions one to one"));
  }
  const int classes = model.num_labels();
  if (answer < 0 || answer >= classes || foil < 0 || foil >= classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "answer=", answer, ", foil=", foil, ": not in [0, ", classes, ")"));
  }
  const int tokens = static_cast<int>(clean.tokens.size());
  for (size_t i = 0; i < sites.size(); ++i) {
    RETURN_IF_ERROR(CheckPatchSite(model.config(), tokens, sites[i],
                                   absl::StrCat("sites[", i, "]")));
  }
  return absl::OkStatus();
}

// (a_source - a_target) * d ld / d a for one captured activation [T, D],
// float64 on the CPU.
torch::Tensor Contribution(const torch::Tensor& captured,
                           const torch::Tensor& grad, int64_t source,
                           int64_t target) {
  const torch::Tensor a = captured.detach().to(torch::kCPU, torch::kDouble);
  return (a[source] - a[target]) * grad[target].to(torch::kCPU, torch::kDouble);
}

absl::StatusOr<PatchEstimates> Estimate(const Model& model,
                                        const Encoding& clean,
                                        const Encoding& corrupted,
                                        PatchDirection direction, int answer,
                                        int foil,
                                        const std::vector<PatchSite>& sites) {
  const Engine& engine = model.engine();
  const int layers = model.config().num_hidden_layers;
  const int64_t head_size =
      model.config().hidden_size / model.config().num_attention_heads;
  ASSIGN_OR_RETURN(ModelInput input, engine.MakeBatch({&clean, &corrupted}));
  const int64_t target =
      direction == PatchDirection::kCleanIntoCorrupted ? 1 : 0;
  const int64_t source = 1 - target;
  EngineOptions options;
  for (int l = 0; l <= layers; ++l) options.capture_hidden.push_back(l);
  for (int l = 0; l < layers; ++l) options.capture_head_outputs.push_back(l);
  torch::AutoGradMode grad_mode(true);
  ASSIGN_OR_RETURN(
      TensorOutput out,
      engine.RunWithGrad(input, std::vector<const HeadMask*>{}, options));
  const torch::Tensor ld = out.logits.to(torch::kDouble).select(1, answer) -
                           out.logits.to(torch::kDouble).select(1, foil);
  PatchEstimates result;
  result.target_logit_diff = ld[target].item<double>();
  result.source_logit_diff = ld[source].item<double>();
  std::vector<torch::Tensor> captured;
  for (int l = 0; l <= layers; ++l) captured.push_back(out.hidden.at(l));
  for (int l = 0; l < layers; ++l) captured.push_back(out.head_outputs.at(l));
  // The source row's ld has no path to the target row's activations: the
  // target row's gradients are those of its own ld.
  const auto grads = torch::autograd::grad({ld[target]}, captured, {},
                                           /*retain_graph=*/false,
                                           /*create_graph=*/false,
                                           /*allow_unused=*/true);
  // Per entry products, summed over what a site spans: residual [L+1][T],
  // heads [L][T, H].
  std::vector<torch::Tensor> residual, head;
  for (int l = 0; l <= layers; ++l) {
    const torch::Tensor g =
        grads[l].defined() ? grads[l] : torch::zeros_like(captured[l]);
    residual.push_back(Contribution(captured[l], g, source, target).sum(-1));
  }
  for (int l = 0; l < layers; ++l) {
    const torch::Tensor& a = captured[layers + 1 + l];
    const torch::Tensor& gg = grads[layers + 1 + l];
    const torch::Tensor g = gg.defined() ? gg : torch::zeros_like(a);
    const torch::Tensor c = Contribution(a, g, source, target);
    head.push_back(c.view({c.size(0), -1, head_size}).sum(-1));  // [T, H]
  }
  result.logit_diffs.reserve(sites.size());
  for (const PatchSite& s : sites) {
    torch::Tensor part = s.kind == PatchSite::Kind::kResidual
                             ? residual[s.layer]
                             : head[s.layer].select(1, s.head);
    if (s.position >= 0) part = part[s.position];
    result.logit_diffs.push_back(result.target_logit_diff +
                                 part.sum().item<double>());
  }
  return result;
}

}  // namespace

absl::StatusOr<PatchEstimates> EstimatePatchEffects(
    const Model& model, const Encoding& clean, const Encoding& corrupted,
    PatchDirection direction, int answer, int foil,
    const std::vector<PatchSite>& sites) {
  RETURN_IF_ERROR(CheckInputs(model, clean, corrupted, answer, foil, sites));
  try {
    return Estimate(model, clean, corrupted, direction, answer, foil, sites);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("attribution patching failed: ",
                                            e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("attribution patching failed: ", e.what()));
  }
}

}  // namespace bertology
