#include "server/service/handlers/reference_sets.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/labeled_examples.h"
#include "server/service/registry/row_budget.h"

namespace bertology {

absl::StatusOr<ObtainedReference> ObtainReference(
    const HandlerContext& ctx, const ServedModel& served,
    const google::protobuf::RepeatedPtrField<v1::TextInput>& inputs,
    const std::string& field) {
  const Model& model = *served.model;
  RETURN_IF_ERROR(CheckInputCount(*ctx.limits, inputs.size(), field));
  std::vector<Encoding> encodings;
  encodings.reserve(inputs.size());
  for (int i = 0; i < inputs.size(); ++i) {
    ASSIGN_OR_RETURN(
        Encoding e,
        EncodeInput(model.tokenizer(), model.max_seq_len(), inputs.Get(i),
                    absl::StrCat(field, "[", i, "]"), *ctx.limits));
    encodings.push_back(std::move(e));
  }
  std::vector<const Encoding*> ptrs;
  for (const Encoding& e : encodings) ptrs.push_back(&e);
  ObtainedReference out;
  const std::string id = HeadReferenceId(model, ptrs);
  for (const ReferenceStore::Info& info : served.references->List()) {
    if (info.id != id) continue;
    if ((out.reference = served.references->Get(id)) != nullptr) {
      out.info = info;
      out.already_held = true;
      return out;
    }
  }
  // The passes hold batch rows like a sweep's: over the model's budget the
  // call is refused now, before any work.
  const int batch = ctx.limits->max_batch_size;
  ASSIGN_OR_RETURN(const RowBudget::Lease rows,
                   served.sweep_rows->Acquire(std::min<int64_t>(
                       batch, static_cast<int64_t>(ptrs.size()))));
  ASSIGN_OR_RETURN(std::shared_ptr<const HeadReference> computed,
                   ComputeHeadReference(model, ptrs, batch));
  out.info = {computed->id, computed->examples, computed->tokens,
              computed->truncated_examples};
  out.reference = served.references->Add(std::move(computed), out.info);
  return out;
}

}  // namespace bertology
