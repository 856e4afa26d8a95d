// GetModelInfo: the loaded models' shapes, labels and placement, and the
// server's limits.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/reference_store.h"

namespace bertology {
namespace {

void FillModelInfo(const ServedModel& served, bool is_default,
                   v1::ModelInfo* out) {
  const Model& model = *served.model;
  const BertConfig& c = model.config();
  out->set_name(served.name);
  out->set_is_default(is_default);
  out->set_num_layers(c.num_hidden_layers);
  out->set_num_heads(c.num_attention_heads);
  out->set_hidden_size(c.hidden_size);
  out->set_max_seq_len(model.max_seq_len());
  if (model.has_classifier()) {
    for (const std::string& label : c.id2label) out->add_label_names(label);
  }
  out->set_vocab_size(c.vocab_size);
  out->set_dtype(model.dtype());
  out->set_device(model.device());
  out->set_has_classifier(model.has_classifier());
  out->set_architecture(model.architecture());
  out->set_family(ModelTypeName(model.config().family));
  switch (model.head_kind()) {
    case HeadKind::kEncoder:
      out->set_head(v1::MODEL_HEAD_ENCODER);
      break;
    case HeadKind::kSequenceClassification:
      out->set_head(v1::MODEL_HEAD_SEQUENCE_CLASSIFICATION);
      break;
    case HeadKind::kTokenClassification:
      out->set_head(v1::MODEL_HEAD_TOKEN_CLASSIFICATION);
      break;
  }
  // The encoder's RPCs serve every head; the scored ones need logits.
  for (const char* rpc :
       {"Tokenize", "GetAttention", "AnalyzeHeads", "CompareAttention",
        "SegmentWords", "ComputeHeadStatistics"}) {
    out->add_served_rpcs(rpc);
  }
  if (model.has_classifier()) {
    for (const char* rpc : {"Classify", "SweepAblation", "HeadImportance",
                            "PruneCurve", "Attribute"}) {
      out->add_served_rpcs(rpc);
    }
  }
  // Patch reads the logits of [CLS].
  if (model.head_kind() == HeadKind::kSequenceClassification) {
    out->add_served_rpcs("Patch");
  }
  for (const ReferenceStore::Info& info : served.references->List()) {
    FillReferenceStatistics(info, out->add_statistics());
  }
  out->set_identity(served.identity());
}

}  // namespace

absl::Status HandleGetModelInfo(const HandlerContext& ctx,
                                const v1::GetModelInfoRequest& request,
                                v1::GetModelInfoResponse* response) {
  if (request.model().empty()) {
    ASSIGN_OR_RETURN(const ServedModel* default_model, ctx.models->Find(""));
    for (const ServedModel* served : ctx.models->All()) {
      FillModelInfo(*served, served == default_model, response->add_models());
    }
  } else {
    ASSIGN_OR_RETURN(const ServedModel* served,
                     ctx.models->Find(request.model()));
    ASSIGN_OR_RETURN(const ServedModel* default_model, ctx.models->Find(""));
    FillModelInfo(*served, served == default_model, response->add_models());
  }
  const ServiceLimits& l = *ctx.limits;
  v1::ServerLimits* limits = response->mutable_limits();
  limits->set_max_inputs_per_call(l.max_inputs_per_call);
  limits->set_max_examples_per_sweep(l.max_examples_per_sweep);
  limits->set_max_masks_per_sweep(l.max_masks_per_sweep);
  limits->set_max_text_bytes(l.max_text_bytes);
  limits->set_max_message_bytes(l.max_message_bytes);
  limits->set_max_batch_size(l.max_batch_size);
  return absl::OkStatus();
}

}  // namespace bertology
