#include "server/service/proto_conversion.h"

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

void FillPrediction(const std::vector<float>& logits,
                    const std::vector<std::string>& label_names,
                    const Encoding& encoding, v1::Prediction* out) {
  out->set_truncated(encoding.truncated);
  out->set_num_tokens(static_cast<int>(encoding.tokens.size()));
  if (logits.empty()) return;
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max));
  int best = 0;
  for (int i = 0; i < static_cast<int>(logits.size()); ++i) {
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

void FillLayerHeads(const std::vector<LayerHead>& heads,
                    google::protobuf::RepeatedPtrField<v1::LayerHead>* out) {
  for (const LayerHead& lh : heads) {
    v1::LayerHead* p = out->Add();
    p->set_layer(lh.layer);
    p->set_head(lh.head);
  }
}

}  // namespace bertology
