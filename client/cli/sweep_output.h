// A merged sweep as CSV (one row per mask, the baseline first) and JSON, and
// as the plain render::SweepResults the report and figure writers take.
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_

#include <string>

#include "client/render/sweep_data.h"
#include "client/scheduler/sweep_scheduler.h"

namespace bertology {
namespace client {

// Header: mask_index,mask_id,spec,ablated,examples,scored,correct,accuracy,
// accuracy_delta,relative_change_percent,loss_sum,mean_loss_delta,
// accuracy_ci_low,accuracy_ci_high,delta_ci_low,delta_ci_high,
// distinguishable,draws,draw_accuracy_std.
// ablated is "L0H1 L2H3"; the baseline row has mask_index -1 and empty
// delta_ci_* and distinguishable; relative_change_percent is empty when the
// baseline accuracy is 0. The intervals are 95 % (common/intervals.h);
// distinguishable is 1 where the change's interval excludes 0.
std::string SweepCsv(const SweepSummary& summary);

// {"model", "mode", "baseline": {...}, "masks": [{...}], "run": {shards,
// retries, replicas}}; doubles round-trip exactly; relative_change_percent
// is null when the baseline accuracy is 0.
std::string SweepJson(const SweepReport& run, const std::string& model,
                      const std::string& mode);

// The same numbers (nothing recomputed) with the model's shape, so the
// figures can place single heads and whole layers; no relative change is
// NaN there.
render::SweepResults ToSweepResults(const SweepSummary& summary,
                                    const std::string& model, int num_layers,
                                    int num_heads);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
