#include "common/mask_generators.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace bertology {
namespace {

// A mask of the given shape with the listed heads at 0. Callers pass only
// in-range heads, so HeadMask::Ablate cannot fail here.
HeadMask AblateValid(int layers, int heads, const std::vector<LayerHead>& off,
                     AblationMode mode) {
  std::vector<float> values(static_cast<size_t>(layers) * heads, 1.0f);
  for (const LayerHead& lh : off) values[lh.layer * heads + lh.head] = 0.0f;
  return *HeadMask::Dense(layers, heads, std::move(values), mode);
}

// Uniform integer in [0, n) by rejection, so the draws are the same on every
// standard library (std::uniform_int_distribution is not specified
// bit-for-bit).
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace

std::vector<SweepMask> SingleHeadMasks(int layers, int heads,
                                       AblationMode mode) {
  std::vector<SweepMask> masks;
  if (layers < 1 || heads < 1) return masks;
  masks.reserve(static_cast<size_t>(layers) * heads);
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      masks.push_back({absl::StrCat("head-L", l, "H", h),
                       absl::StrCat("ablate head L", l, "H", h, " (",
                                    AblationModeName(mode), ")"),
                       AblateValid(layers, heads, {{l, h}}, mode)});
    }
  }
  return masks;
}

std::vector<SweepMask> LayerMasks(int layers, int heads, AblationMode mode) {
  std::vector<SweepMask> masks;
  if (layers < 1 || heads < 1) return masks;
  masks.reserve(layers);
  for (int l = 0; l < layers; ++l) {
    std::vector<LayerHead> off;
    for (int h = 0; h < heads; ++h) off.push_back({l, h});
    masks.push_back({absl::StrCat("layer-", l),
                     absl::StrCat("ablate all ", heads, " heads of layer ", l,
                                  " (", AblationModeName(mode), ")"),
                     AblateValid(layers, heads, off, mode)});
  }
  return masks;
}

absl::StatusOr<std::vector<SweepMask>> RandomMasks(
    int layers, int heads, double fraction, int repeats, uint64_t seed,
    int layer_begin, int layer_end, AblationMode mode) {
  if (layers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("layers=", layers, " must be >= 1"));
  }
  if (heads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("heads=", heads, " must be >= 1"));
  }
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fraction=", fraction, " must be in (0, 1]"));
  }
  if (repeats < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats=", repeats, " must be >= 1"));
  }
  if (layer_begin < 0 || layer_begin >= layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer_begin=", layer_begin, " out of range [0, ", layers, ")"));
  }
  if (layer_end <= layer_begin || layer_end > layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_end=", layer_end, " out of range (", layer_begin,
                     ", ", layers, "]"));
  }
  const int n = (layer_end - layer_begin) * heads;
  const int k = static_cast<int>(std::lround(fraction * n));
  if (k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fraction=", fraction, " of ", n,
                     " heads rounds to 0 heads; nothing would be masked"));
  }

  std::mt19937_64 rng(seed);
  std::vector<int> pool(n);
  std::vector<SweepMask> masks;
  masks.reserve(repeats);
  for (int r = 0; r < repeats; ++r) {
    // Partial Fisher-Yates: the first k entries are a uniform k-subset.
    std::iota(pool.begin(), pool.end(), 0);
    for (int i = 0; i < k; ++i) {
      const int j = i + static_cast<int>(UniformBelow(rng, n - i));
      std::swap(pool[i], pool[j]);
    }
    std::vector<LayerHead> off;
    off.reserve(k);
    for (int i = 0; i < k; ++i) {
      off.push_back({layer_begin + pool[i] / heads, pool[i] % heads});
    }
    masks.push_back(
        {absl::StrFormat("random-L%d-%d-k%d-s%d-r%d", layer_begin, layer_end, k,
                         seed, r),
         absl::StrFormat("ablate %d random heads of %d in layers [%d, %d), "
                         "seed %d, repeat %d (%s)",
                         k, n, layer_begin, layer_end, seed, r,
                         AblationModeName(mode)),
         AblateValid(layers, heads, off, mode)});
  }
  return masks;
}

absl::StatusOr<SweepMask> KeepOnlyMask(int layers, int heads, int layer_begin,
                                       int layer_end,
                                       const std::vector<LayerHead>& keep,
                                       std::string id, AblationMode mode) {
  if (layers < 1 || heads < 1 || layer_begin < 0 || layer_end <= layer_begin ||
      layer_end > layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer_begin=", layer_begin, ", layer_end=", layer_end,
        " is not a non-empty layer range within [0, ", layers, ")"));
  }
  std::vector<float> values(static_cast<size_t>(layers) * heads, 1.0f);
  for (int l = layer_begin; l < layer_end; ++l) {
    for (int h = 0; h < heads; ++h) values[l * heads + h] = 0.0f;
  }
  std::vector<std::string> kept;
  for (size_t i = 0; i < keep.size(); ++i) {
    const LayerHead& lh = keep[i];
    if (lh.layer < 0 || lh.layer >= layers || lh.head < 0 || lh.head >= heads) {
      return absl::InvalidArgumentError(
          absl::StrCat("keep[", i, "]=L", lh.layer, "H", lh.head,
                       " is outside the model's ", layers, "x", heads));
    }
    // A head outside the range is kept anyway (only the range is ablated),
    // so listing it means the caller meant another range.
    if (lh.layer < layer_begin || lh.layer >= layer_end) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keep[", i, "]=L", lh.layer, "H", lh.head, " is outside layers [",
          layer_begin, ", ", layer_end, ")"));
    }
    values[lh.layer * heads + lh.head] = 1.0f;
    kept.push_back(absl::StrCat("L", lh.layer, "H", lh.head));
  }
  absl::StatusOr<HeadMask> mask =
      HeadMask::Dense(layers, heads, std::move(values), mode);
  if (!mask.ok()) return mask.status();
  return SweepMask{
      std::move(id),
      absl::StrCat("ablate layers ", layer_begin, "-", layer_end - 1,
                   " except ", absl::StrJoin(kept, ","), " (",
                   AblationModeName(mode), ")"),
      *std::move(mask)};
}

absl::Status MaskIdSet::Add(const std::string& id, int spec_index,
                            const std::string& kind, bool named) {
  const auto [it, inserted] = spec_of_.emplace(id, spec_index);
  if (inserted) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("masks[", spec_index, "].", kind, named ? ".id" : ": id",
                   " \"", id, "\" repeats masks[", it->second, "]"));
}

}  // namespace bertology
