// Generators of the head-mask grids that ablation sweeps score: every single
// head, every whole layer, random k% subsets with repeats, and keep-only
// sets. The one place their ids and spec strings are made: the server
// expands a request with them and the client's scheduler plans shards with
// them (this library links no libtorch and no gRPC).
//
// All generators are pure and deterministic (RandomMasks in its seed, with
// the same draws on every platform), so a sweep sharded over replicas can
// regenerate the same masks anywhere.
#ifndef BERTOLOGY_COMMON_MASK_GENERATORS_H_
#define BERTOLOGY_COMMON_MASK_GENERATORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/head_mask.h"

namespace bertology {

struct SweepMask {
  std::string id;    // e.g. "head-L3H7", "layer-4", "random-L0-12-k14-s7-r3"
  std::string spec;  // human-readable description of what is masked
  HeadMask mask;
};

// One mask per head (L*H masks, layer-major), ids "head-L{l}H{h}". Empty
// when `layers` or `heads` is not positive.
std::vector<SweepMask> SingleHeadMasks(int layers, int heads,
                                       AblationMode mode);

// One mask per whole layer, ids "layer-{l}". Empty when `layers` or `heads`
// is not positive.
std::vector<SweepMask> LayerMasks(int layers, int heads, AblationMode mode);

// `repeats` masks, each ablating k = round(fraction * n) heads drawn
// uniformly without replacement from layers [layer_begin, layer_end) (n =
// heads in that range); deterministic in `seed`, with the same draws on
// every platform (std::mt19937_64 and our own rejection sampling, no
// std::uniform_int_distribution or std::shuffle). Ids
// "random-L{begin}-{end}-k{k}-s{seed}-r{r}": everything that decides the
// heads drawn, so two random masks share an id only when they are the same
// mask. INVALID_ARGUMENT naming the argument when: layers or heads < 1,
// fraction not in (0, 1] or rounding to 0 heads, repeats < 1, or the layer
// range is empty or outside [0, layers).
absl::StatusOr<std::vector<SweepMask>> RandomMasks(
    int layers, int heads, double fraction, int repeats, uint64_t seed,
    int layer_begin, int layer_end, AblationMode mode);

// Ablates every head of layers [layer_begin, layer_end) except `keep`
// ("mask all of layers 0-5 but these 5 heads"); id `id`. INVALID_ARGUMENT
// when the range is empty or outside [0, layers), or a kept head ("keep[i]")
// is outside the model or outside the range.
absl::StatusOr<SweepMask> KeepOnlyMask(int layers, int heads, int layer_begin,
                                       int layer_end,
                                       const std::vector<LayerHead>& keep,
                                       std::string id, AblationMode mode);

// The ids of a sweep's expanded masks. They must be unique: results,
// progress files and reports are keyed by them, and two masks under one id
// would read as one mask scored twice.
class MaskIdSet {
 public:
  // INVALID_ARGUMENT when spec j (an earlier one, or spec_index itself)
  // already made `id`, naming where the id came from:
  // `masks[3].explicit_mask.id "x" repeats masks[1]` for a spec that names
  // its mask (`named`: explicit_mask, keep_only), `masks[3].random: id
  // "random-..." repeats masks[1]` for a generator. `kind` is the MaskSpec
  // field that is set ("explicit_mask", "all_layers", ...).
  absl::Status Add(const std::string& id, int spec_index,
                   const std::string& kind, bool named);

 private:
  std::map<std::string, int> spec_of_;  // id -> the spec that made it
};

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_MASK_GENERATORS_H_
