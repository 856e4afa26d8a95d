#include "common/ablation_mode_proto.h"

namespace bertology {

std::optional<AblationMode> AblationModeFromProto(v1::AblationMode mode) {
  switch (mode) {
    case v1::ABLATION_MODE_ZERO:
      return AblationMode::kZero;
    case v1::ABLATION_MODE_UNIFORM:
      return AblationMode::kUniform;
    case v1::ABLATION_MODE_MEAN:
      return AblationMode::kMean;
    case v1::ABLATION_MODE_RESAMPLE:
      return AblationMode::kResample;
    case v1::ABLATION_MODE_MEAN_BY_ROLE:
      return AblationMode::kMeanByRole;
    default:
      return std::nullopt;
  }
}

v1::AblationMode AblationModeToProto(AblationMode mode) {
  switch (mode) {
    case AblationMode::kZero:
      return v1::ABLATION_MODE_ZERO;
    case AblationMode::kUniform:
      return v1::ABLATION_MODE_UNIFORM;
    case AblationMode::kMean:
      return v1::ABLATION_MODE_MEAN;
    case AblationMode::kResample:
      return v1::ABLATION_MODE_RESAMPLE;
    case AblationMode::kMeanByRole:
      return v1::ABLATION_MODE_MEAN_BY_ROLE;
  }
  return v1::ABLATION_MODE_UNSPECIFIED;
}

}  // namespace bertology
