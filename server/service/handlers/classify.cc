// Classify: every input scored under the request's one head mask, through
// the model's dynamic batcher (rows of concurrent calls share forward
// passes even when their masks differ).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/metrics/metrics.h"
#include "server/service/registry/batcher.h"
#include "server/service/registry/model_registry.h"

namespace bertology {

absl::Status HandleClassify(const HandlerContext& ctx,
                            const v1::ClassifyRequest& request,
                            v1::ClassifyResponse* response) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  RETURN_IF_ERROR(model.CheckCanClassify());
  if (request.inputs().empty()) {
    return absl::InvalidArgumentError("inputs is empty");
  }
  if (request.inputs_size() > ctx.limits->max_inputs_per_call) {
    return absl::ResourceExhaustedError(
        absl::StrCat("inputs has ", request.inputs_size(),
                     " entries, over the limit --max_inputs_per_call=",
                     ctx.limits->max_inputs_per_call));
  }
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(
      HeadMask mask,
      ParseHeadMask(request.head_mask(), c.num_hidden_layers,
                    c.num_attention_heads, AblationMode::kZero, "head_mask",
                    MaskReferences{served->references.get()}));
  std::shared_ptr<const HeadMask> shared_mask;
  if (!mask.IsIdentity()) {
    shared_mask = std::make_shared<const HeadMask>(std::move(mask));
  }
  std::vector<BatchRow> rows;
  rows.reserve(request.inputs_size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(
        Encoding encoding,
        EncodeInput(model.tokenizer(), model.max_seq_len(), request.inputs(i),
                    absl::StrCat("inputs[", i, "]"), *ctx.limits));
    BatchRow row;
    row.encoding = std::make_shared<const Encoding>(std::move(encoding));
    row.mask = shared_mask;
    rows.push_back(std::move(row));
  }
  std::vector<std::shared_ptr<const Encoding>> encodings;
  for (const BatchRow& row : rows) encodings.push_back(row.encoding);

  absl::Notification done;
  absl::StatusOr<std::vector<std::vector<float>>> result;
  // bertology_inflight_rows: these rows are queued or running from here
  // until the batcher answers (inline when it rejects them).
  const int64_t inflight_rows = static_cast<int64_t>(rows.size());
  ctx.metrics->AddInflightRows(inflight_rows);
  served->batcher->Enqueue(
      std::move(rows),
      [&](absl::StatusOr<std::vector<std::vector<float>>> logits) {
        ctx.metrics->AddInflightRows(-inflight_rows);
        result = std::move(logits);
        done.Notify();
      });
  done.WaitForNotification();
  RETURN_IF_ERROR(result.status());
  if (result->size() != encodings.size()) {
    return absl::InternalError(absl::StrCat("the batcher returned ",
                                            result->size(), " rows for ",
                                            encodings.size()));
  }
  response->set_model(served->name);
  for (size_t i = 0; i < encodings.size(); ++i) {
    if (model.head_kind() == HeadKind::kTokenClassification) {
      FillTokenPredictions((*result)[i], c.id2label, *encodings[i],
                           response->add_predictions());
    } else {
      FillPrediction((*result)[i], c.id2label, *encodings[i],
                     response->add_predictions());
    }
  }
  ctx.metrics->AddExamples(served->name, static_cast<int>(encodings.size()));
  return absl::OkStatus();
}

}  // namespace bertology
