#include "server/train/starting_point.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/tokenizer/vocab.h"

namespace bertology {

absl::StatusOr<StartingPoint> LoadStartingPoint(const std::string& dir) {
  StartingPoint start;
  ASSIGN_OR_RETURN(start.checkpoint, Checkpoint::Load(dir));
  ASSIGN_OR_RETURN(Vocab vocab, Vocab::FromFile(start.checkpoint.vocab_file));
  start.vocab_tokens = vocab.tokens();
  return start;
}

absl::Status CopyStartingWeights(const StartingPoint& start,
                                 BertForSequenceClassificationImpl* module) {
  const StateDict& from = start.checkpoint.weights;
  StateDict weights;
  for (const auto& item : module->named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    const bool encoder = absl::StartsWith(name, "bert.embeddings.") ||
                         absl::StartsWith(name, "bert.encoder.");
    auto it = from.find(name);
    if (encoder ||
        (it != from.end() && it->second.sizes().equals(item.value().sizes()))) {
      if (it == from.end()) {
        return absl::NotFoundError(
            absl::StrCat(start.checkpoint.weights_file, ": no weight ", name));
      }
      weights[name] = it->second;
    } else {
      weights[name] = item.value().detach().clone();
    }
  }
  absl::Status st = LoadStateDict(weights, module);
  if (!st.ok()) {
    return absl::Status(st.code(), absl::StrCat(start.checkpoint.weights_file,
                                                ": ", st.message()));
  }
  return absl::OkStatus();
}

}  // namespace bertology
