#include "client/scheduler/shard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace bertology {
namespace client {

std::string Shard::Key() const {
  return absl::StrCat("m", mask_begin, "-", mask_end, ":e", example_begin, "-",
                      example_end);
}

std::vector<Shard> PlanShards(int num_masks, int num_examples,
                              const ShardingOptions& options) {
  std::vector<Shard> shards;
  const int mstep = std::max(1, options.masks_per_shard);
  const int estep = std::max(1, options.examples_per_shard);
  for (int e = 0; e < num_examples; e += estep) {
    for (int m = 0; m < num_masks; m += mstep) {
      Shard s;
      s.index = static_cast<int>(shards.size());
      s.mask_begin = m;
      s.mask_end = std::min(num_masks, m + mstep);
      s.example_begin = e;
      s.example_end = std::min(num_examples, e + estep);
      shards.push_back(s);
    }
  }
  return shards;
}

}  // namespace client
}  // namespace bertology
