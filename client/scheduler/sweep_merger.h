// Merges shard results into the result of one single-replica sweep: integer
// counts add exactly, loss sums add in a fixed (example chunk) order so the
// merge does not depend on which shard finished first, and accuracy and the
// deltas are recomputed from the merged counts and the merged baseline with
// the server's formulas.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_SWEEP_MERGER_H_
#define BERTOLOGY_CLIENT_SCHEDULER_SWEEP_MERGER_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/scheduler/mask_plan.h"
#include "client/scheduler/shard.h"

namespace bertology {
namespace client {

struct MergedMask {
  MaskCounts counts;
  double accuracy = 0;                 // correct / examples
  double accuracy_delta = 0;           // accuracy - baseline accuracy
  double relative_change_percent = 0;  // (accuracy / baseline - 1) * 100
  double mean_loss_delta = 0;          // mean loss - baseline mean loss
};

struct SweepSummary {
  MergedMask baseline;
  std::vector<MergedMask> masks;  // in planned order
};

// Not thread-safe; the scheduler calls it under its lock.
class SweepMerger {
 public:
  SweepMerger(const std::vector<PlannedMask>& masks, int num_examples);

  // Adds a shard's result once; a second result for the same shard is
  // refused (ALREADY_EXISTS) so nothing is counted twice. INVALID_ARGUMENT
  // when the result does not cover exactly its shard.
  absl::Status Add(const ShardResult& result);

  // FAILED_PRECONDITION until every mask has seen every example.
  absl::StatusOr<SweepSummary> Finish() const;

 private:
  using Chunk = std::pair<int, int>;  // [example_begin, example_end)
  std::vector<PlannedMask> masks_;
  int num_examples_;
  std::map<std::string, bool> added_;  // shard keys
  // Per chunk: the baseline, and per planned mask its counts there.
  std::map<Chunk, MaskCounts> baseline_;
  std::map<Chunk, std::vector<std::optional<MaskCounts>>> counts_;
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SWEEP_MERGER_H_
