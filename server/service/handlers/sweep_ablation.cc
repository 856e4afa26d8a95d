// SweepAblation: many masks over one labelled example set, streamed. The
// SweepExecutor does the work (baseline once, masked passes from the cached
// unmasked prefix); this handler validates, plans, and turns its callbacks
// into stream events with deltas against the baseline.
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/intervals.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/core/sweep/sweep.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/convert/sweep_masks.h"
#include "server/service/handlers/handlers.h"
#include "server/service/handlers/labeled_examples.h"
#include "server/service/handlers/reference_sets.h"
#include "server/service/metrics/metrics.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/row_budget.h"

namespace bertology {
namespace {

constexpr int kMaxSweepBatchRows = 4096;
void FillPairedSums(const PairedSums& sums, v1::PairedSums* out) {
  out->set_clusters(sums.clusters);
  out->set_units(sums.units);
  out->set_units_sq(sums.units_sq);
  out->set_diff(sums.diff);
  out->set_diff_sq(sums.diff_sq);
  out->set_units_diff(sums.units_diff);
}

void FillResult(const MaskResult& r, const MaskResult& baseline,
                v1::MaskResult* out) {
  out->set_examples(r.examples);
  out->set_scored(r.scored);
  out->set_correct(r.correct);
  out->set_loss_sum(r.loss_sum);
  out->set_accuracy(r.accuracy);
  out->set_accuracy_delta(r.accuracy - baseline.accuracy);
  // Unset at a zero baseline: no ratio exists, and 0 would say "no change".
  if (baseline.accuracy > 0) {
    out->set_relative_change_percent((r.accuracy / baseline.accuracy - 1.0) *
                                     100.0);
  }
  // Per scored unit (example, or labelled token).
  const double mean = r.scored > 0 ? r.loss_sum / r.scored : 0.0;
  const double base_mean =
      baseline.scored > 0 ? baseline.loss_sum / baseline.scored : 0.0;
  out->set_mean_loss_delta(mean - base_mean);
  // Intervals (common/intervals.h): accuracy over one draw's units; the
  // change paired with the baseline, example by example.
  const double draws = std::max(1, r.draws);
  const Interval accuracy = WilsonInterval(r.correct / draws, r.scored / draws);
  out->mutable_accuracy_ci()->set_low(accuracy.low);
  out->mutable_accuracy_ci()->set_high(accuracy.high);
  out->set_draws(r.draws);
  for (int64_t c : r.draw_correct) out->add_draw_correct(c);
  FillPairedSums(r.paired, out->mutable_paired());
  if (r.mask_index < 0) return;  // the baseline: no change to bound
  if (const std::optional<Interval> delta = PairedDeltaInterval(r.paired)) {
    out->mutable_accuracy_delta_ci()->set_low(delta->low);
    out->mutable_accuracy_delta_ci()->set_high(delta->high);
    out->set_delta_distinguishable(delta->ExcludesZero());
  }
}

// A validated sweep request: encoded examples and expanded masks.
struct PlannedSweep {
  std::vector<SweepExample> examples;
  std::vector<SweepMask> masks;
  int truncated = 0;       // examples cut to the model's length
  int max_batch_rows = 0;  // 0: the server default
  // Forward-pass rows: one per (mask, example), a resample mask's once per
  // draw, and the baseline's.
  int64_t total_pairs() const {
    int64_t per_example = 1;
    for (const SweepMask& m : masks) {
      per_example +=
          m.mask.mode() == AblationMode::kResample && !m.mask.IsIdentity()
              ? std::max(1, m.mask.draws().count)
              : 1;
    }
    return per_example * static_cast<int64_t>(examples.size());
  }
};

// Checks the request against the model and the limits (errors name the
// field), tokenizes the examples and expands the mask specs.
absl::StatusOr<PlannedSweep> PlanSweep(
    const HandlerContext& ctx, const ServedModel& served,
    const v1::SweepAblationRequest& request) {
  const ServiceLimits& limits = *ctx.limits;
  const Model& model = *served.model;
  RETURN_IF_ERROR(model.CheckCanClassify());
  RETURN_IF_ERROR(CheckInputCount(limits, request.examples_size(), "examples"));
  PlannedSweep plan;
  plan.max_batch_rows = request.options().max_batch_rows();
  if (plan.max_batch_rows < 0 || plan.max_batch_rows > kMaxSweepBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_batch_rows=", plan.max_batch_rows,
                     " is not in [0, ", kMaxSweepBatchRows, "]"));
  }
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(
      AblationMode mode,
      ParseAblationMode(request.mode(), AblationMode::kZero, "mode"));
  ASSIGN_OR_RETURN(plan.examples,
                   EncodeLabeledExamples(limits, served, request.examples(),
                                         &plan.truncated));
  SweepMaskOptions mask_options;
  mask_options.layers = c.num_hidden_layers;
  mask_options.heads = c.num_attention_heads;
  mask_options.mode = mode;
  mask_options.max_masks = limits.max_masks_per_sweep;
  // The sweep's own statistics, for masks in MEAN / RESAMPLE that name none:
  // from `reference` (found by digest, or computed now and held) or by id.
  mask_options.references.store = served.references.get();
  ASSIGN_OR_RETURN(mask_options.references.fallback_draws,
                   ParseResampleDraws(request.resample(), "resample"));
  if (!request.reference().empty()) {
    ASSIGN_OR_RETURN(
        const ObtainedReference obtained,
        ObtainReference(ctx, served, request.reference(), "reference"));
    mask_options.references.fallback = obtained.reference;
  } else if (!request.statistics().empty()) {
    ASSIGN_OR_RETURN(
        mask_options.references.fallback,
        served.references->Find(request.statistics(), "statistics"));
  }
  mask_options.references.allow_resample = true;
  ASSIGN_OR_RETURN(plan.masks, ExpandMaskSpecs(request.masks(), mask_options));
  return plan;
}

