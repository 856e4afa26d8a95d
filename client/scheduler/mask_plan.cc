#include "client/scheduler/mask_plan.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bertology {
namespace client {
namespace {

const char* ModeName(v1::AblationMode mode) {
  return mode == v1::ABLATION_MODE_UNIFORM ? "uniform" : "zero";
}

PlannedMask Ablating(std::string id, std::string spec,
                     const std::vector<std::pair<int, int>>& heads) {
  PlannedMask m;
  m.id = std::move(id);
  m.spec = std::move(spec);
  v1::MaskSpec::Explicit* e = m.wire.mutable_explicit_mask();
  e->set_id(m.id);
  v1::HeadList* list = e->mutable_mask()->mutable_ablate();
  for (const auto& [layer, head] : heads) {
    v1::LayerHead* lh = list->add_heads();
    lh->set_layer(layer);
    lh->set_head(head);
  }
  return m;
}

// Same draws as the server's UniformBelow.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

absl::Status PlanRandom(const v1::MaskSpec::RandomFraction& r, int i,
                        const MaskPlanOptions& o,
                        std::vector<PlannedMask>* out) {
  const std::string field = absl::StrCat("masks[", i, "].random");
  const int begin = r.layer_begin();
  const int end = r.layer_end() == 0 ? o.layers : r.layer_end();
  if (begin < 0 || begin >= end || end > o.layers) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": layers [", begin, ", ", end,
                     ") are not a range of the model's ", o.layers));
  }
  if (!(r.fraction() > 0.0 && r.fraction() <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".fraction=", r.fraction(), " is not in (0, 1]"));
  }
  if (r.repeats() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".repeats=", r.repeats(), " must be >= 1"));
  }
  const int n = (end - begin) * o.heads;
  const int k = static_cast<int>(std::lround(r.fraction() * n));
  if (k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": fraction=", r.fraction(), " of ", n,
                     " heads rounds to 0 heads"));
  }
  const bool all_layers = begin == 0 && end == o.layers;
  const std::string range =
      all_layers ? "" : absl::StrCat("-L", begin, "-", end);
  std::mt19937_64 rng(r.seed());
  std::vector<int> pool(n);
  for (int rep = 0; rep < r.repeats(); ++rep) {
    std::iota(pool.begin(), pool.end(), 0);
    for (int j = 0; j < k; ++j) {
      const int swap = j + static_cast<int>(UniformBelow(rng, n - j));
      std::swap(pool[j], pool[swap]);
    }
    std::vector<std::pair<int, int>> off;
    for (int j = 0; j < k; ++j) {
      off.push_back({begin + pool[j] / o.heads, pool[j] % o.heads});
    }
    out->push_back(Ablating(
        absl::StrFormat("random-%.2f%s-r%d", r.fraction(), range, rep),
        absl::StrFormat("ablate %d random heads of %d in layers [%d, %d), "
                        "seed %d, repeat %d (%s)",
                        k, n, begin, end, r.seed(), rep, ModeName(o.mode)),
        off));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PlannedMask>> PlanMasks(
    const std::vector<v1::MaskSpec>& specs, const MaskPlanOptions& o) {
  if (o.layers < 1 || o.heads < 1) {
    return absl::InvalidArgumentError("the model has no attention heads");
  }
  if (specs.empty()) return absl::InvalidArgumentError("no masks to sweep");
  std::vector<PlannedMask> out;
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) {
    const v1::MaskSpec& spec = specs[i];
    switch (spec.spec_case()) {
      case v1::MaskSpec::kExplicitMask: {
        PlannedMask m;
        m.wire = spec;
        if (m.wire.explicit_mask().id().empty()) {
          m.wire.mutable_explicit_mask()->set_id(absl::StrCat("mask-", i));
        }
        m.id = m.wire.explicit_mask().id();
        out.push_back(std::move(m));
        break;
      }
      case v1::MaskSpec::kKeepOnly: {
        PlannedMask m;
        m.wire = spec;
        if (m.wire.keep_only().id().empty()) {
          m.wire.mutable_keep_only()->set_id(absl::StrCat("keep-", i));
        }
        m.id = m.wire.keep_only().id();
        out.push_back(std::move(m));
        break;
      }
      case v1::MaskSpec::kAllSingleHeads:
        for (int l = 0; l < o.layers; ++l) {
          for (int h = 0; h < o.heads; ++h) {
            out.push_back(Ablating(absl::StrCat("head-L", l, "H", h),
                                   absl::StrCat("ablate head L", l, "H", h,
                                                " (", ModeName(o.mode), ")"),
                                   {{l, h}}));
          }
        }
        break;
      case v1::MaskSpec::kAllLayers:
        for (int l = 0; l < o.layers; ++l) {
          std::vector<std::pair<int, int>> off;
          for (int h = 0; h < o.heads; ++h) off.push_back({l, h});
          out.push_back(
              Ablating(absl::StrCat("layer-", l),
                       absl::StrCat("ablate all ", o.heads, " heads of layer ",
                                    l, " (", ModeName(o.mode), ")"),
                       off));
        }
        break;
      case v1::MaskSpec::kRandom: {
        absl::Status s = PlanRandom(spec.random(), i, o, &out);
        if (!s.ok()) return s;
        break;
      }
      case v1::MaskSpec::SPEC_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat("masks[", i, "] sets no spec"));
    }
  }
  return out;
}

}  // namespace client
}  // namespace bertology
