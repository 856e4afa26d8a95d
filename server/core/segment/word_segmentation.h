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
// is their gold class (NO PREDICTION is always wrong).
//
// Scored against chance. Accuracy and F1 reward trivial heads: on the
// shipped model a head that always attends to the next character scores
// 66% accuracy (more than any real head), and one that always attends to
// [SEP] has the best F1 (0.60). So every result carries:
//   - two trivial baselines, scored by the same scorer on the same
//     characters: ALWAYS-NEXT (the rule applied as if every argmax were
//     i + 1: WORD INTERNAL where token i + 1 is a character of the same
//     segment, WORD END where it is a [SEP], else NO PREDICTION) and
//     ALWAYS-[SEP] (WORD END for every character);
//   - chance-corrected scores per head (and per baseline):
//       MCC   Matthews correlation of "word end" against "not a word end"
//             (WORD INTERNAL and NO PREDICTION both count as "not"):
//             (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)); 0 where
//             a factor under the root is 0 (a constant prediction, or gold
//             of one class, correlates with nothing: ALWAYS-[SEP] scores
//             0), NaN without characters;
//       balanced accuracy  the class-balanced form of accuracy: the mean,
//             over the gold classes present (word end, word internal), of
//             the share of that class's characters predicted right (NO
//             PREDICTION still wrong); 0.5 for ALWAYS-[SEP];
//   - heads ranked by MCC (not F1): MCC descending, then balanced accuracy
//     descending, then head index (l * heads + h) ascending; NaN sorts
//     below every number;
//   - the oracle (the share of characters for which at least one head, of
//     all heads or of the top k by that ranking, is right) beside the same
//     oracle over the two trivial baselines alone, which is 1 whenever
//     every piece is one character and nothing is truncated: a high
//     oracle over many heads says nothing unless it beats that.
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

// The rule above for character `c` of `ex` when the argmax is token `j`.
CharPrediction PredictFromArgmax(const SegmentationExample& ex,
                                 const SegmentChar& c, int j);

// The rule above for one head: `map` is its [padded x padded] row-major
// map, the example's tokens first. One prediction per example.chars.
std::vector<CharPrediction> PredictCharacters(const SegmentationExample& ex,
                                              const float* map, int64_t padded);

// The trivial baselines' predictions for `ex`, one per example.chars:
// ALWAYS-NEXT is PredictFromArgmax(ex, c, c.position + 1); ALWAYS-[SEP] is
// WORD END everywhere.
std::vector<CharPrediction> PredictAlwaysNext(const SegmentationExample& ex);
std::vector<CharPrediction> PredictAlwaysSep(const SegmentationExample& ex);

// One predictor's scores (a head's, or a baseline's).
struct SegmentScore {
  int64_t true_ends = 0, predicted_ends = 0, correct = 0;
  // precision NaN where no end is predicted; recall NaN without gold ends;
  // F1 = 2tp / (2tp + fp + fn), NaN when that is 0/0; accuracy NaN without
  // characters; MCC and balanced accuracy as the header says.
  double precision = 0, recall = 0, f1 = 0, accuracy = 0;
  double mcc = 0, balanced_accuracy = 0;
};

struct SegmentationScores {
  int num_layers = 0, num_heads = 0;
  int examples = 0;
  int64_t characters = 0, gold_ends = 0, skipped_pieces = 0;
  // Row-major [layers x heads].
  std::vector<int64_t> true_ends, predicted_ends, correct;
  std::vector<double> precision, recall, f1, accuracy;
  std::vector<double> mcc, balanced_accuracy;
  // Head indices (l * heads + h) by MCC descending, then balanced accuracy
  // descending, then index ascending (NaN below every number); all heads.
  std::vector<int> ranking;
  double oracle_all = 0;  // share of characters some head gets right
  double oracle_top = 0;  // the same over ranking's first top_k heads
  int top_k = 0;
  // The trivial baselines on the same characters, and the share of
  // characters at least one of the two gets right (the oracle's yardstick).
  SegmentScore always_next, always_sep;
  double oracle_baselines = 0;
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
  // Counts of one predictor.
  struct Counts {
    int64_t tp = 0, fp = 0, fn = 0, correct = 0, internal_right = 0;
    // Adds one character; returns whether the prediction is right.
    bool Add(bool gold_end, CharPrediction p);
  };
  SegmentScore Score(const Counts& c) const;

  int layers_, heads_;
  int examples_ = 0;
  int64_t gold_ends_ = 0, skipped_ = 0;
  std::vector<Counts> counts_;  // per head
  Counts always_next_, always_sep_;
  int64_t baselines_right_ = 0;  // characters either baseline gets right
  // right_[c * layers * heads + k]: head k right on character c.
  std::vector<bool> right_;
  int64_t characters_ = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_SEGMENT_WORD_SEGMENTATION_H_
