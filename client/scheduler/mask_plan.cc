#include "client/scheduler/mask_plan.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/mask_generators.h"

namespace bertology {
namespace client {
namespace {

AblationMode CoreMode(v1::AblationMode mode) {
  return mode == v1::ABLATION_MODE_UNIFORM ? AblationMode::kUniform
                                           : AblationMode::kZero;
}

// Generated masks as explicit ablate lists with the generator's own ids and
// spec strings (common/mask_generators.h, the code the server expands
// requests with), so a shard of them scores exactly what the server would.
void AddGenerated(const std::vector<SweepMask>& masks,
                  std::vector<PlannedMask>* out) {
  for (const SweepMask& sm : masks) {
    PlannedMask m;
    m.id = sm.id;
    m.spec = sm.spec;
    v1::MaskSpec::Explicit* e = m.wire.mutable_explicit_mask();
    e->set_id(m.id);
    v1::HeadList* list = e->mutable_mask()->mutable_ablate();
    for (const LayerHead& lh : sm.mask.AffectedHeads()) {
      v1::LayerHead* wire = list->add_heads();
      wire->set_layer(lh.layer);
      wire->set_head(lh.head);
    }
    out->push_back(std::move(m));
  }
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
        AddGenerated(SingleHeadMasks(o.layers, o.heads, CoreMode(o.mode)),
                     &out);
        break;
      case v1::MaskSpec::kAllLayers:
        AddGenerated(LayerMasks(o.layers, o.heads, CoreMode(o.mode)), &out);
        break;
      case v1::MaskSpec::kRandom: {
        const v1::MaskSpec::RandomFraction& r = spec.random();
        absl::StatusOr<std::vector<SweepMask>> masks = RandomMasks(
            o.layers, o.heads, r.fraction(), r.repeats(), r.seed(),
            r.layer_begin(), r.layer_end() == 0 ? o.layers : r.layer_end(),
            CoreMode(o.mode));
        if (!masks.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "masks[", i, "].random: ", masks.status().message()));
        }
        AddGenerated(*masks, &out);
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
