// The pattern rules on their thresholds: each rule holds just above its
// threshold and fails just below, so a changed threshold or a reordered
// rule fails here. (Whole synthetic maps of each kind: head_stats_test.)
#include "server/core/analysis/attention_pattern.h"

#include <limits>

#include "gtest/gtest.h"

namespace bertology {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

PatternInputs Inputs(double v, double d, double own = kNaN,
                     double share = kNaN) {
  PatternInputs in;
  in.vertical = v;
  in.diagonal = d;
  in.to_own_segment = own;
  in.own_segment_share = share;
  return in;
}

TEST(ClassifyPattern, Vertical) {
  EXPECT_EQ(ClassifyPattern(Inputs(0.51, 0.1)),
            AttentionPatternKind::kVertical);
  EXPECT_EQ(ClassifyPattern(Inputs(0.49, 0.1)),
            AttentionPatternKind::kHeterogeneous);
  PatternInputs v_only;
  v_only.vertical = 0.6;
  EXPECT_EQ(ClassifyPattern(v_only), AttentionPatternKind::kVertical);
}

TEST(ClassifyPattern, Diagonal) {
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.51)),
            AttentionPatternKind::kDiagonal);
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.49)),
            AttentionPatternKind::kHeterogeneous);
  PatternInputs d_only;
  d_only.diagonal = 0.8;
  EXPECT_EQ(ClassifyPattern(d_only), AttentionPatternKind::kDiagonal);
}

TEST(ClassifyPattern, VerticalDiagonal) {
  EXPECT_EQ(ClassifyPattern(Inputs(0.4, 0.35)),
            AttentionPatternKind::kVerticalDiagonal);
  // Takes precedence over vertical when the diagonals are strong too.
  EXPECT_EQ(ClassifyPattern(Inputs(0.6, 0.31)),
            AttentionPatternKind::kVerticalDiagonal);
  // Fails on either part below 0.3 ...
  EXPECT_EQ(ClassifyPattern(Inputs(0.6, 0.29)),
            AttentionPatternKind::kVertical);
  EXPECT_EQ(ClassifyPattern(Inputs(0.29, 0.6)),
            AttentionPatternKind::kDiagonal);
  // ... and on a sum below 0.7 with both parts above 0.3.
  EXPECT_EQ(ClassifyPattern(Inputs(0.35, 0.33)),
            AttentionPatternKind::kHeterogeneous);
}

TEST(ClassifyPattern, Block) {
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.2, 0.9, 0.4)),
            AttentionPatternKind::kBlock);
  // Within-segment attention no higher than the segment's share: not a block.
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.2, 0.7, 0.5)),
            AttentionPatternKind::kHeterogeneous);
  // Well above the share, but under 0.6 in all.
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.2, 0.55, 0.2)),
            AttentionPatternKind::kHeterogeneous);
  // No pairs in the data.
  EXPECT_EQ(ClassifyPattern(Inputs(0.1, 0.2, kNaN, kNaN)),
            AttentionPatternKind::kHeterogeneous);
  // A diagonal head is mostly within its segment too; diagonal wins.
  EXPECT_EQ(ClassifyPattern(Inputs(0.05, 0.9, 0.95, 0.4)),
            AttentionPatternKind::kDiagonal);
}

TEST(PatternName, EveryKind) {
  EXPECT_EQ(PatternName(AttentionPatternKind::kVertical), "vertical");
  EXPECT_EQ(PatternName(AttentionPatternKind::kDiagonal), "diagonal");
  EXPECT_EQ(PatternName(AttentionPatternKind::kVerticalDiagonal),
            "vertical+diagonal");
  EXPECT_EQ(PatternName(AttentionPatternKind::kBlock), "block");
  EXPECT_EQ(PatternName(AttentionPatternKind::kHeterogeneous), "heterogeneous");
}

}  // namespace
}  // namespace bertology
