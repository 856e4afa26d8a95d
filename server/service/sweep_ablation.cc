// SweepAblation: many masks over one labelled example set, streamed. The
// SweepExecutor does the work (baseline once, masked passes from the cached
// unmasked prefix); this handler validates, plans, and turns its callbacks
// into stream events with deltas against the baseline.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/core/model.h"
#include "server/core/status_macros.h"
#include "server/core/sweep.h"
#include "server/service/handlers.h"
#include "server/service/metrics.h"
#include "server/service/model_registry.h"
#include "server/service/proto_conversion.h"
#include "server/service/request_validation.h"
#include "server/service/sweep_masks.h"

namespace bertology {
namespace {

constexpr int kMaxSweepBatchRows = 4096;
constexpr absl::Duration kProgressInterval = absl::Milliseconds(100);

void FillResult(const MaskResult& r, const MaskResult& baseline,
                v1::MaskResult* out) {
  out->set_examples(r.examples);
  out->set_correct(r.correct);
  out->set_loss_sum(r.loss_sum);
  out->set_accuracy(r.accuracy);
  out->set_accuracy_delta(r.accuracy - baseline.accuracy);
  out->set_relative_change_percent(
      baseline.accuracy > 0 ? (r.accuracy / baseline.accuracy - 1.0) * 100.0
                            : 0.0);
  const double mean = r.examples > 0 ? r.loss_sum / r.examples : 0.0;
  const double base_mean =
      baseline.examples > 0 ? baseline.loss_sum / baseline.examples : 0.0;
  out->set_mean_loss_delta(mean - base_mean);
}

// Serialises writes from the executor's callbacks and remembers whether the
// client went away.
class EventWriter {
 public:
  explicit EventWriter(const SweepStream& stream) : stream_(stream) {}
  void Write(const v1::SweepAblationResponse& event) {
    absl::MutexLock lock(&mu_);
    if (failed_) return;
    if (!stream_.write(event)) failed_ = true;
  }
  bool failed() {
    absl::MutexLock lock(&mu_);
    return failed_;
  }

 private:
  const SweepStream& stream_;
  absl::Mutex mu_;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::Status HandleSweepAblation(const HandlerContext& ctx,
                                 const v1::SweepAblationRequest& request,
                                 const SweepStream& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  if (!model.has_classifier()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", served->name, " has no classifier head to score a sweep"));
  }
  const ServiceLimits& limits = *ctx.limits;
  if (request.examples().empty()) {
    return absl::InvalidArgumentError("examples is empty");
  }
  if (request.examples_size() > limits.max_examples_per_sweep) {
    return absl::ResourceExhaustedError(
        absl::StrCat("examples has ", request.examples_size(),
                     " entries, over the limit --max_examples_per_sweep=",
                     limits.max_examples_per_sweep));
  }
  const int rows = request.options().max_batch_rows();
  if (rows < 0 || rows > kMaxSweepBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_batch_rows=", rows, " is not in [0, ",
                     kMaxSweepBatchRows, "]"));
  }
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(
      AblationMode mode,
      ParseAblationMode(request.mode(), AblationMode::kZero, "mode"));
  const int num_labels = static_cast<int>(c.id2label.size());
  std::vector<SweepExample> examples;
  examples.reserve(request.examples_size());
  int truncated = 0;
  for (int i = 0; i < request.examples_size(); ++i) {
    const v1::LabeledExample& e = request.examples(i);
    if (e.label() < 0 || e.label() >= num_labels) {
      return absl::InvalidArgumentError(
          absl::StrCat("examples[", i, "].label=", e.label(),
                       " is outside the label set [0, ", num_labels, ")"));
    }
    ASSIGN_OR_RETURN(
        Encoding encoding,
        EncodeInput(model.tokenizer(), model.max_seq_len(), e.input(),
                    absl::StrCat("examples[", i, "].input"), limits));
    truncated += encoding.truncated ? 1 : 0;
    examples.push_back(SweepExample{std::move(encoding), e.label()});
  }
  SweepMaskOptions mask_options;
  mask_options.layers = c.num_hidden_layers;
  mask_options.heads = c.num_attention_heads;
  mask_options.mode = mode;
  mask_options.max_masks = limits.max_masks_per_sweep;
  ASSIGN_OR_RETURN(std::vector<SweepMask> masks,
                   ExpandMaskSpecs(request.masks(), mask_options));

  const int64_t total_pairs =
      static_cast<int64_t>(masks.size() + 1) * examples.size();
  EventWriter writer(stream);
  {
    v1::SweepAblationResponse event;
    v1::SweepPlan* plan = event.mutable_plan();
    plan->set_num_masks(static_cast<int>(masks.size()));
    plan->set_num_examples(static_cast<int>(examples.size()));
    plan->set_total_pairs(total_pairs);
    plan->set_truncated_examples(truncated);
    writer.Write(event);
  }
  // This call's share of the gauges of running sweeps; taken back when it
  // goes out of scope, however the handler ends.
  std::unique_ptr<ServiceMetrics::SweepRecorder> sweep_metrics =
      ctx.metrics->StartSweep(served->name, total_pairs);

  MaskResult baseline;
  int64_t reported_done = 0;
  absl::Time last_progress = absl::InfinitePast();
  SweepCallbacks callbacks;
  callbacks.on_baseline = [&](const MaskResult& r) {
    baseline = r;
    v1::SweepAblationResponse event;
    v1::MaskResult* out = event.mutable_baseline();
    out->set_mask_index(-1);
    out->set_mask_id("baseline");
    out->set_spec("no mask");
    FillResult(r, r, out);
    writer.Write(event);
  };
  callbacks.on_result = [&](const MaskResult& r) {
    const SweepMask& m = masks.at(r.mask_index);
    v1::SweepAblationResponse event;
    v1::MaskResult* out = event.mutable_result();
    out->set_mask_index(r.mask_index);
    out->set_mask_id(m.id);
    out->set_spec(m.spec);
    FillLayerHeads(m.mask.AffectedHeads(), out->mutable_ablated());
    FillResult(r, baseline, out);
    writer.Write(event);
    ctx.metrics->AddMasks(served->name, 1);
  };
  callbacks.on_progress = [&](int64_t done, int64_t total) {
    sweep_metrics->AddScored(done - reported_done);
    reported_done = done;
    const absl::Time now = absl::Now();
    if (done < total && now - last_progress < kProgressInterval) return;
    last_progress = now;
    v1::SweepAblationResponse event;
    event.mutable_progress()->set_done(done);
    event.mutable_progress()->set_total(total);
    writer.Write(event);
  };
  callbacks.is_cancelled = [&] {
    return writer.failed() || (stream.is_cancelled && stream.is_cancelled());
  };

  SweepOptions sweep_options;
  sweep_options.max_batch_rows = rows > 0 ? rows : limits.max_batch_size;
  sweep_options.cache_budget_bytes = limits.sweep_cache_bytes;
  SweepExecutor executor(&model, sweep_options);
  absl::Status status = executor.Run(examples, masks, callbacks);
  if (status.ok() && writer.failed()) {
    status = absl::CancelledError("the client went away");
  } else if (absl::IsCancelled(status)) {
    status = absl::CancelledError(absl::StrCat("sweep cancelled after ",
                                               reported_done, " of ",
                                               total_pairs, " pairs"));
  }
  // Pairs never scored are abandoned (cancelled or failed), not done.
  sweep_metrics->Finish(status);
  return status;
}

}  // namespace bertology
