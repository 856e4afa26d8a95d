// AnalyzeHeads: per-head attention statistics and pattern classes over a
// set of inputs (server/core/analysis/), and with per_map_classes the share
// of each head's maps in each class. The maps of every layer are reduced
// as each batch's forward pass returns them, so a dataset costs one pass per
// example however many heads, and no map leaves the server.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/analysis/head_stats.h"
#include "server/core/model/model.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/attention_passes.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

void Fill(const std::vector<double>& values,
          google::protobuf::RepeatedField<float>* out) {
  out->Reserve(static_cast<int>(values.size()));
  for (double v : values) out->Add(static_cast<float>(v));
}

void FillResult(const HeadStats& s, int truncated, bool per_map,
                v1::AnalyzeHeadsResult* out) {
  out->set_num_layers(s.num_layers);
  out->set_num_heads(s.num_heads);
  out->set_examples(s.examples);
  out->set_truncated_examples(truncated);
  out->set_examples_with_match(s.examples_with_match);
  out->set_pair_examples(s.pair_examples);
  out->set_own_segment_share(static_cast<float>(s.own_segment_share));
  v1::HeadStatistics* stats = out->mutable_stats();
  Fill(s.to_cls, stats->mutable_to_cls());
  Fill(s.to_sep, stats->mutable_to_sep());
  Fill(s.to_punctuation, stats->mutable_to_punctuation());
  Fill(s.to_self, stats->mutable_to_self());
  Fill(s.to_previous, stats->mutable_to_previous());
  Fill(s.to_next, stats->mutable_to_next());
  Fill(s.entropy, stats->mutable_entropy());
  Fill(s.cross_segment_match, stats->mutable_cross_segment_match());
  Fill(s.mean_distance, stats->mutable_mean_distance());
  Fill(s.to_own_segment, stats->mutable_to_own_segment());
  Fill(s.vertical, stats->mutable_vertical());
  Fill(s.diagonal, stats->mutable_diagonal());
  for (AttentionPatternKind k : s.pattern) {
    // AttentionPatternKind's values are the proto enum's.
    stats->add_pattern(static_cast<v1::AttentionPattern>(k));
  }
  // [layers x heads x 5], the class index AttentionPattern - 1: the same
  // layout as HeadStats::map_pattern_share.
  if (per_map) Fill(s.map_pattern_share, out->mutable_map_pattern_share());
}

}  // namespace

absl::Status HandleAnalyzeHeads(
    const HandlerContext& ctx, const v1::AnalyzeHeadsRequest& request,
    const EventStream<v1::AnalyzeHeadsResponse>& stream) {
  StreamingCall<v1::AnalyzeHeadsResponse> call(stream);
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  const BertConfig& c = model.config();
  const int layers = c.num_hidden_layers, heads = c.num_attention_heads;
  const ServiceLimits& limits = *ctx.limits;
  RETURN_IF_ERROR(CheckInputCount(limits, request.inputs_size(), "inputs"));
  ASSIGN_OR_RETURN(
      HeadMask mask,
      ParseHeadMask(request.head_mask(), layers, heads, AblationMode::kZero,
                    "head_mask", MaskReferences{served->references.get()}));
  // Every input is validated before any pass, so a bad one late in the
  // list costs no compute.
  std::vector<Encoding> encodings;
  encodings.reserve(request.inputs_size());
  int truncated = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(
        Encoding e,
        EncodeInput(model.tokenizer(), model.max_seq_len(), request.inputs(i),
                    absl::StrCat("inputs[", i, "]"), limits));
    truncated += e.truncated ? 1 : 0;
    encodings.push_back(std::move(e));
  }

  HeadStatsAccumulator accumulator(layers, heads,
                                   model.tokenizer().specials().unk_id);
  RETURN_IF_ERROR(RunAttentionPasses(
      {{&model, &encodings}}, mask,
      {"AnalyzeHeads", "examples", limits.max_batch_size, call.is_cancelled(),
       [&](int done, int total) { return call.Progress(done, total); }},
      [&](const AttentionPassRow& row) {
        return accumulator.Add(encodings[row.input], row.maps[0],
                               row.padded[0]);
      }));
  v1::AnalyzeHeadsResponse event;
  FillResult(accumulator.Result(), truncated, request.per_map_classes(),
             event.mutable_result());
  return call.Close(event);
}

}  // namespace bertology
