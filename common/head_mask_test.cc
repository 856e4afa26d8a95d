#include "common/head_mask.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HeadMaskTest, IdentityKeepsEveryHead) {
  HeadMask m = HeadMask::Identity(3, 4);
  EXPECT_EQ(m.layers(), 3);
  EXPECT_EQ(m.heads(), 4);
  EXPECT_EQ(m.mode(), AblationMode::kZero);
  EXPECT_EQ(m.values(), std::vector<float>(12, 1.0f));
  EXPECT_TRUE(m.IsIdentity());
  EXPECT_EQ(m.FirstAffectedLayer(), 3);
  EXPECT_TRUE(m.AffectedHeads().empty());
  EXPECT_EQ(HeadMask::Identity(2, 2, AblationMode::kUniform).mode(),
            AblationMode::kUniform);
}

TEST(HeadMaskTest, AblateZeroesListedHeads) {
  auto m = HeadMask::Ablate(3, 4, {{1, 2}, {2, 0}, {1, 2}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->value(1, 2), 0.0f);
  EXPECT_EQ(m->value(2, 0), 0.0f);
  EXPECT_EQ(m->value(0, 0), 1.0f);
  EXPECT_EQ(m->value(1, 3), 1.0f);
  EXPECT_FALSE(m->IsIdentity());
  EXPECT_EQ(m->FirstAffectedLayer(), 1);
  EXPECT_THAT(m->AffectedHeads(),
              ElementsAre(LayerHead{1, 2}, LayerHead{2, 0}));
  EXPECT_EQ(m->DebugString(), "ablate L1H2,L2H0 (zero)");
}

TEST(HeadMaskTest, AblateNothingIsIdentity) {
  auto m = HeadMask::Ablate(2, 2, {}, AblationMode::kUniform);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->IsIdentity());
  EXPECT_EQ(m->mode(), AblationMode::kUniform);
}

TEST(HeadMaskTest, AblateErrorsNameEntryAndField) {
  auto bad_layer = HeadMask::Ablate(12, 12, {{0, 0}, {1, 1}, {2, 2}, {14, 0}});
  ASSERT_FALSE(bad_layer.ok());
  EXPECT_EQ(bad_layer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_layer.status().message(),
            "ablate[3].layer=14 out of range [0, 12)");
  auto bad_head = HeadMask::Ablate(12, 12, {{0, -1}});
  ASSERT_FALSE(bad_head.ok());
  EXPECT_EQ(bad_head.status().message(),
            "ablate[0].head=-1 out of range [0, 12)");
  EXPECT_FALSE(HeadMask::Ablate(0, 12, {}).ok());
}

TEST(HeadMaskTest, KeepOnlyKeepsListedHeads) {
  auto m = HeadMask::KeepOnly(2, 3, {{1, 1}}, AblationMode::kUniform);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->values(), (std::vector<float>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(m->FirstAffectedLayer(), 0);
  EXPECT_EQ(m->AffectedHeads().size(), 5u);
  EXPECT_THAT(m->DebugString(), HasSubstr("(uniform)"));
  auto bad = HeadMask::KeepOnly(2, 3, {{1, 1}, {1, 3}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "keep[1].head=3 out of range [0, 3)");
}

TEST(HeadMaskTest, KeepAllIsIdentity) {
  auto m = HeadMask::KeepOnly(1, 2, {{0, 0}, {0, 1}});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->IsIdentity());
}

TEST(HeadMaskTest, DenseAcceptsFractions) {
  auto m = HeadMask::Dense(2, 2, {1.0f, 1.0f, 0.3f, 1.0f});
  ASSERT_TRUE(m.ok());
  EXPECT_FLOAT_EQ(m->value(1, 0), 0.3f);
  EXPECT_EQ(m->FirstAffectedLayer(), 1);
  EXPECT_THAT(m->AffectedHeads(), ElementsAre(LayerHead{1, 0}));
  EXPECT_EQ(m->DebugString(), "scale L1H0=0.3 (zero)");
}

TEST(HeadMaskTest, DenseValidatesCountAndRange) {
  auto short_mask = HeadMask::Dense(2, 2, {1.0f, 1.0f, 1.0f});
  ASSERT_FALSE(short_mask.ok());
  EXPECT_THAT(short_mask.status().message(), HasSubstr("3 values"));
  auto above = HeadMask::Dense(2, 2, {1.0f, 1.0f, 1.0f, 1.5f});
  ASSERT_FALSE(above.ok());
  EXPECT_THAT(above.status().message(),
              HasSubstr("values[3] (layer 1, head 1)=1.5"));
  auto negative = HeadMask::Dense(2, 2, {-0.1f, 1.0f, 1.0f, 1.0f});
  EXPECT_FALSE(negative.ok());
  auto nan =
      HeadMask::Dense(1, 2, {1.0f, std::numeric_limits<float>::quiet_NaN()});
  ASSERT_FALSE(nan.ok());
  EXPECT_THAT(nan.status().message(), HasSubstr("values[1]"));
  auto inf = HeadMask::Dense(1, 1, {std::numeric_limits<float>::infinity()});
  EXPECT_FALSE(inf.ok());
}

TEST(HeadMaskTest, FirstAffectedLayerIsTheLowestChangedLayer) {
  auto m = HeadMask::Ablate(12, 12, {{9, 3}, {4, 11}, {7, 0}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->FirstAffectedLayer(), 4);
  EXPECT_THAT(m->AffectedHeads(),
              ElementsAre(LayerHead{4, 11}, LayerHead{7, 0}, LayerHead{9, 3}));
}

TEST(HeadMaskTest, IdentityDebugString) {
  EXPECT_EQ(HeadMask::Identity(12, 12).DebugString(), "identity 12x12");
}

}  // namespace
}  // namespace bertology
