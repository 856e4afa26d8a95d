// HeadImportance and PruneCurve: validation and stream events around the
// core's ComputeHeadImportance and RunPruneCurve (server/core/importance/),
// which take gradients with respect to a head mask through the model's own
// modules (Michel et al. 2019; HF run_bertology.py).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/importance/importance.h"
#include "server/core/model/model.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/handlers/labeled_examples.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

ImportanceOptions ToOptions(const v1::ImportanceOptions& proto,
                            const ServiceLimits& limits) {
  ImportanceOptions options;
  options.layer_norm = !proto.no_layer_norm();
  options.global_norm = !proto.no_global_norm();
  options.max_batch_rows = limits.max_batch_size;
  return options;
}

void FillResult(const ImportanceResult& r, v1::HeadImportanceResult* out) {
  out->set_num_layers(r.layers);
  out->set_num_heads(r.heads);
  for (double v : r.importance) out->add_importance(v);
  for (double v : r.raw) out->add_raw_importance(v);
  out->set_examples(r.examples);
  out->set_scored(r.scored);
  out->set_correct(r.correct);
  out->set_accuracy(r.accuracy);
  out->set_loss_sum(r.loss_sum);
}

void FillStep(const PruneStep& s, v1::PruneStep* out) {
  out->set_step(s.step);
  out->set_heads_left(s.heads_left);
  out->set_accuracy(s.scores.accuracy);
  out->set_loss_sum(s.scores.loss_sum);
  FillLayerHeads(s.masked, out->mutable_masked());
  FillLayerHeads(s.masked_this_step, out->mutable_masked_this_step());
}

}  // namespace

absl::Status HandleHeadImportance(
    const HandlerContext& ctx, const v1::HeadImportanceRequest& request,
    const EventStream<v1::HeadImportanceResponse>& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  RETURN_IF_ERROR(model.CheckCanClassify());
  RETURN_IF_ERROR(
      CheckInputCount(*ctx.limits, request.examples_size(), "examples"));
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(
      HeadMask mask,
      ParseHeadMask(request.head_mask(), c.num_hidden_layers,
                    c.num_attention_heads, AblationMode::kZero, "head_mask",
                    MaskReferences{served->references.get()}));
  // Mean mode: the gradient of o' = m o + (1 - m) mean with respect to m.
  // Resample's draws have no such form.
  if (ModeFillsByPosition(mask.mode())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "head_mask.mode=", AblationModeName(mask.mode()),
        ": HeadImportance takes a mask in mode zero, uniform or mean"));
  }
  if (mask.mode() == AblationMode::kMean && mask.reference() == nullptr) {
    // Only an identity mask naming none gets here; its gradient still
    // points toward the means, so it needs them too.
    return RequireStatistics(*served->references,
                             request.head_mask().statistics(),
                             "head_mask.statistics", AblationMode::kMean)
        .status();
  }
  ASSIGN_OR_RETURN(
      const std::vector<SweepExample> examples,
      EncodeLabeledExamples(*ctx.limits, *served, request.examples(), nullptr));
  StreamingCall<v1::HeadImportanceResponse> call(stream);
  ImportanceCallbacks callbacks;
  callbacks.on_progress = [&](int64_t done, int64_t total) {
    call.Progress(done, total);
  };
  callbacks.is_cancelled = [&] { return call.Cancelled(); };
  absl::StatusOr<ImportanceResult> result = ComputeHeadImportance(
      model, examples, mask, ToOptions(request.options(), *ctx.limits),
      callbacks);
  if (!result.ok()) return call.Finish(result.status());
  v1::HeadImportanceResponse event;
  FillResult(*result, event.mutable_result());
  call.Write(event);
  return call.Finish(absl::OkStatus());
}

absl::Status HandlePruneCurve(
    const HandlerContext& ctx, const v1::PruneCurveRequest& request,
    const EventStream<v1::PruneCurveResponse>& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  RETURN_IF_ERROR(model.CheckCanClassify());
  RETURN_IF_ERROR(
      CheckInputCount(*ctx.limits, request.examples_size(), "examples"));
  PruneOptions options;
  // 0 (unset) means the default; anything else must be in (0, 1]
  // (RunPruneCurve refuses it, naming the field, before any pass).
  if (request.threshold() != 0) options.threshold = request.threshold();
  if (request.step_fraction() != 0) {
    options.step_fraction = request.step_fraction();
  }
  ASSIGN_OR_RETURN(
      options.mode,
      ParseAblationMode(request.mode(), AblationMode::kZero, "mode"));
  if (ModeFillsByPosition(options.mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mode=", AblationModeName(options.mode),
                     ": PruneCurve masks heads in mode zero, uniform or mean"));
  }
  if (options.mode == AblationMode::kMean) {
    ASSIGN_OR_RETURN(
        options.reference,
        RequireStatistics(*served->references, request.statistics(),
                          "statistics", AblationMode::kMean));
  }
  options.importance = ToOptions(request.options(), *ctx.limits);
  ASSIGN_OR_RETURN(
      const std::vector<SweepExample> examples,
      EncodeLabeledExamples(*ctx.limits, *served, request.examples(), nullptr));
  StreamingCall<v1::PruneCurveResponse> call(stream);
  std::vector<PruneStep> steps;
  PruneCallbacks callbacks;
  callbacks.on_step = [&](const PruneStep& s) {
    steps.push_back(s);
    v1::PruneCurveResponse event;
    FillStep(s, event.mutable_step());
    call.Write(event);
  };
  callbacks.on_progress = [&](int64_t done, int64_t total) {
    call.Progress(done, total);
  };
  callbacks.is_cancelled = [&] { return call.Cancelled(); };
  absl::StatusOr<int> kept = RunPruneCurve(model, examples, options, callbacks);
  if (!kept.ok()) return call.Finish(kept.status());
  v1::PruneCurveResponse event;
  FillStep(steps.at(*kept), event.mutable_kept());
  call.Write(event);
  return call.Finish(absl::OkStatus());
}

}  // namespace bertology
