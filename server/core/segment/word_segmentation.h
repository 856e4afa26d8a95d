// Attention as a word segmenter (study 1 of ../shared/BRIEF.md: in a
// character model, a character at the end of a word attends to [SEP], one
// inside a word to the next character).
//
// The rule, per head, for each character token i (a non-special piece
// covering exactly one code point of its segment; other pieces are skipped
// and never scored), with j the argmax of row i of the head's post-mask map
// over the example's real tokens (ties: the lowest j):
//   predicted WORD END       iff token j is a [SEP] (either one);
//   predicted WORD INTERNAL  iff j = i + 1 and token i + 1 is a character
//                            token of the same segment;
//   otherwise NO PREDICTION  (neither; counts as "not an end").
// The prediction reads the attention only, never the gold words: the
// issue's "or out of the word" would need the gold boundary to decide, and
// would credit a plain next-token head with a perfect score (at a word end
// the next token is outside the word).
// Gold: the last character of each word is a word end, the others are
// word-internal. Per head: precision, recall and F1 of WORD END over the
// scored characters; accuracy = the share of characters whose prediction
// is their gold class (NO PREDICTION is always wrong). Oracle: the share of
// characters for which at least one head (of all heads, or of the top k by
// F1) is right.
#ifndef BERTOLOGY_CORE_SEGMENT_WORD_SEGMENTATION_H_
#define BERTOLOGY_CORE_SEGMENT_WORD_SEGMENTATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

enum class CharPrediction { kNone = 0, kWordEnd = 1, kWordInternal = 2 };

// One scored character of an example.
struct SegmentChar {
  int position = 0;  // token index in the encoding
  bool gold_end = false;
  bool next_is_char = false;  // token position+1 is a character token of
                              // the same segment
};

struct SegmentationExample {
  int length = 0;            // real tokens T
  std::vector<bool> is_sep;  // [T]
  std::vector<SegmentChar> chars;
  int skipped_pieces = 0;  // non-special pieces that are not one char
};

// INVALID_ARGUMENT naming `field` unless `words` is non-empty, has no empty
// word and concatenates to `text` exactly.
absl::Status CheckWords(const std::string& text,
                        const std::vector<std::string>& words,
                        const std::string& field);

// The scored characters of `encoding` (of text_a's `words_a` and, for a
// pair, text_b's `words_b`; both already checked with CheckWords).
absl::StatusOr<SegmentationExample> MakeSegmentationExample(
    const Encoding& encoding, const std::vector<std::string>& words_a,
    const std::vector<std::string>& words_b);

// The rule above for one head: `map` is its [padded x padded] row-major
// map, the example's tokens first. One prediction per example.chars.
std::vector<CharPrediction> PredictCharacters(const SegmentationExample& ex,
                                              const float* map, int64_t padded);

struct SegmentationScores {
  int num_layers = 0, num_heads = 0;
  int examples = 0;
  int64_t characters = 0, gold_ends = 0, skipped_pieces = 0;
  // Row-major [layers x heads].
  std::vector<int64_t> true_ends, predicted_ends, correct;
  // precision NaN where a head predicts no end; recall NaN without gold
  // ends; F1 = 2tp / (2tp + fp + fn), NaN when that is 0/0; accuracy NaN
  // without characters.
  std::vector<double> precision, recall, f1, accuracy;
  // Head indices (l * heads + h) by F1 descending, then accuracy
  // descending, then index ascending (NaN last); all heads.
  std::vector<int> ranking;
  double oracle_all = 0;  // share of characters some head gets right
  double oracle_top = 0;  // the same over ranking's first top_k heads
  int top_k = 0;
};

// Accumulates examples; keeps one bit per (character, head) so the oracle
// over the best heads can be taken once the ranking is known.
class SegmentationAccumulator {
 public:
  SegmentationAccumulator(int num_layers, int num_heads);

  // `maps[l]` points at layer l's [heads x padded x padded] maps for this
  // example. `predictions`, if not null, receives [layer*heads+head][char].
  absl::Status Add(
      const SegmentationExample& ex, const std::vector<const float*>& maps,
      int64_t padded,
      std::vector<std::vector<CharPrediction>>* predictions = nullptr);

  // top_k is clamped to [1, heads].
  SegmentationScores Result(int top_k) const;

 private:
  int layers_, heads_;
  int examples_ = 0;
  int64_t gold_ends_ = 0, skipped_ = 0;
  std::vector<int64_t> tp_, fp_, fn_, correct_;
  // right_[c * layers * heads + k]: head k right on character c.
  std::vector<bool> right_;
  int64_t characters_ = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_SEGMENT_WORD_SEGMENTATION_H_
