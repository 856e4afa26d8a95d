// A shard of a sweep: a range of the planned masks scored on a range of the
// examples, sent as one SweepAblation call; and what one shard returns.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_SHARD_H_
#define BERTOLOGY_CLIENT_SCHEDULER_SHARD_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/intervals.h"

namespace bertology {
namespace client {

struct Shard {
  int index = 0;                           // position in the plan
  int mask_begin = 0, mask_end = 0;        // [begin, end) of planned masks
  int example_begin = 0, example_end = 0;  // [begin, end) of examples
  // "m{begin}-{end}:e{begin}-{end}": the identity used by progress files.
  std::string Key() const;
  int num_masks() const { return mask_end - mask_begin; }
  int num_examples() const { return example_end - example_begin; }
  // (mask, example) pairs the server scores, its baseline included.
  int64_t pairs() const {
    return static_cast<int64_t>(num_masks() + 1) * num_examples();
  }
};

struct ShardingOptions {
  int masks_per_shard = 16;       // >= 1
  int examples_per_shard = 1000;  // >= 1
};

// Example-chunk-major, masks within: shards of the same example chunk share
// nothing on the server, but this order finishes whole chunks early.
std::vector<Shard> PlanShards(int num_masks, int num_examples,
                              const ShardingOptions& options);

// Counts for one mask on one shard's examples (or merged over all).
struct MaskCounts {
  int mask_index = -1;  // global planned index; -1 for the baseline
  std::string mask_id;
  std::string spec;
  std::vector<std::pair<int, int>> ablated;  // (layer, head)
  int64_t examples = 0;
  // Units scored: = examples for a sequence classifier, labelled words for
  // a token classifier (MaskResult.scored). correct and loss_sum count them.
  int64_t scored = 0;
  int64_t correct = 0;
  double loss_sum = 0;
  // Resample: rows per example, and units right per draw (MaskResult).
  int draws = 1;
  std::vector<int64_t> draw_correct;
  // The paired differences from the baseline (common/intervals.h).
  PairedSums paired;
};

struct ShardResult {
  Shard shard;
  MaskCounts baseline;
  std::vector<MaskCounts> masks;  // one per mask of the shard, any order
  std::string replica;            // who served it (for accounting)
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SHARD_H_
