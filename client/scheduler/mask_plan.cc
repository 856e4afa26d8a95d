#include "client/scheduler/mask_plan.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/core/mask_generators.h"

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

// The server's own generator (server/core/mask_generators.h, no libtorch),
// so the ids and heads are the ones the server would expand.
absl::Status PlanRandom(const v1::MaskSpec::RandomFraction& r, int i,
                        const MaskPlanOptions& o,
                        std::vector<PlannedMask>* out) {
  const int end = r.layer_end() == 0 ? o.layers : r.layer_end();
  absl::StatusOr<std::vector<SweepMask>> masks =
      RandomMasks(o.layers, o.heads, r.fraction(), r.repeats(), r.seed(),
                  r.layer_begin(), end,
                  o.mode == v1::ABLATION_MODE_UNIFORM ? AblationMode::kUniform
                                                      : AblationMode::kZero);
  if (!masks.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("masks[", i, "].random: ", masks.status().message()));
  }
  for (const SweepMask& m : *masks) {
    std::vector<std::pair<int, int>> off;
    for (const LayerHead& lh : m.mask.AffectedHeads()) {
      off.push_back({lh.layer, lh.head});
    }
    out->push_back(Ablating(m.id, m.spec, off));
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
