// Labelled examples (v1::LabeledExample) as the core's SweepExample:
// shared by SweepAblation, HeadImportance and PruneCurve.
#ifndef BERTOLOGY_SERVICE_HANDLERS_LABELED_EXAMPLES_H_
#define BERTOLOGY_SERVICE_HANDLERS_LABELED_EXAMPLES_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "server/core/sweep/sweep.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/service_limits.h"

namespace bertology {

// Validates and encodes `examples` for `served`: a sequence classifier's
// label in range ("examples[i].label=7 is outside the label set [0, 3)"),
// a token classifier's word_labels one per word of the untruncated input,
// each -1 or in range, mapped to the first piece of each word (other
// pieces, special tokens and truncated words unscored). Adds the number of
// truncated inputs to `*truncated` when not null.
absl::StatusOr<std::vector<SweepExample>> EncodeLabeledExamples(
    const ServiceLimits& limits, const ServedModel& served,
    const google::protobuf::RepeatedPtrField<v1::LabeledExample>& examples,
    int* truncated);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_HANDLERS_LABELED_EXAMPLES_H_
