// Expands a sweep's mask specs into the flat, ordered list of masks that a
// single-replica SweepAblation call would score, so the scheduler can cut it
// into ranges. Generators (every head, every layer, random fractions) run
// here through the server's own code (common/mask_generators.h) and become
// explicit ablate lists with its ids and spec strings; explicit and
// keep-only specs (one mask each) travel unchanged with their server-default
// id filled in. Ids are unique across the plan, as the server requires of
// one call (each shard is a call of its own, so only the plan can check).
#ifndef BERTOLOGY_CLIENT_SCHEDULER_MASK_PLAN_H_
#define BERTOLOGY_CLIENT_SCHEDULER_MASK_PLAN_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"

namespace bertology {
namespace client {

struct PlannedMask {
  std::string id;     // as a single-call sweep names it
  std::string spec;   // human description; empty: use the server's
  v1::MaskSpec wire;  // one MaskSpec that expands to exactly this mask
  // Heads the mask scales by 0 < value < 1 instead of zeroing (only an
  // explicit dense mask has any). The server lists them among `ablated`
  // (value != 1), so a summary needs them to tell a scaled head from an
  // ablated one.
  std::vector<std::pair<int, int>> scaled;  // (layer, head)
};

struct MaskPlanOptions {
  int layers = 0;
  int heads = 0;
  v1::AblationMode mode = v1::ABLATION_MODE_ZERO;  // for generated masks
};

// INVALID_ARGUMENT naming "masks[i]" for a spec the server would refuse,
// and for an id that repeats an earlier mask's
// (`masks[3].explicit_mask.id "x" repeats masks[1]`).
absl::StatusOr<std::vector<PlannedMask>> PlanMasks(
    const std::vector<v1::MaskSpec>& specs, const MaskPlanOptions& options);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_MASK_PLAN_H_