// Turns the executor's callbacks into stream events (results as deltas
// against the baseline) and metrics. Lives as long as the call.
class SweepEvents {
 public:
  SweepEvents(const HandlerContext& ctx, const std::string& model,
              const PlannedSweep& plan, const SweepStream& stream)
      : ctx_(ctx),
        model_(model),
        plan_(plan),
        call_(stream),
        // This call's share of the gauges of running sweeps; taken back
        // when it goes out of scope, however the handler ends.
        metrics_(ctx.metrics->StartSweep(model, plan.total_pairs())) {}

  void WritePlan() {
    v1::SweepAblationResponse event;
    v1::SweepPlan* out = event.mutable_plan();
    out->set_num_masks(static_cast<int>(plan_.masks.size()));
    out->set_num_examples(static_cast<int>(plan_.examples.size()));
    out->set_total_pairs(plan_.total_pairs());
    out->set_truncated_examples(plan_.truncated);
    call_.Write(event);
  }

  SweepCallbacks Callbacks() {
    SweepCallbacks callbacks;
    callbacks.on_baseline = [this](const MaskResult& r) { OnBaseline(r); };
    callbacks.on_result = [this](const MaskResult& r) { OnResult(r); };
    callbacks.on_progress = [this](int64_t done, int64_t total) {
      OnProgress(done, total);
    };
    callbacks.is_cancelled = [this] { return call_.Cancelled(); };
    callbacks.on_batch_split = [this] { ctx_.metrics->AddBatchSplit(model_); };
    return callbacks;
  }

  // The call's status from the executor's, counting unscored pairs as
  // abandoned in the metrics.
  absl::Status Finish(absl::Status status) {
    if (status.ok()) {
      status = call_.Finish(status);
    } else if (absl::IsCancelled(status)) {
      status = absl::CancelledError(
          absl::StrCat("sweep cancelled after ", reported_done_, " of ",
                       plan_.total_pairs(), " pairs"));
    }
    metrics_->Finish(status);
    return status;
  }

