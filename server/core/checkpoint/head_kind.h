// What the server computes on top of a checkpoint's encoder: the head kind
// and the BertHead summary of a checkpoint (no libtorch, so the service can
// read it). bert_head.h decides it from the weights.
#ifndef BERTOLOGY_CORE_HEAD_KIND_H_
#define BERTOLOGY_CORE_HEAD_KIND_H_

#include <string>
#include <vector>

#include "server/core/checkpoint/model_family.h"

namespace bertology {

enum class HeadKind {
  kEncoder,                 // the encoder only: no logits
  kSequenceClassification,  // tanh(pooler([CLS])) -> classifier: [B, C]
  kTokenClassification,     // classifier on every position: [B, T, C]
};

// "encoder", "sequence_classification", "token_classification".
const char* HeadKindName(HeadKind kind);

struct BertHead {
  // HF's class name: config.json's architectures[0], or inferred from the
  // keys when the config names none (see ResolveBertHead).
  std::string architecture;
  HeadKind kind = HeadKind::kEncoder;
  int num_labels = 0;        // classifier rows; 0 for kEncoder
  bool uses_pooler = false;  // kSequenceClassification only
  // Between the first token's dense layer and the classifier (BERT's pooler,
  // RoBERTa's and ELECTRA's classifier.dense, DistilBERT's pre_classifier).
  PoolerActivation pooler_activation = PoolerActivation::kTanh;
  // Keys present in the file that the server does not compute with, sorted.
  std::vector<std::string> unused_keys;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_HEAD_KIND_H_
