#include "server/service/convert/proto_conversion.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace bertology {

void FillToken(const Token& token, v1::Token* out) {
  out->set_text(token.text);
  out->set_id(token.id);
  out->set_segment(token.segment);
  out->set_char_start(token.char_start);
  out->set_char_end(token.char_end);
  out->set_byte_start(token.byte_start);
  out->set_byte_end(token.byte_end);
  out->set_word_index(token.word_index);
  out->set_special(token.special);
}

namespace {

// Softmax and argmax (first maximum on ties) of one row of `n` logits.
template <typename Out>
void FillScores(const float* logits, int n,
                const std::vector<std::string>& label_names, Out* out) {
  const float max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int i = 0; i < n; ++i)
    sum += std::exp(static_cast<double>(logits[i] - max));
  int best = 0;
  for (int i = 0; i < n; ++i) {
    out->add_logits(logits[i]);
    out->add_probabilities(static_cast<float>(
        std::exp(static_cast<double>(logits[i] - max)) / sum));
    if (logits[i] > logits[best]) best = i;
  }
  out->set_label(best);
  if (best < static_cast<int>(label_names.size())) {
    out->set_label_name(label_names[best]);
  }
}

}  // namespace

void FillPrediction(const std::vector<float>& logits,
                    const std::vector<std::string>& label_names,
                    const Encoding& encoding, v1::Prediction* out) {
  out->set_truncated(encoding.truncated);
  out->set_num_tokens(static_cast<int>(encoding.tokens.size()));
  if (logits.empty()) return;
  FillScores(logits.data(), static_cast<int>(logits.size()), label_names, out);
}

void FillTokenPredictions(const std::vector<float>& logits,
                          const std::vector<std::string>& label_names,
                          const Encoding& encoding, v1::Prediction* out) {
  out->set_truncated(encoding.truncated);
  const int n = static_cast<int>(encoding.tokens.size());
  out->set_num_tokens(n);
  if (n == 0 || logits.empty()) return;
  const int classes = static_cast<int>(logits.size()) / n;
  int previous_word = -1;
  for (int t = 0; t < n; ++t) {
    const Token& token = encoding.tokens[t];
    v1::TokenPrediction* p = out->add_tokens();
    p->set_token_index(t);
    p->set_text(token.text);
    p->set_word_index(token.word_index);
    p->set_first_piece(!token.special && token.word_index != previous_word);
    if (!token.special) previous_word = token.word_index;
    FillScores(logits.data() + static_cast<size_t>(t) * classes, classes,
               label_names, p);
  }
}

void FillLayerHeads(const std::vector<LayerHead>& heads,
                    google::protobuf::RepeatedPtrField<v1::LayerHead>* out) {
  for (const LayerHead& lh : heads) {
    v1::LayerHead* p = out->Add();
    p->set_layer(lh.layer);
    p->set_head(lh.head);
  }
}

std::vector<WordSpan> UnitSpans(const Encoding& encoding, bool words) {
  if (words) return WordSpans(encoding);
  std::vector<WordSpan> spans;
  const int t = static_cast<int>(encoding.tokens.size());
  for (int i = 0; i < t; ++i) spans.push_back(WordSpan{i, 1});
  return spans;
}

void FillAttentionUnits(
    const Encoding& encoding, const std::vector<WordSpan>& spans,
    const v1::TextInput& input,
    google::protobuf::RepeatedPtrField<v1::AttentionUnit>* out) {
  for (const WordSpan& span : spans) {
    const Token& first = encoding.tokens[span.first_token];
    const Token& last = encoding.tokens[span.first_token + span.num_tokens - 1];
    v1::AttentionUnit* unit = out->Add();
    unit->set_segment(first.segment);
    unit->set_first_token(span.first_token);
    unit->set_num_tokens(span.num_tokens);
    unit->set_special(first.special);
    if (first.special || span.num_tokens == 1) {
      unit->set_text(first.text);
    }
    if (!first.special && span.num_tokens > 1) {
      // The word as written in the input.
      const std::string& text =
          first.segment == 0 ? input.text_a() : input.text_b();
      unit->set_text(
          text.substr(first.byte_start, last.byte_end - first.byte_start));
    }
  }
}

}  // namespace bertology
