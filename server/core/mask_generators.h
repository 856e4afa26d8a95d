// Generators of the head-mask grids that ablation sweeps score: every single
// head, every whole layer, and random k% subsets with repeats.
//
// All generators are pure and deterministic (RandomMasks in its seed, with
// the same draws on every platform), so a sweep sharded over replicas can
// regenerate the same masks anywhere.
#ifndef BERTOLOGY_CORE_MASK_GENERATORS_H_
#define BERTOLOGY_CORE_MASK_GENERATORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/head_mask.h"

namespace bertology {

struct SweepMask {
  std::string id;    // e.g. "head-L3H7", "layer-4", "random-0.30-r5"
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

// `repeats` masks, each ablating round(fraction * n) heads drawn uniformly
// without replacement from layers [layer_begin, layer_end) (n = heads in
// that range); deterministic in `seed`. Ids "random-{fraction:.2f}-r{r}",
// with "-L{begin}-{end}" before "-r" when the range is not all layers.
// INVALID_ARGUMENT naming the argument when: layers or heads < 1, fraction
// not in (0, 1] or rounding to 0 heads, repeats < 1, or the layer range is
// empty or outside [0, layers).
absl::StatusOr<std::vector<SweepMask>> RandomMasks(
    int layers, int heads, double fraction, int repeats, uint64_t seed,
    int layer_begin, int layer_end, AblationMode mode);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_MASK_GENERATORS_H_
