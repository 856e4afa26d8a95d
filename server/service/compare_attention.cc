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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/core/compare/attention_similarity.h"
#include "server/core/model/model.h"
#include "server/core/status_macros.h"
#include "server/service/attention_passes.h"
#include "server/service/attention_view.h"
#include "server/service/handlers.h"
#include "server/service/model_registry.h"
#include "server/service/proto_conversion.h"
#include "server/service/request_validation.h"

namespace bertology {
namespace {

constexpr absl::Duration kProgressInterval = absl::Milliseconds(100);

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

const FloatArray* LayerMaps(const ForwardOutput& output, int layer) {
  auto it = output.attentions.find(layer);
  if (it == output.attentions.end() || it->second.shape.size() != 4) {
    return nullptr;
  }
  return &it->second;
}

// The [t x t] real-token block of head `head` of row `row` of [B, H, P, P].
std::vector<float> HeadBlock(const FloatArray& maps, int row, int head, int t) {
  const int64_t heads = maps.shape[1], p = maps.shape[3];
  const float* base = maps.data.data() + (row * heads + head) * p * p;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(t) * t);
  for (int i = 0; i < t; ++i) {
    out.insert(out.end(), base + i * p, base + i * p + t);
  }
  return out;
}

}  // namespace

absl::Status HandleCompareAttention(
    const HandlerContext& ctx, const v1::CompareAttentionRequest& request,
    const EventStream<v1::CompareAttentionResponse>& stream) {
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
  const int vocab_a = model_a.tokenizer().vocab().size();
  const int vocab_b = model_b.tokenizer().vocab().size();
  if (vocab_a != vocab_b) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model_a '", served_a->name, "' has a vocabulary of ", vocab_a,
        " tokens, model_b '", served_b->name, "' of ", vocab_b));
  }
  const ServiceLimits& limits = *ctx.limits;
  if (request.inputs().empty()) {
    return absl::InvalidArgumentError("inputs is empty");
  }
  // A limit, as in AnalyzeHeads: RESOURCE_EXHAUSTED naming the flag.
  if (request.inputs_size() > limits.max_examples_per_sweep) {
    return absl::ResourceExhaustedError(
        absl::StrCat("inputs has ", request.inputs_size(),
                     " entries, over the limit --max_examples_per_sweep=",
                     limits.max_examples_per_sweep));
  }
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

  ForwardOptions options;
  for (int l = 0; l < layers; ++l) options.attention_layers.push_back(l);
  // Only the maps are read: every head kind (a bare encoder too) is served.
  options.compute_logits = false;
  AttentionSimilarityAccumulator accumulator(layers, heads);
  v1::CompareAttentionResponse final_event;
  v1::CompareAttentionResult* result = final_event.mutable_result();
  const int total = static_cast<int>(enc_a.size());
  const int batch = std::max(1, limits.max_batch_size);
  absl::Time last_progress = absl::InfinitePast();
  for (int begin = 0, end = 0; begin < total; begin = end) {
    if (stream.is_cancelled && stream.is_cancelled()) {
      return absl::CancelledError(
          absl::StrCat("CompareAttention cancelled after ", begin, " of ",
                       total, " inputs"));
    }
    end = AttentionPassEnd(enc_a, begin, batch,
                           2 * static_cast<int64_t>(layers) * heads);
    std::vector<ModelRow> rows_a, rows_b;
    for (int i = begin; i < end; ++i) {
      rows_a.push_back({&enc_a[i], &mask});
      rows_b.push_back({&enc_b[i], &mask});
    }
    ASSIGN_OR_RETURN(ForwardOutput out_a, model_a.Forward(rows_a, options));
    ASSIGN_OR_RETURN(ForwardOutput out_b, model_b.Forward(rows_b, options));
    std::vector<const FloatArray*> layer_a(layers), layer_b(layers);
    for (int l = 0; l < layers; ++l) {
      layer_a[l] = LayerMaps(out_a, l);
      layer_b[l] = LayerMaps(out_b, l);
      if (layer_a[l] == nullptr || layer_b[l] == nullptr) {
        return absl::InternalError(absl::StrCat(
            "a model returned no [B, H, T, T] attention for layer ", l));
      }
    }
    const int64_t pa = layer_a[0]->shape[3], pb = layer_b[0]->shape[3];
    for (int r = 0; r < end - begin; ++r) {
      std::vector<const float*> maps_a(layers), maps_b(layers);
      for (int l = 0; l < layers; ++l) {
        maps_a[l] = layer_a[l]->data.data() + r * heads * pa * pa;
        maps_b[l] = layer_b[l]->data.data() + r * heads * pb * pb;
      }
      const Encoding& e = enc_a[begin + r];
      const int t = static_cast<int>(e.tokens.size());
      RETURN_IF_ERROR(accumulator.Add(maps_a, pa, maps_b, pb, t));
      if (request.with_detail() && begin + r == request.detail_example()) {
        const int dl = request.detail_head().layer();
        const int dh = request.detail_head().head();
        const std::vector<float> a = HeadBlock(*layer_a[dl], r, dh, t);
        const std::vector<float> b = HeadBlock(*layer_b[dl], r, dh, t);
        std::vector<float> diff(a.size());
        for (size_t k = 0; k < a.size(); ++k) diff[k] = b[k] - a[k];
        v1::AttentionDifference* d = result->mutable_detail();
        d->set_example(begin + r);
        d->set_layer(dl);
        d->set_head(dh);
        for (const Token& token : e.tokens) FillToken(token, d->add_tokens());
        d->set_size(t);
        d->set_map_a(EncodeFloat32(a));
        d->set_map_b(EncodeFloat32(b));
        d->set_difference(EncodeFloat32(diff));
      }
    }
    const absl::Time now = absl::Now();
    if (end < total && now - last_progress < kProgressInterval) continue;
    last_progress = now;
    v1::CompareAttentionResponse event;
    event.mutable_progress()->set_done(end);
    event.mutable_progress()->set_total(total);
    if (!stream.write(event)) {
      return absl::CancelledError("the client went away");
    }
  }
  result->set_model_a(served_a->name);
  result->set_model_b(served_b->name);
  result->set_num_layers(layers);
  result->set_num_heads(heads);
  result->set_examples(accumulator.examples());
  result->set_truncated_examples(truncated);
  for (double v : accumulator.Mean()) result->add_cosine_similarity(v);
  if (!stream.write(final_event)) {
    return absl::CancelledError("the client went away");
  }
  return absl::OkStatus();
}

}  // namespace bertology
