// SegmentWords: attention as a word segmenter (server/core/segment/ states
// the rule). Each example's maps of every layer are scored as its batch's
// forward pass returns them, so a dataset costs one pass per example and no
// map leaves the server.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/core/segment/word_segmentation.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/attention_passes.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

constexpr int kDefaultTopK = 5;

std::vector<std::string> Words(
    const google::protobuf::RepeatedPtrField<std::string>& words) {
  return std::vector<std::string>(words.begin(), words.end());
}

v1::CharacterPrediction ToProto(CharPrediction p) {
  switch (p) {
    case CharPrediction::kWordEnd:
      return v1::CHARACTER_PREDICTION_WORD_END;
    case CharPrediction::kWordInternal:
      return v1::CHARACTER_PREDICTION_WORD_INTERNAL;
    default:
      return v1::CHARACTER_PREDICTION_NONE;
  }
}

void FillBaseline(const SegmentScore& s, v1::SegmentationBaseline* out) {
  out->set_precision(s.precision);
  out->set_recall(s.recall);
  out->set_f1(s.f1);
  out->set_accuracy(s.accuracy);
  out->set_mcc(s.mcc);
  out->set_balanced_accuracy(s.balanced_accuracy);
  out->set_true_ends(s.true_ends);
  out->set_predicted_ends(s.predicted_ends);
  out->set_correct(s.correct);
}

void FillResult(const SegmentationScores& s, int truncated,
                v1::SegmentWordsResult* out) {
  out->set_num_layers(s.num_layers);
  out->set_num_heads(s.num_heads);
  out->set_examples(s.examples);
  out->set_truncated_examples(truncated);
  out->set_characters(s.characters);
  out->set_gold_ends(s.gold_ends);
  out->set_skipped_pieces(s.skipped_pieces);
  v1::SegmentationScores* scores = out->mutable_scores();
  const size_t n = s.f1.size();
  for (size_t k = 0; k < n; ++k) {
    scores->add_precision(static_cast<float>(s.precision[k]));
    scores->add_recall(static_cast<float>(s.recall[k]));
    scores->add_f1(static_cast<float>(s.f1[k]));
    scores->add_accuracy(static_cast<float>(s.accuracy[k]));
    scores->add_true_ends(s.true_ends[k]);
    scores->add_predicted_ends(s.predicted_ends[k]);
    scores->add_correct(s.correct[k]);
    scores->add_mcc(static_cast<float>(s.mcc[k]));
    scores->add_balanced_accuracy(static_cast<float>(s.balanced_accuracy[k]));
  }
  out->set_oracle_all_heads(s.oracle_all);
  out->set_oracle_top_heads(s.oracle_top);
  FillBaseline(s.always_next, out->mutable_always_next());
  FillBaseline(s.always_sep, out->mutable_always_sep());
  out->set_oracle_baselines(s.oracle_baselines);
  for (int r = 0; r < s.top_k; ++r) {
    v1::LayerHead* lh = out->add_best_heads();
    lh->set_layer(s.ranking[r] / s.num_heads);
    lh->set_head(s.ranking[r] % s.num_heads);
  }
}

}  // namespace

absl::Status HandleSegmentWords(
    const HandlerContext& ctx, const v1::SegmentWordsRequest& request,
    const EventStream<v1::SegmentWordsResponse>& stream) {
  StreamingCall<v1::SegmentWordsResponse> call(stream);
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  const BertConfig& c = model.config();
  const int layers = c.num_hidden_layers, heads = c.num_attention_heads;
  const ServiceLimits& limits = *ctx.limits;
  RETURN_IF_ERROR(CheckInputCount(limits, request.examples_size(), "examples"));
  if (request.top_k() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k is ", request.top_k(), ", negative"));
  }
  if (request.view_example() < 0 ||
      request.view_example() >= request.examples_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("view_example is ", request.view_example(),
                     ", not in [0, ", request.examples_size(), ")"));
  }
  ASSIGN_OR_RETURN(
      HeadMask mask,
      ParseHeadMask(request.head_mask(), layers, heads, AblationMode::kZero,
                    "head_mask", MaskReferences{served->references.get()}));
  // Every example is checked and encoded before any pass, so a bad one late
  // in the list costs no compute.
  std::vector<Encoding> encodings;
  std::vector<SegmentationExample> examples;
  encodings.reserve(request.examples_size());
  examples.reserve(request.examples_size());
  int truncated = 0;
  for (int i = 0; i < request.examples_size(); ++i) {
    const v1::SegmentedText& x = request.examples(i);
    const std::string field = absl::StrCat("examples[", i, "]");
    ASSIGN_OR_RETURN(Encoding e,
                     EncodeInput(model.tokenizer(), model.max_seq_len(),
                                 x.input(), field + ".input", limits));
    const std::vector<std::string> words_a = Words(x.words_a());
    const std::vector<std::string> words_b = Words(x.words_b());
    RETURN_IF_ERROR(
        CheckWords(x.input().text_a(), words_a, field + ".words_a"));
    if (!x.input().text_b().empty() || !words_b.empty()) {
      RETURN_IF_ERROR(
          CheckWords(x.input().text_b(), words_b, field + ".words_b"));
    }
    ASSIGN_OR_RETURN(SegmentationExample ex,
                     MakeSegmentationExample(e, words_a, words_b));
    truncated += e.truncated ? 1 : 0;
    encodings.push_back(std::move(e));
    examples.push_back(std::move(ex));
  }

  SegmentationAccumulator accumulator(layers, heads);
  std::vector<std::vector<CharPrediction>> view_predictions;
  const int view = request.view_example();
  RETURN_IF_ERROR(RunAttentionPasses(
      {{&model, &encodings}}, mask,
      {"SegmentWords", "examples", limits.max_batch_size, call.is_cancelled(),
       [&](int done, int total) { return call.Progress(done, total); }},
      [&](const AttentionPassRow& row) {
        const int i = row.input;
        return accumulator.Add(examples[i], row.maps[0], row.padded[0],
                               i == view ? &view_predictions : nullptr);
      }));
  const SegmentationScores scores =
      accumulator.Result(request.top_k() == 0 ? kDefaultTopK : request.top_k());
  v1::SegmentWordsResponse event;
  v1::SegmentWordsResult* result = event.mutable_result();
  FillResult(scores, truncated, result);
  // The view: the requested example under the best head (by MCC).
  v1::SegmentationView* v = result->mutable_view();
  v->set_example(view);
  const int best = scores.ranking[0];
  v->mutable_head()->set_layer(best / heads);
  v->mutable_head()->set_head(best % heads);
  for (size_t k = 0; k < examples[view].chars.size(); ++k) {
    const SegmentChar& ch = examples[view].chars[k];
    const Token& t = encodings[view].tokens[ch.position];
    const std::string& text = t.segment == 0
                                  ? request.examples(view).input().text_a()
                                  : request.examples(view).input().text_b();
    // The original character (the piece's text may be lower-cased or "##").
    v->add_characters(text.substr(t.byte_start, t.byte_end - t.byte_start));
    v->add_segment(t.segment);
    v->add_gold_end(ch.gold_end);
    v->add_predicted(ToProto(view_predictions[best][k]));
  }
  return call.Close(event);
}

}  // namespace bertology
