// Reference statistics from a request's inputs: found by their digest when
// the model already holds them, else computed on the unmasked model and
// held (ComputeHeadStatistics, and a sweep's `reference` on first use).
#ifndef BERTOLOGY_SERVICE_HANDLERS_REFERENCE_SETS_H_
#define BERTOLOGY_SERVICE_HANDLERS_REFERENCE_SETS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/reference_store.h"

namespace bertology {

struct ObtainedReference {
  std::shared_ptr<const HeadReference> reference;
  ReferenceStore::Info info;
  bool already_held = false;
};

// INVALID_ARGUMENT naming "<field>[i]" for a bad input or an empty set;
// RESOURCE_EXHAUSTED over --max_examples_per_sweep inputs.
absl::StatusOr<ObtainedReference> ObtainReference(
    const HandlerContext& ctx, const ServedModel& served,
    const google::protobuf::RepeatedPtrField<v1::TextInput>& inputs,
    const std::string& field);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_HANDLERS_REFERENCE_SETS_H_