 private:
  void OnBaseline(const MaskResult& r) {
    baseline_ = r;
    v1::SweepAblationResponse event;
    v1::MaskResult* out = event.mutable_baseline();
    out->set_mask_index(-1);
    out->set_mask_id("baseline");
    out->set_spec("no mask");
    FillResult(r, r, out);
    call_.Write(event);
  }

  void OnResult(const MaskResult& r) {
    const SweepMask& m = plan_.masks.at(r.mask_index);
    v1::SweepAblationResponse event;
    v1::MaskResult* out = event.mutable_result();
    out->set_mask_index(r.mask_index);
    out->set_mask_id(m.id);
    out->set_spec(m.spec);
    FillLayerHeads(m.mask.AffectedHeads(), out->mutable_ablated());
    FillResult(r, baseline_, out);
    call_.Write(event);
    ctx_.metrics->AddMasks(model_, 1);
  }

  void OnProgress(int64_t done, int64_t total) {
    metrics_->AddScored(done - reported_done_);
    reported_done_ = done;
    call_.Progress(done, total);
  }

  const HandlerContext& ctx_;
  const std::string model_;
  const PlannedSweep& plan_;
  StreamingCall<v1::SweepAblationResponse> call_;
  std::unique_ptr<ServiceMetrics::SweepRecorder> metrics_;
  // Touched only from the executor's callbacks, one at a time.
  MaskResult baseline_;
  int64_t reported_done_ = 0;
};

// The sweep's cache of hidden states (up to --sweep_cache_mb) has been freed
// into malloc's arenas, where glibc keeps it (it trims only the top of the
// main heap): hand the free pages back to the kernel, so a finished or
// cancelled sweep does not leave the replica's resident memory at its peak.
void ReleaseFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

absl::Status HandleSweepAblation(const HandlerContext& ctx,
                                 const v1::SweepAblationRequest& request,
                                 const SweepStream& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  if (!request.model_identity().empty()) {
    const std::string identity = served->identity();
    if (request.model_identity() != identity) {
      return ModelIdentityMismatchError(served->name, identity,
                                        request.model_identity());
    }
  }
  ASSIGN_OR_RETURN(const PlannedSweep plan, PlanSweep(ctx, *served, request));
  SweepOptions options;
  options.workers = served->sweep_workers;
  RowBudget::Lease admitted;
  if (served->device_sweeps != nullptr) {
    // A GPU: admission by sweeps on the device (--max_sweeps_per_device);
    // rows per pass up to the request's max_batch_rows (0:
    // kMaxSweepBatchRows) as far as the device memory free now, shared by
    // those sweeps, allows. A tenth is kept back for what the estimate
    // misses (cuBLAS workspaces, the cached baseline, another model).
    ASSIGN_OR_RETURN(admitted, served->device_sweeps->Acquire(1));
    options.max_batch_rows =
        plan.max_batch_rows > 0 ? plan.max_batch_rows : kMaxSweepBatchRows;
    ASSIGN_OR_RETURN(const int64_t free, served->model->FreeDeviceBytes());
    options.device_memory_bytes =
        free * 9 / 10 / served->device_sweeps->capacity();
  } else {
    options.max_batch_rows = plan.max_batch_rows > 0
                                 ? plan.max_batch_rows
                                 : ctx.limits->max_batch_size;
    // Admission: the sweep holds the rows of its forward passes (one batch
    // per worker) until it ends; over the model's budget it is refused now,
    // before any work.
    ASSIGN_OR_RETURN(admitted,
                     served->sweep_rows->Acquire(std::min<int64_t>(
                         int64_t{options.workers} * options.max_batch_rows,
                         plan.total_pairs())));
  }
  SweepEvents events(ctx, served->name, plan, stream);
  events.WritePlan();
  options.cache_budget_bytes = ctx.limits->sweep_cache_bytes;
  SweepExecutor executor(served->model.get(), options);
  absl::Status status =
      executor.Run(plan.examples, plan.masks, events.Callbacks());
  ReleaseFreedMemory();
  return events.Finish(std::move(status));
}

}  // namespace bertology
