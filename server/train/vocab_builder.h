// Builds a WordPiece vocabulary from training text, for models trained from
// scratch (no pretrained vocabulary exists here).
#ifndef BERTOLOGY_TRAIN_VOCAB_BUILDER_H_
#define BERTOLOGY_TRAIN_VOCAB_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

struct VocabBuilderOptions {
  bool do_lower_case = true;
  // Whole words seen at least this often get their own entry; every
  // character seen gets one as a word start and one as "##" continuation,
  // so any text made of known characters tokenizes without [UNK].
  int min_word_count = 5;
  int max_words = 20000;
};

// [PAD], [UNK], [CLS], [SEP], [MASK] (ids 0-4, BERT's usual order), then the
// characters, their "##" forms, then frequent words; deterministic (sorted by
// count, then by text). Errors: invalid UTF-8 (naming the text's index).
absl::StatusOr<std::vector<std::string>> BuildVocab(
    const std::vector<std::string>& texts, const VocabBuilderOptions& options);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_VOCAB_BUILDER_H_
