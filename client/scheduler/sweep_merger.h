// Merges shard results into the result of one single-replica sweep: integer
// counts add exactly, loss sums add in a fixed (example chunk) order so the
// merge does not depend on which shard finished first, and accuracy and the
// deltas are recomputed from the merged counts and the merged baseline with
// the server's formulas. Every shard of an example chunk scores the same
// baseline, to float rounding (replicas on other CPUs or libraries round
// differently; servers before 2026-12-06 also moved its last bits with the
// shard's masks); the merge
// keeps the one from the chunk's shard with the lowest mask index, so it
// does not depend on which shard finished first either. Shards whose
// baselines disagree by more (replicas that score
// differently: another dtype, other weights) are refused, since merging
// them would mix two models' numbers.
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
  double accuracy = 0;        // correct / examples
  double accuracy_delta = 0;  // accuracy - baseline accuracy
  // (accuracy / baseline - 1) * 100; none when the baseline accuracy is 0
  // (no ratio exists, and 0 would read as "no change").
  std::optional<double> relative_change_percent;
  double mean_loss_delta = 0;  // mean loss - baseline mean loss
  // 95 % intervals, as the server computes them (common/intervals.h):
  // Wilson's of accuracy; the paired one of accuracy_delta (none for the
  // baseline, or with fewer than 2 examples).
  Interval accuracy_ci;
  std::optional<Interval> accuracy_delta_ci;
  // Resample: each draw's accuracy (draw_correct / units per draw), and
  // their sample standard deviation (0 with one draw).
  std::vector<double> draw_accuracy;
  double draw_accuracy_std = 0;
  // The planned mask's heads scaled by 0 < value < 1 (PlannedMask::scaled);
  // counts.ablated, as the server reports it, includes them.
  std::vector<std::pair<int, int>> scaled;
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
  // when the result does not cover exactly its shard. FAILED_PRECONDITION,
  // naming both shards and replicas, when its baseline disagrees with the
  // one another shard of its example chunk gave: a different count of
  // examples or correct ones, or a loss sum off by more than
  // kBaselineLossTolerance (relative).
  absl::Status Add(const ShardResult& result);

  // Float sums differ in their last bits between identical replicas on
  // different CPUs; a different dtype or other weights move them by far
  // more (BF16 vs F32: about 1e-3).
  static constexpr double kBaselineLossTolerance = 1e-5;

  // FAILED_PRECONDITION until every mask has seen every example.
  absl::StatusOr<SweepSummary> Finish() const;

 private:
  using Chunk = std::pair<int, int>;  // [example_begin, example_end)
  std::vector<PlannedMask> masks_;
  int num_examples_;
  std::map<std::string, bool> added_;  // shard keys
  // Per chunk: the baseline, and per planned mask its counts there.
  struct Baseline {
    MaskCounts counts;
    int mask_begin = 0;   // of the shard that gave it: the chunk's lowest
    std::string shard;    // that shard's key
    std::string replica;  // and who served that shard
  };
  std::map<Chunk, Baseline> baseline_;
  std::map<Chunk, std::vector<std::optional<MaskCounts>>> counts_;
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SWEEP_MERGER_H_
