#include "client/scheduler/mask_plan.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/ablation_mode_proto.h"
#include "common/mask_generators.h"

namespace bertology {
namespace client {
namespace {

// The mode's name appears in the generated specs, so it must map one to one
// (an unset mode is zero, as the server reads it).
AblationMode CoreMode(v1::AblationMode mode) {
  return AblationModeFromProto(mode).value_or(AblationMode::kZero);
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

// The heads a dense mask scales (0 < value < 1), layer-major; none for a
// mask of the wrong size (the server refuses it).
std::vector<std::pair<int, int>> ScaledHeads(const v1::HeadMask& mask,
                                             int layers, int heads) {
  std::vector<std::pair<int, int>> scaled;
  const auto& values = mask.dense().values();
  if (!mask.has_dense() || values.size() != layers * heads) return scaled;
  for (int i = 0; i < values.size(); ++i) {
    if (values[i] > 0.0f && values[i] < 1.0f) {
      scaled.push_back({i / heads, i % heads});
    }
  }
  return scaled;
}

// The keep-only generator's checks (the server's, with its field names), so
// a bad spec fails before any shard is sent.
absl::Status CheckKeepOnly(const v1::MaskSpec::KeepOnly& k, int i,
                           const MaskPlanOptions& o) {
  std::vector<LayerHead> keep;
  for (const v1::LayerHead& lh : k.keep()) {
    keep.push_back({lh.layer(), lh.head()});
  }
  absl::StatusOr<SweepMask> mask =
      KeepOnlyMask(o.layers, o.heads, k.layer_begin(),
                   k.layer_end() == 0 ? o.layers : k.layer_end(), keep, k.id(),
                   CoreMode(o.mode));
  if (mask.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("masks[", i, "].keep_only.", mask.status().message()));
}

}  // namespace

absl::StatusOr<std::vector<PlannedMask>> PlanMasks(
    const std::vector<v1::MaskSpec>& specs, const MaskPlanOptions& o) {
  if (o.layers < 1 || o.heads < 1) {
    return absl::InvalidArgumentError("the model has no attention heads");
  }
  if (specs.empty()) return absl::InvalidArgumentError("no masks to sweep");
  std::vector<PlannedMask> out;
  MaskIdSet ids;
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) {
    const v1::MaskSpec& spec = specs[i];
    const size_t first = out.size();
    switch (spec.spec_case()) {
      case v1::MaskSpec::kExplicitMask: {
        PlannedMask m;
        m.wire = spec;
        if (m.wire.explicit_mask().id().empty()) {
          m.wire.mutable_explicit_mask()->set_id(absl::StrCat("mask-", i));
        }
        m.id = m.wire.explicit_mask().id();
        m.scaled = ScaledHeads(spec.explicit_mask().mask(), o.layers, o.heads);
        out.push_back(std::move(m));
        break;
      }
      case v1::MaskSpec::kKeepOnly: {
        absl::Status valid = CheckKeepOnly(spec.keep_only(), i, o);
        if (!valid.ok()) return valid;
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
    // The set field's name ("explicit_mask", ...): spec_case is its number.
    const std::string& kind =
        spec.GetDescriptor()->FindFieldByNumber(spec.spec_case())->name();
    const bool named = spec.has_explicit_mask() || spec.has_keep_only();
    for (size_t m = first; m < out.size(); ++m) {
      absl::Status unique = ids.Add(out[m].id, i, kind, named);
      if (!unique.ok()) return unique;
    }
  }
  return out;
}

}  // namespace client
}  // namespace bertology
