// GetAttention: post-mask attention maps of the selected heads for one
// input, at token or word granularity, plus the prediction. Runs its own
// forward pass (not the batcher): it needs the maps, not just logits.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/float_codec.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/service/convert/attention_view.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

// The bytes of one head's map from a layer's [1, H, T, T] maps: the
// row-major [T x T] token map, encoded straight from the model's output, or
// its word-level map.
std::string EncodeHeadMap(const FloatArray& layer_maps, int head,
                          const std::vector<WordSpan>* words,
                          v1::AttentionEncoding encoding) {
  const size_t t = static_cast<size_t>(layer_maps.shape[3]);
  const float* data = layer_maps.data.data() + head * t * t;
  const bool half = encoding == v1::ATTENTION_ENCODING_FLOAT16;
  if (words == nullptr) {
    return half ? EncodeFloat16(data, t * t) : EncodeFloat32(data, t * t);
  }
  const std::vector<float> map = WordLevelMap(
      std::vector<float>(data, data + t * t), static_cast<int>(t), *words);
  return half ? EncodeFloat16(map) : EncodeFloat32(map);
}

}  // namespace

absl::Status HandleGetAttention(const HandlerContext& ctx,
                                const v1::GetAttentionRequest& request,
                                v1::GetAttentionResponse* response) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  const BertConfig& c = model.config();
  const int layers = c.num_hidden_layers, heads = c.num_attention_heads;
  ASSIGN_OR_RETURN(std::vector<int> layer_list,
                   ParseIndexSelection(request.layers(), layers, "layers"));
  ASSIGN_OR_RETURN(std::vector<int> head_list,
                   ParseIndexSelection(request.heads(), heads, "heads"));
  const v1::Granularity granularity =
      request.granularity() == v1::GRANULARITY_UNSPECIFIED
          ? v1::GRANULARITY_TOKEN
          : request.granularity();
  if (granularity != v1::GRANULARITY_TOKEN &&
      granularity != v1::GRANULARITY_WORD) {
    return absl::InvalidArgumentError(
        absl::StrCat("granularity=", static_cast<int>(request.granularity()),
                     " is not a known Granularity"));
  }
  const v1::AttentionEncoding encoding_kind =
      request.encoding() == v1::ATTENTION_ENCODING_UNSPECIFIED
          ? v1::ATTENTION_ENCODING_FLOAT32
          : request.encoding();
  if (encoding_kind != v1::ATTENTION_ENCODING_FLOAT32 &&
      encoding_kind != v1::ATTENTION_ENCODING_FLOAT16) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoding=", static_cast<int>(request.encoding()),
                     " is not a known AttentionEncoding"));
  }
  ASSIGN_OR_RETURN(
      HeadMask mask,
      ParseHeadMask(request.head_mask(), layers, heads, AblationMode::kZero,
                    "head_mask", MaskReferences{served->references.get()}));
  ASSIGN_OR_RETURN(Encoding encoding,
                   EncodeInput(model.tokenizer(), model.max_seq_len(),
                               request.input(), "input", *ctx.limits));

  ForwardOptions options;
  options.attention_layers = layer_list;
  options.compute_logits = model.has_classifier();
  ASSIGN_OR_RETURN(ForwardOutput output,
                   model.Forward({ModelRow{&encoding, &mask}}, options));

  response->set_model(served->name);
  response->set_truncated(encoding.truncated);
  response->set_granularity(granularity);
  response->set_encoding(encoding_kind);
  for (const Token& token : encoding.tokens) {
    FillToken(token, response->add_tokens());
  }
  const int t = static_cast<int>(encoding.tokens.size());
  const std::vector<WordSpan> spans =
      UnitSpans(encoding, granularity == v1::GRANULARITY_WORD);
  FillAttentionUnits(encoding, spans, request.input(),
                     response->mutable_units());
  response->set_size(static_cast<int>(spans.size()));

  for (int layer : layer_list) {
    auto it = output.attentions.find(layer);
    if (it == output.attentions.end()) {
      return absl::InternalError(
          absl::StrCat("the model returned no attention for layer ", layer));
    }
    for (int head : head_list) {
      v1::AttentionMap* out = response->add_maps();
      out->set_layer(layer);
      out->set_head(head);
      out->set_data(
          EncodeHeadMap(it->second, head,
                        granularity == v1::GRANULARITY_WORD ? &spans : nullptr,
                        encoding_kind));
    }
  }
  if (model.has_classifier() && !output.logits.data.empty()) {
    // Row 0 of [1, C], or of [1, T, C] (one row: T is its own length).
    if (model.head_kind() == HeadKind::kTokenClassification) {
      FillTokenPredictions(output.logits.data, c.id2label, encoding,
                           response->mutable_prediction());
    } else {
      FillPrediction(output.logits.data, c.id2label, encoding,
                     response->mutable_prediction());
    }
  }
  return absl::OkStatus();
}

}  // namespace bertology
