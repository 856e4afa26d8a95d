#include "common/head_mask.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bertology {
namespace {

absl::Status CheckShape(int layers, int heads) {
  if (layers <= 0 || heads <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("head mask shape ", layers, "x", heads,
                     " must have positive layers and heads"));
  }
  return absl::OkStatus();
}

// Validates `list[i]` against the model shape; `what` names the list.
absl::Status CheckEntries(int layers, int heads,
                          const std::vector<LayerHead>& list,
                          const char* what) {
  for (size_t i = 0; i < list.size(); ++i) {
    const LayerHead& lh = list[i];
    if (lh.layer < 0 || lh.layer >= layers) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "[", i, "].layer=", lh.layer, " out of range [0, ",
                       layers, ")"));
    }
    if (lh.head < 0 || lh.head >= heads) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "[", i, "].head=", lh.head, " out of range [0, ", heads, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* AblationModeName(AblationMode mode) {
  switch (mode) {
    case AblationMode::kZero:
      return "zero";
    case AblationMode::kUniform:
      return "uniform";
    case AblationMode::kMean:
      return "mean";
    case AblationMode::kResample:
      return "resample";
    case AblationMode::kMeanByRole:
      return "mean_by_role";
  }
  return "unknown";
}

std::optional<AblationMode> AblationModeFromName(const std::string& name) {
  for (AblationMode m :
       {AblationMode::kZero, AblationMode::kUniform, AblationMode::kMean,
        AblationMode::kResample, AblationMode::kMeanByRole}) {
    if (name == AblationModeName(m)) return m;
  }
  return std::nullopt;
}

const char* ResampleAlignmentName(ResampleAlignment alignment) {
  switch (alignment) {
    case ResampleAlignment::kMatchedLengths:
      return "matched_lengths";
    case ResampleAlignment::kScaled:
      return "scaled";
  }
  return "unknown";
}

HeadMask HeadMask::Identity(int layers, int heads, AblationMode mode) {
  const int n = layers > 0 && heads > 0 ? layers * heads : 0;
  return HeadMask(layers, heads, std::vector<float>(n, 1.0f), mode);
}

absl::StatusOr<HeadMask> HeadMask::Ablate(int layers, int heads,
                                          const std::vector<LayerHead>& ablate,
                                          AblationMode mode) {
  if (absl::Status s = CheckShape(layers, heads); !s.ok()) return s;
  if (absl::Status s = CheckEntries(layers, heads, ablate, "ablate"); !s.ok()) {
    return s;
  }
  std::vector<float> values(layers * heads, 1.0f);
  for (const LayerHead& lh : ablate) values[lh.layer * heads + lh.head] = 0.0f;
  return HeadMask(layers, heads, std::move(values), mode);
}

absl::StatusOr<HeadMask> HeadMask::KeepOnly(int layers, int heads,
                                            const std::vector<LayerHead>& keep,
                                            AblationMode mode) {
  if (absl::Status s = CheckShape(layers, heads); !s.ok()) return s;
  if (absl::Status s = CheckEntries(layers, heads, keep, "keep"); !s.ok()) {
    return s;
  }
  std::vector<float> values(layers * heads, 0.0f);
  for (const LayerHead& lh : keep) values[lh.layer * heads + lh.head] = 1.0f;
  return HeadMask(layers, heads, std::move(values), mode);
}

absl::StatusOr<HeadMask> HeadMask::Dense(int layers, int heads,
                                         std::vector<float> values,
                                         AblationMode mode) {
  if (absl::Status s = CheckShape(layers, heads); !s.ok()) return s;
  if (values.size() != static_cast<size_t>(layers) * heads) {
    return absl::InvalidArgumentError(
        absl::StrCat("head mask has ", values.size(), " values, expected ",
                     layers, " layers x ", heads, " heads = ", layers * heads));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (!std::isfinite(v) || v < 0.0f || v > 1.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("values[", i, "] (layer ", i / heads, ", head ",
                       i % heads, ")=", v, " must be finite and in [0, 1]"));
    }
  }
  return HeadMask(layers, heads, std::move(values), mode);
}

bool HeadMask::IsIdentity() const { return FirstAffectedLayer() == layers_; }

int HeadMask::FirstAffectedLayer() const {
  for (size_t i = 0; i < values_.size(); ++i) {
    if (values_[i] != 1.0f) return static_cast<int>(i) / heads_;
  }
  return layers_;
}

std::vector<LayerHead> HeadMask::AffectedHeads() const {
  std::vector<LayerHead> out;
  for (int l = 0; l < layers_; ++l) {
    for (int h = 0; h < heads_; ++h) {
      if (value(l, h) != 1.0f) out.push_back({l, h});
    }
  }
  return out;
}

std::string HeadMask::DebugString() const {
  const std::vector<LayerHead> affected = AffectedHeads();
  if (affected.empty()) {
    return absl::StrCat("identity ", layers_, "x", heads_);
  }
  bool all_zero = true;
  for (const LayerHead& lh : affected) {
    all_zero = all_zero && value(lh.layer, lh.head) == 0.0f;
  }
  std::string heads =
      absl::StrJoin(affected, ",", [&](std::string* out, const LayerHead& lh) {
        absl::StrAppend(out, "L", lh.layer, "H", lh.head);
        if (!all_zero) absl::StrAppend(out, "=", value(lh.layer, lh.head));
      });
  return absl::StrCat(all_zero ? "ablate " : "scale ", heads, " (",
                      AblationModeName(mode_), ")");
}

}  // namespace bertology
