// Kovaleva et al. 2019's five attention patterns ("Revealing the Dark
// Secrets of BERT", Figure 1), decided per head by explicit rules on the
// head's dataset-mean statistics (head_stats.h). Kovaleva et al. labelled
// maps by hand and trained a CNN on them; rules on means are what a server
// can state and test, so these are the rules, and the thresholds below are
// part of the API (AnalyzeHeads' AttentionPattern).
//
// With V = to_cls + to_sep (the "vertical" stripes at [CLS]/[SEP]) and
// D = to_previous + to_self + to_next (the three diagonals), checked in
// this order, the first that holds wins:
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

// One head's dataset means, as AnalyzeHeads reports them. to_own_segment
// and own_segment_share are NaN when the data has no pairs (then no head is
// a block).
struct PatternInputs {
  double to_cls = 0, to_sep = 0;
  double to_previous = 0, to_self = 0, to_next = 0;
  double to_own_segment = 0, own_segment_share = 0;
};

AttentionPatternKind ClassifyPattern(const PatternInputs& in);

// "vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous".
std::string_view PatternName(AttentionPatternKind kind);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ANALYSIS_ATTENTION_PATTERN_H_
