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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/head_mask.h"

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

// Ablates every head of layers [layer_begin, layer_end) except `keep`
// ("mask all of layers 0-5 but these 5 heads"); id `id`. INVALID_ARGUMENT
// when the range is empty or outside [0, layers) or a kept head is outside
// the model.
absl::StatusOr<SweepMask> KeepOnlyMask(int layers, int heads, int layer_begin,
                                       int layer_end,
                                       const std::vector<LayerHead>& keep,
                                       std::string id, AblationMode mode);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_MASK_GENERATORS_H_
