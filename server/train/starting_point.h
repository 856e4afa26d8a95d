// A model directory the classifier is fine-tuned from (bertology-train
// --init_from), e.g. the masked-LM pretraining's output: its architecture,
// vocabulary, tokenizer settings and encoder weights. Internal to
// bertology-train.
#ifndef BERTOLOGY_TRAIN_STARTING_POINT_H_
#define BERTOLOGY_TRAIN_STARTING_POINT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/checkpoint/checkpoint.h"
#include "server/core/model/bert_model.h"

namespace bertology {

struct StartingPoint {
  Checkpoint checkpoint;  // any BERT head the server loads
  std::vector<std::string> vocab_tokens;
};

// Reads `dir` as the server does (errors name the file and the fault).
absl::StatusOr<StartingPoint> LoadStartingPoint(const std::string& dir);

// Copies the starting point's bert.embeddings.* and bert.encoder.* weights
// into `module`, which must have been built from its config; every one must
// be present with its shape. The pooler and classifier keep the values they
// have (their initialisation) unless the starting point has them with the
// same shapes (a classifier fine-tuned again).
absl::Status CopyStartingWeights(const StartingPoint& start,
                                 BertForSequenceClassificationImpl* module);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_STARTING_POINT_H_
