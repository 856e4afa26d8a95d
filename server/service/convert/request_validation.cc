#include "server/service/convert/request_validation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/ablation_mode_proto.h"
#include "common/status_macros.h"

namespace bertology {

absl::StatusOr<AblationMode> ParseAblationMode(v1::AblationMode mode,
                                               AblationMode fallback,
                                               const std::string& field) {
  if (mode == v1::ABLATION_MODE_UNSPECIFIED) return fallback;
  const std::optional<AblationMode> core = AblationModeFromProto(mode);
  if (!core) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, "=", static_cast<int>(mode),
        " is not a known AblationMode (ABLATION_MODE_ZERO=1, "
        "ABLATION_MODE_UNIFORM=2, ABLATION_MODE_MEAN=3, "
        "ABLATION_MODE_RESAMPLE=4, ABLATION_MODE_MEAN_BY_ROLE=5)"));
  }
  return *core;
}

absl::StatusOr<std::vector<LayerHead>> ParseLayerHeads(
    const google::protobuf::RepeatedPtrField<v1::LayerHead>& list, int layers,
    int heads, const std::string& field) {
  std::vector<LayerHead> out;
  out.reserve(list.size());
  for (int i = 0; i < list.size(); ++i) {
    const v1::LayerHead& lh = list.Get(i);
    if (lh.layer() < 0 || lh.layer() >= layers) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "].layer=", lh.layer(),
                       " out of range [0, ", layers, ")"));
    }
    if (lh.head() < 0 || lh.head() >= heads) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "].head=", lh.head(),
                       " out of range [0, ", heads, ")"));
    }
    out.push_back(LayerHead{lh.layer(), lh.head()});
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const HeadReference>> RequireStatistics(
    const ReferenceStore& store, const std::string& id,
    const std::string& field, AblationMode mode) {
  if (id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is empty: mode ", AblationModeName(mode),
        " needs the id of reference statistics (ComputeHeadStatistics)"));
  }
  return store.Find(id, field);
}

absl::StatusOr<ResampleDraws> ParseResampleDraws(
    const v1::ResampleOptions& proto, const std::string& field) {
  if (proto.draws() < 0 || proto.draws() > ResampleDraws::kMaxCount) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".draws=", proto.draws(), " is not in [0, ",
                     ResampleDraws::kMaxCount, "] (0 means 1)"));
  }
  ResampleDraws draws{std::max(1, proto.draws()), proto.seed()};
  switch (proto.alignment()) {
    case v1::RESAMPLE_ALIGNMENT_UNSPECIFIED:
    case v1::RESAMPLE_ALIGNMENT_MATCHED_LENGTHS:
      draws.alignment = ResampleAlignment::kMatchedLengths;
      break;
    case v1::RESAMPLE_ALIGNMENT_SCALED:
      draws.alignment = ResampleAlignment::kScaled;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".alignment=", static_cast<int>(proto.alignment()),
          " is not a known ResampleAlignment "
          "(RESAMPLE_ALIGNMENT_MATCHED_LENGTHS=1, "
          "RESAMPLE_ALIGNMENT_SCALED=2)"));
  }
  return draws;
}

namespace {

// Attaches the statistics a MEAN / RESAMPLE mask reads (see ParseHeadMask).
absl::Status AttachReference(const v1::HeadMask& proto,
                             const MaskReferences& references,
                             const std::string& field, HeadMask* mask) {
  if (!ModeNeedsReference(mask->mode())) return absl::OkStatus();
  if (mask->mode() == AblationMode::kResample && !references.allow_resample) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        ".mode=resample: resample ablation averages a metric over "
        "draws of other inputs' head outputs, which only SweepAblation "
        "scores; this call would average attention maps or logits instead. "
        "Use mean or mean_by_role here, or a SweepAblation"));
  }
  if (references.store == nullptr) {
    if (mask->IsIdentity()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".mode=", AblationModeName(mask->mode()),
        ": this call does not take reference statistics (mode zero or "
        "uniform only)"));
  }
  std::shared_ptr<const HeadReference> reference = references.fallback;
  if (!proto.statistics().empty() || reference == nullptr) {
    if (proto.statistics().empty() && mask->IsIdentity()) {
      return absl::OkStatus();  // ablates nothing: needs nothing
    }
    ASSIGN_OR_RETURN(
        reference,
        RequireStatistics(*references.store, proto.statistics(),
                          absl::StrCat(field, ".statistics"), mask->mode()));
  }
  ResampleDraws draws = references.fallback_draws;
  if (proto.has_resample()) {
    ASSIGN_OR_RETURN(
        draws,
        ParseResampleDraws(proto.resample(), absl::StrCat(field, ".resample")));
  }
  mask->set_reference(std::move(reference), draws);
  return absl::OkStatus();
}

