// A merged sweep as CSV (one row per mask, the baseline first) and JSON.
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_

#include <string>

#include "client/scheduler/sweep_scheduler.h"

namespace bertology {
namespace client {

// Header: mask_index,mask_id,spec,ablated,examples,correct,accuracy,
// accuracy_delta,relative_change_percent,loss_sum,mean_loss_delta.
// ablated is "L0H1 L2H3"; the baseline row has mask_index -1.
std::string SweepCsv(const SweepSummary& summary);

// {"model", "mode", "baseline": {...}, "masks": [{...}], "run": {shards,
// retries, replicas}}; doubles round-trip exactly.
std::string SweepJson(const SweepRun& run, const std::string& model,
                      const std::string& mode);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
