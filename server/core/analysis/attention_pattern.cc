#include "server/core/analysis/attention_pattern.h"

#include <cmath>

namespace bertology {

AttentionPatternKind ClassifyPattern(const PatternInputs& in) {
  const double v = in.vertical;
  const double d = in.diagonal;
  if (v >= kMixedEachMin && d >= kMixedEachMin && v + d >= kMixedSumMin) {
    return AttentionPatternKind::kVerticalDiagonal;
  }
  if (v >= kVerticalMin) return AttentionPatternKind::kVertical;
  if (d >= kDiagonalMin) return AttentionPatternKind::kDiagonal;
  // NaN (no pairs) fails both comparisons: no block without two segments.
  if (in.to_own_segment >= kBlockWithinMin &&
      in.to_own_segment - in.own_segment_share >= kBlockExcessMin) {
    return AttentionPatternKind::kBlock;
  }
  return AttentionPatternKind::kHeterogeneous;
}

std::string_view PatternName(AttentionPatternKind kind) {
  switch (kind) {
    case AttentionPatternKind::kVertical:
      return "vertical";
    case AttentionPatternKind::kDiagonal:
      return "diagonal";
    case AttentionPatternKind::kVerticalDiagonal:
      return "vertical+diagonal";
    case AttentionPatternKind::kBlock:
      return "block";
    case AttentionPatternKind::kHeterogeneous:
      return "heterogeneous";
  }
  return "heterogeneous";
}

}  // namespace bertology
