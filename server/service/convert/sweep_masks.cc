#include "server/service/convert/sweep_masks.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/service/convert/request_validation.h"

namespace bertology {
namespace {

// How many masks spec `i` expands to, or an error naming it.
absl::StatusOr<int64_t> CountMasks(const v1::MaskSpec& spec, int i,
                                   const SweepMaskOptions& o) {
  switch (spec.spec_case()) {
    case v1::MaskSpec::kExplicitMask:
    case v1::MaskSpec::kKeepOnly:
      return 1;
    case v1::MaskSpec::kAllSingleHeads:
      return static_cast<int64_t>(o.layers) * o.heads;
    case v1::MaskSpec::kAllLayers:
      return o.layers;
    case v1::MaskSpec::kRandom:
      if (spec.random().repeats() <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "masks[", i, "].random.repeats=", spec.random().repeats(),
            " must be positive"));
      }
      return spec.random().repeats();
    case v1::MaskSpec::SPEC_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("masks[", i, "] sets no spec"));
}

// [begin, end) with end == 0 meaning all layers; errors name the fields.
absl::Status CheckLayerRange(int begin, int* end, int layers,
                             const std::string& field) {
  if (*end == 0) *end = layers;
  if (begin < 0 || begin >= layers || *end <= begin || *end > layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".layer_begin=", begin, ", layer_end=", *end,
        " is not a non-empty layer range within [0, ", layers, ")"));
  }
  return absl::OkStatus();
}

// The keep-only generator (common/mask_generators.h) with the request's
// field names in its errors.
absl::StatusOr<SweepMask> KeepOnly(const v1::MaskSpec::KeepOnly& spec, int i,
                                   const SweepMaskOptions& o) {
  const std::string field = absl::StrCat("masks[", i, "].keep_only");
  int end = spec.layer_end();
  RETURN_IF_ERROR(CheckLayerRange(spec.layer_begin(), &end, o.layers, field));
  ASSIGN_OR_RETURN(std::vector<LayerHead> keep,
                   ParseLayerHeads(spec.keep(), o.layers, o.heads,
                                   absl::StrCat(field, ".keep")));
  absl::StatusOr<SweepMask> mask = KeepOnlyMask(
      o.layers, o.heads, spec.layer_begin(), end, keep,
      spec.id().empty() ? absl::StrCat("keep-", i) : spec.id(), o.mode);
  if (!mask.ok()) {
    // The generator's messages start with the argument ("keep[1]=L7H0 ..."),
    // which is also the request field under `field`.
    return absl::Status(mask.status().code(),
                        absl::StrCat(field, ".", mask.status().message()));
  }
  return mask;
}

}  // namespace

absl::StatusOr<std::vector<SweepMask>> ExpandMaskSpecs(
    const google::protobuf::RepeatedPtrField<v1::MaskSpec>& specs,
    const SweepMaskOptions& o) {
  if (specs.empty()) return absl::InvalidArgumentError("masks is empty");
  int64_t total = 0;
  for (int i = 0; i < specs.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t n, CountMasks(specs.Get(i), i, o));
    total += n;
  }
  if (total > o.max_masks) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "masks expand to ", total,
        " masks, over the limit --max_masks_per_sweep=", o.max_masks));
  }
  std::vector<SweepMask> out;
  out.reserve(total);
  // Results are keyed by id (here, in the scheduler's merge and in every
  // report), so an id may name one mask only.
  MaskIdSet ids;
  for (int i = 0; i < specs.size(); ++i) {
    const v1::MaskSpec& spec = specs.Get(i);
    const size_t first = out.size();
    switch (spec.spec_case()) {
      case v1::MaskSpec::kExplicitMask: {
        ASSIGN_OR_RETURN(
            HeadMask mask,
            ParseHeadMask(spec.explicit_mask().mask(), o.layers, o.heads,
                          o.mode,
                          absl::StrCat("masks[", i, "].explicit_mask.mask"),
                          o.references));
        std::string id = spec.explicit_mask().id().empty()
                             ? absl::StrCat("mask-", i)
                             : spec.explicit_mask().id();
        std::string debug = mask.DebugString();
        out.push_back(
            SweepMask{std::move(id), std::move(debug), std::move(mask)});
        break;
      }
      case v1::MaskSpec::kAllSingleHeads:
        for (SweepMask& m : SingleHeadMasks(o.layers, o.heads, o.mode)) {
          out.push_back(std::move(m));
        }
        break;
      case v1::MaskSpec::kAllLayers:
        for (SweepMask& m : LayerMasks(o.layers, o.heads, o.mode)) {
          out.push_back(std::move(m));
        }
        break;
      case v1::MaskSpec::kRandom: {
        const auto& r = spec.random();
        const std::string field = absl::StrCat("masks[", i, "].random");
        int end = r.layer_end();
        RETURN_IF_ERROR(
            CheckLayerRange(r.layer_begin(), &end, o.layers, field));
        if (!(r.fraction() > 0.0 && r.fraction() <= 1.0)) {
          return absl::InvalidArgumentError(absl::StrCat(
              field, ".fraction=", r.fraction(), " is not in (0, 1]"));
        }
        absl::StatusOr<std::vector<SweepMask>> masks =
            RandomMasks(o.layers, o.heads, r.fraction(), r.repeats(), r.seed(),
                        r.layer_begin(), end, o.mode);
        if (!masks.ok()) {
          return absl::Status(
              masks.status().code(),
              absl::StrCat(field, ": ", masks.status().message()));
        }
        for (SweepMask& m : *masks) out.push_back(std::move(m));
        break;
      }
      case v1::MaskSpec::kKeepOnly: {
        ASSIGN_OR_RETURN(SweepMask m, KeepOnly(spec.keep_only(), i, o));
        out.push_back(std::move(m));
        break;
      }
      case v1::MaskSpec::SPEC_NOT_SET:
        break;  // refused by CountMasks
    }
    // The set field's name ("explicit_mask", ...): spec_case is its number.
    const std::string& kind =
        spec.GetDescriptor()->FindFieldByNumber(spec.spec_case())->name();
    if (!spec.has_explicit_mask()) {
      // Generated masks read the sweep's statistics.
      for (size_t m = first; m < out.size(); ++m) {
        HeadMask& mask = out[m].mask;
        if (!ModeNeedsReference(mask.mode()) || mask.IsIdentity()) continue;
        if (o.references.fallback == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat("masks[", i, "] (", kind, ") is in mode ",
                           AblationModeName(mask.mode()),
                           ": give the sweep `statistics` (an id from "
                           "ComputeHeadStatistics) or `reference` inputs"));
        }
        mask.set_reference(o.references.fallback, o.references.fallback_draws);
      }
    }
    const bool named = spec.has_explicit_mask() || spec.has_keep_only();
    for (size_t m = first; m < out.size(); ++m) {
      RETURN_IF_ERROR(ids.Add(out[m].id, i, kind, named));
    }
  }
  return out;
}

}  // namespace bertology
