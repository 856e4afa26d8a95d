// Kovaleva et al. 2019's five attention patterns ("Revealing the Dark
// Secrets of BERT", Figure 1), decided per head by explicit rules on the
// head's dataset-mean statistics (head_stats.h). Kovaleva et al. labelled
// maps by hand and trained a CNN on them; rules on means are what a server
// can state and test, so these are the rules, and the thresholds below are
// part of the API (AnalyzeHeads' AttentionPattern).
//
// With V = to_cls + to_sep (the "vertical" stripes at [CLS]/[SEP]) and
// D = the attention to the previous token, the token itself and the next
// token where that key is not a special token (the three diagonals off the
// stripes), checked in this order, the first that holds wins:
//   vertical+diagonal  V >= 0.3 and D >= 0.3 and V + D >= 0.7
//   vertical           V >= 0.5
//   diagonal           D >= 0.5
//   block              (pairs only) to_own_segment >= 0.6 and
//                      to_own_segment - own_segment_share >= 0.25: a token
//                      keeps most of its attention inside its own sentence,
//                      well above the share of tokens that sentence has
//   heterogeneous      none of the above
// The mixed rule comes first because a head that splits its attention
// between the stripes and the diagonals passes neither 0.5 rule, or passes
// one only by a margin that says nothing about the other.
//
// No double counting: a key that is [CLS] or [SEP] counts toward V only,
// even when it is also the query's previous or next token or the query
// itself. (Adding Clark's to_previous + to_self + to_next counted it
// twice: a head putting every row's attention on its segment's [SEP] got
// D = 4/T on a pair, from the rows of both [SEP]s and of the tokens just
// before them, so it was "vertical+diagonal" on every pair of up to 13
// tokens.)
// HeadStats reports V and D as `vertical` and `diagonal` beside Clark's
// to_previous/to_self/to_next, which keep counting every key.
//
// Per head or per map. AnalyzeHeads classifies each head by these rules on
// its dataset means (HeadStats::pattern), and, on request, each
// (example, head) map by the same rules on that example's own V, D,
// to_own_segment and own-segment share, as Kovaleva et al. classified maps
// (HeadStats::map_pattern_share: per head, the share of its maps in each
// class). The two can differ: a head vertical on some inputs and diagonal
// on others has half its maps in each class, while its means may make it
// vertical+diagonal (or heterogeneous).
#ifndef BERTOLOGY_CORE_ANALYSIS_ATTENTION_PATTERN_H_
#define BERTOLOGY_CORE_ANALYSIS_ATTENTION_PATTERN_H_

#include <string_view>

namespace bertology {

// Values match v1::AttentionPattern.
enum class AttentionPatternKind {
  kVertical = 1,
  kDiagonal = 2,
  kVerticalDiagonal = 3,
  kBlock = 4,
  kHeterogeneous = 5,
};

inline constexpr double kVerticalMin = 0.5;
inline constexpr double kDiagonalMin = 0.5;
inline constexpr double kMixedEachMin = 0.3;
inline constexpr double kMixedSumMin = 0.7;
inline constexpr double kBlockWithinMin = 0.6;
inline constexpr double kBlockExcessMin = 0.25;

inline constexpr int kNumAttentionPatterns = 5;

// One head's dataset means (or one map's values), as AnalyzeHeads reports
// them: vertical = V, diagonal = D above. to_own_segment and
// own_segment_share are NaN when the data (the example) has no pair (then
// it is no block).
struct PatternInputs {
  double vertical = 0;
  double diagonal = 0;
  double to_own_segment = 0, own_segment_share = 0;
};

AttentionPatternKind ClassifyPattern(const PatternInputs& in);

// "vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous".
std::string_view PatternName(AttentionPatternKind kind);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ANALYSIS_ATTENTION_PATTERN_H_