absl::StatusOr<HeadMask> ParseMaskValues(const v1::HeadMask& proto, int layers,
                                         int heads, AblationMode mode,
                                         const std::string& field) {
  switch (proto.mask_case()) {
    case v1::HeadMask::MASK_NOT_SET:
      return HeadMask::Identity(layers, heads, mode);
    case v1::HeadMask::kAblate: {
      ASSIGN_OR_RETURN(auto list,
                       ParseLayerHeads(proto.ablate().heads(), layers, heads,
                                       absl::StrCat(field, ".ablate.heads")));
      return HeadMask::Ablate(layers, heads, list, mode);
    }
    case v1::HeadMask::kKeep: {
      ASSIGN_OR_RETURN(auto list,
                       ParseLayerHeads(proto.keep().heads(), layers, heads,
                                       absl::StrCat(field, ".keep.heads")));
      return HeadMask::KeepOnly(layers, heads, list, mode);
    }
    case v1::HeadMask::kDense: {
      const auto& values = proto.dense().values();
      if (values.size() != layers * heads) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".dense.values has ", values.size(),
                         " values; the model needs layers x heads = ", layers,
                         " x ", heads, " = ", layers * heads));
      }
      for (int i = 0; i < values.size(); ++i) {
        const float v = values.Get(i);
        if (!std::isfinite(v) || v < 0.0f || v > 1.0f) {
          return absl::InvalidArgumentError(absl::StrCat(
              field, ".dense.values[", i, "]=", v, " (layer ", i / heads,
              ", head ", i % heads, ") is not in [0, 1]"));
        }
      }
      return HeadMask::Dense(layers, heads,
                             std::vector<float>(values.begin(), values.end()),
                             mode);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has an unknown mask kind"));
}

}  // namespace

absl::StatusOr<HeadMask> ParseHeadMask(const v1::HeadMask& proto, int layers,
                                       int heads, AblationMode default_mode,
                                       const std::string& field,
                                       const MaskReferences& references) {
  ASSIGN_OR_RETURN(AblationMode mode,
                   ParseAblationMode(proto.mode(), default_mode,
                                     absl::StrCat(field, ".mode")));
  ASSIGN_OR_RETURN(HeadMask mask,
                   ParseMaskValues(proto, layers, heads, mode, field));
  RETURN_IF_ERROR(AttachReference(proto, references, field, &mask));
  return mask;
}

absl::Status ValidateText(std::string_view text, const std::string& field,
                          const ServiceLimits& limits, bool allow_empty) {
  if (text.empty() && !allow_empty) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  }
  if (static_cast<int64_t>(text.size()) > limits.max_text_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is ", text.size(),
        " bytes, over the limit --max_text_bytes=", limits.max_text_bytes));
  }
  if (!IsValidUtf8(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is not valid UTF-8"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Encoding> EncodeText(const Tokenizer& tokenizer, int max_seq_len,
                                    std::string_view text_a,
                                    std::string_view text_b,
                                    const std::string& field,
                                    const ServiceLimits& limits) {
  RETURN_IF_ERROR(ValidateText(text_a, absl::StrCat(field, "text_a"), limits,
                               /*allow_empty=*/false));
  RETURN_IF_ERROR(ValidateText(text_b, absl::StrCat(field, "text_b"), limits,
                               /*allow_empty=*/true));
  std::optional<std::string_view> b;
  if (!text_b.empty()) b = text_b;
  absl::StatusOr<Encoding> encoding = tokenizer.Encode(text_a, b, max_seq_len);
  if (!encoding.ok()) {
    return absl::Status(
        encoding.status().code(),
        absl::StrCat(
            field.empty() ? "input" : field.substr(0, field.size() - 1), ": ",
            encoding.status().message()));
  }
  return encoding;
}

absl::StatusOr<Encoding> EncodeInput(const Tokenizer& tokenizer,
                                     int max_seq_len,
                                     const v1::TextInput& input,
                                     const std::string& field,
                                     const ServiceLimits& limits) {
  return EncodeText(tokenizer, max_seq_len, input.text_a(), input.text_b(),
                    absl::StrCat(field, "."), limits);
}

absl::StatusOr<std::vector<int>> ParseIndexSelection(
    const google::protobuf::RepeatedField<int32_t>& list, int n,
    const std::string& field) {
  std::vector<int> out;
  if (list.empty()) {
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  absl::flat_hash_set<int> seen;
  for (int i = 0; i < list.size(); ++i) {
    const int v = list.Get(i);
    if (v < 0 || v >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]=", v, " out of range [0, ", n, ")"));
    }
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]=", v, " is repeated"));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace bertology
