// Core values into response messages (no tensors, no gRPC).
#ifndef BERTOLOGY_SERVICE_CONVERT_PROTO_CONVERSION_H_
#define BERTOLOGY_SERVICE_CONVERT_PROTO_CONVERSION_H_

#include <string>
#include <vector>

#include "bertology/v1/bertology.pb.h"
#include "common/head_mask.h"
#include "server/core/tokenizer/tokenizer.h"
#include "server/service/convert/attention_view.h"

namespace bertology {

void FillToken(const Token& token, v1::Token* out);

// Logits, softmax probabilities, argmax label and its name (empty when the
// model names no labels), plus the input's length and truncation flag.
void FillPrediction(const std::vector<float>& logits,
                    const std::vector<std::string>& label_names,
                    const Encoding& encoding, v1::Prediction* out);

// A token classifier's prediction: `logits` is [n, C] row-major for the n
// tokens of `encoding`; one TokenPrediction per token (first_piece marks the
// piece HF's token-classification examples score), plus length and
// truncation flag. The sequence-level fields stay empty.
void FillTokenPredictions(const std::vector<float>& logits,
                          const std::vector<std::string>& label_names,
                          const Encoding& encoding, v1::Prediction* out);

// The units a map or a score list is given in: one per token, or (`words`)
// WordSpans' words.
std::vector<WordSpan> UnitSpans(const Encoding& encoding, bool words);

// One AttentionUnit per span: a special token or a one-piece unit is its
// piece; a word of several pieces is its text as written in `input`.
void FillAttentionUnits(
    const Encoding& encoding, const std::vector<WordSpan>& spans,
    const v1::TextInput& input,
    google::protobuf::RepeatedPtrField<v1::AttentionUnit>* out);

void FillLayerHeads(const std::vector<LayerHead>& heads,
                    google::protobuf::RepeatedPtrField<v1::LayerHead>* out);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_CONVERT_PROTO_CONVERSION_H_
