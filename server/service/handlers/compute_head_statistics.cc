// ComputeHeadStatistics: the reference statistics of mean and resample
// ablation, computed once per (model, reference set) and held by the model.
#include "absl/status/status.h"
#include "common/status_macros.h"
#include "server/service/handlers/handlers.h"
#include "server/service/handlers/reference_sets.h"
#include "server/service/registry/model_registry.h"

namespace bertology {

void FillReferenceStatistics(const ReferenceStore::Info& info,
                             v1::ReferenceStatistics* out) {
  out->set_id(info.id);
  out->set_examples(info.examples);
  out->set_tokens(info.tokens);
  out->set_truncated_examples(info.truncated_examples);
}

absl::Status HandleComputeHeadStatistics(
    const HandlerContext& ctx, const v1::ComputeHeadStatisticsRequest& request,
    v1::ComputeHeadStatisticsResponse* response) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  ASSIGN_OR_RETURN(const ObtainedReference obtained,
                   ObtainReference(ctx, *served, request.inputs(), "inputs"));
  response->set_model(served->name);
  FillReferenceStatistics(obtained.info, response->mutable_statistics());
  response->set_already_held(obtained.already_held);
  return absl::OkStatus();
}

}  // namespace bertology
