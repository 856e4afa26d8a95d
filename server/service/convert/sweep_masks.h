// Expands a sweep request's mask specs (explicit masks and generators) into
// the flat list of masks the SweepExecutor scores, checking the count
// against --max_masks_per_sweep before generating anything.
#ifndef BERTOLOGY_SERVICE_CONVERT_SWEEP_MASKS_H_
#define BERTOLOGY_SERVICE_CONVERT_SWEEP_MASKS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "server/core/sweep/sweep.h"
#include "server/service/convert/request_validation.h"

namespace bertology {

struct SweepMaskOptions {
  int layers = 0;
  int heads = 0;
  AblationMode mode = AblationMode::kZero;  // for generated masks
  int max_masks = 10000;
  // MEAN / RESAMPLE masks: explicit ones may name their own statistics
  // (store); generated ones and those naming none take the fallback.
  MaskReferences references;
};

// INVALID_ARGUMENT naming "masks[i]..." for a bad spec (or a MEAN /
// RESAMPLE mask with no statistics to read); RESOURCE_EXHAUSTED
// naming --max_masks_per_sweep when the expansion is too large.
absl::StatusOr<std::vector<SweepMask>> ExpandMaskSpecs(
    const google::protobuf::RepeatedPtrField<v1::MaskSpec>& specs,
    const SweepMaskOptions& options);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_CONVERT_SWEEP_MASKS_H_
