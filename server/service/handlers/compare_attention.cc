// CompareAttention: per-head cosine similarity of two models' post-mask
// attention maps on the same inputs (server/core/compare/), and optionally
// one head's maps and difference on one input. Each pass runs the same rows
// through both models and reduces the maps at once, so no map leaves the
// server except the one detail.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/float_codec.h"
#include "common/status_macros.h"
#include "server/core/compare/attention_similarity.h"
#include "server/core/model/model.h"
#include "server/service/convert/attention_view.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/attention_passes.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

// Why the two encodings of input `field` differ, or "" when they are equal.
// Differing ids mean the maps' rows would not be the same tokens, so the
// comparison would be meaningless.
std::string EncodingDifference(const Encoding& a, const Encoding& b) {
  if (a.tokens.size() != b.tokens.size()) {
    return absl::StrCat("model_a gives ", a.tokens.size(), " tokens, model_b ",
                        b.tokens.size());
  }
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    const Token &x = a.tokens[i], &y = b.tokens[i];
    if (x.id != y.id || x.segment != y.segment) {
      return absl::StrCat("token ", i, " is '", x.text, "' (id ", x.id,
                          ") in model_a and '", y.text, "' (id ", y.id,
                          ") in model_b");
    }
  }
  return "";
}

// The [t x t] real-token block of a head's [P, P] map at `map`.
std::vector<float> HeadBlock(const float* map, int64_t p, int t) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(t) * t);
  for (int i = 0; i < t; ++i)
    out.insert(out.end(), map + i * p, map + i * p + t);
  return out;
}

}  // namespace

absl::Status HandleCompareAttention(
    const HandlerContext& ctx, const v1::CompareAttentionRequest& request,
    const EventStream<v1::CompareAttentionResponse>& stream) {
  StreamingCall<v1::CompareAttentionResponse> call(stream);
  ASSIGN_OR_RETURN(const ServedModel* served_a,
                   ctx.models->Find(request.model_a()));
  ASSIGN_OR_RETURN(const ServedModel* served_b,
                   ctx.models->Find(request.model_b()));
  const Model& model_a = *served_a->model;
  const Model& model_b = *served_b->model;
  const BertConfig& ca = model_a.config();
  const BertConfig& cb = model_b.config();
  const int layers = ca.num_hidden_layers, heads = ca.num_attention_heads;
  if (cb.num_hidden_layers != layers || cb.num_attention_heads != heads) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model_a '", served_a->name, "' has ", layers, " layers x ", heads,
        " heads, model_b '", served_b->name, "' has ", cb.num_hidden_layers,
        " x ", cb.num_attention_heads));
  }
  const int vocab_a = model_a.tokenizer().vocab_size();
  const int vocab_b = model_b.tokenizer().vocab_size();
  if (vocab_a != vocab_b) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model_a '", served_a->name, "' has a vocabulary of ", vocab_a,
        " tokens, model_b '", served_b->name, "' of ", vocab_b));
  }
  const ServiceLimits& limits = *ctx.limits;
  RETURN_IF_ERROR(CheckInputCount(limits, request.inputs_size(), "inputs"));
  if (request.with_detail()) {
    if (request.detail_example() < 0 ||
        request.detail_example() >= request.inputs_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("detail_example=", request.detail_example(),
                       " is not in [0, ", request.inputs_size(), ")"));
    }
    if (request.detail_head().layer() < 0 ||
        request.detail_head().layer() >= layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("detail_head.layer=", request.detail_head().layer(),
                       " is not in [0, ", layers, ")"));
    }
    if (request.detail_head().head() < 0 ||
        request.detail_head().head() >= heads) {
      return absl::InvalidArgumentError(
          absl::StrCat("detail_head.head=", request.detail_head().head(),
                       " is not in [0, ", heads, ")"));
    }
  }
  ASSIGN_OR_RETURN(HeadMask mask,
                   ParseHeadMask(request.head_mask(), layers, heads,
                                 AblationMode::kZero, "head_mask"));
  // Every input is encoded by both tokenizers and compared before any pass,
  // so a bad or mismatched input late in the list costs no compute.
  std::vector<Encoding> enc_a, enc_b;
  enc_a.reserve(request.inputs_size());
  enc_b.reserve(request.inputs_size());
  int truncated = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const std::string field = absl::StrCat("inputs[", i, "]");
    ASSIGN_OR_RETURN(Encoding a,
                     EncodeInput(model_a.tokenizer(), model_a.max_seq_len(),
                                 request.inputs(i), field, limits));
    ASSIGN_OR_RETURN(Encoding b,
                     EncodeInput(model_b.tokenizer(), model_b.max_seq_len(),
                                 request.inputs(i), field, limits));
    const std::string diff = EncodingDifference(a, b);
    if (!diff.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          field, " is tokenized differently by model_a '", served_a->name,
          "' and model_b '", served_b->name, "': ", diff));
    }
    truncated += a.truncated ? 1 : 0;
    enc_a.push_back(std::move(a));
    enc_b.push_back(std::move(b));
  }

  // Only the maps are read: every head kind (a bare encoder too) is served.
  AttentionSimilarityAccumulator accumulator(layers, heads);
  v1::CompareAttentionResponse final_event;
  v1::CompareAttentionResult* result = final_event.mutable_result();
  AttentionPassCall pass_call{
      "CompareAttention", "inputs", limits.max_batch_size, call.is_cancelled(),
      [&](int done, int total) { return call.Progress(done, total); }};
  RETURN_IF_ERROR(RunAttentionPasses(
      {{&model_a, &enc_a}, {&model_b, &enc_b}}, mask, pass_call,
      [&](const AttentionPassRow& row) {
        const Encoding& e = enc_a[row.input];
        const int t = static_cast<int>(e.tokens.size());
        const int64_t pa = row.padded[0], pb = row.padded[1];
        RETURN_IF_ERROR(accumulator.Add(row.maps[0], pa, row.maps[1], pb, t));
        if (!request.with_detail() || row.input != request.detail_example()) {
          return absl::OkStatus();
        }
        const int dl = request.detail_head().layer();
        const int dh = request.detail_head().head();
        const std::vector<float> a =
            HeadBlock(row.maps[0][dl] + dh * pa * pa, pa, t);
        const std::vector<float> b =
            HeadBlock(row.maps[1][dl] + dh * pb * pb, pb, t);
        std::vector<float> diff(a.size());
        for (size_t k = 0; k < a.size(); ++k) diff[k] = b[k] - a[k];
        v1::AttentionDifference* d = result->mutable_detail();
        d->set_example(row.input);
        d->set_layer(dl);
        d->set_head(dh);
        for (const Token& token : e.tokens) FillToken(token, d->add_tokens());
        d->set_size(t);
        d->set_map_a(EncodeFloat32(a));
        d->set_map_b(EncodeFloat32(b));
        d->set_difference(EncodeFloat32(diff));
        return absl::OkStatus();
      }));
  result->set_model_a(served_a->name);
  result->set_model_b(served_b->name);
  result->set_num_layers(layers);
  result->set_num_heads(heads);
  result->set_examples(accumulator.examples());
  result->set_truncated_examples(truncated);
  for (double v : accumulator.Mean()) result->add_cosine_similarity(v);
  return call.Close(final_event);
}

}  // namespace bertology
