#include "common/mask_generators.h"

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

int CountAblated(const HeadMask& mask) {
  return static_cast<int>(mask.AffectedHeads().size());
}

TEST(SingleHeadMasksTest, OneMaskPerHeadInLayerMajorOrder) {
  std::vector<SweepMask> masks = SingleHeadMasks(3, 4, AblationMode::kUniform);
  ASSERT_EQ(masks.size(), 12u);
  EXPECT_EQ(masks[0].id, "head-L0H0");
  EXPECT_EQ(masks[7].id, "head-L1H3");
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 4; ++h) {
      const HeadMask& mask = masks[l * 4 + h].mask;
      EXPECT_EQ(mask.layers(), 3);
      EXPECT_EQ(mask.heads(), 4);
      EXPECT_EQ(mask.mode(), AblationMode::kUniform);
      ASSERT_EQ(mask.AffectedHeads().size(), 1u);
      EXPECT_EQ(mask.AffectedHeads()[0], (LayerHead{l, h}));
      EXPECT_EQ(mask.value(l, h), 0.0f);
    }
  }
  EXPECT_TRUE(SingleHeadMasks(0, 4, AblationMode::kZero).empty());
}

TEST(LayerMasksTest, OneMaskPerLayerAblatingAllItsHeads) {
  std::vector<SweepMask> masks = LayerMasks(3, 4, AblationMode::kZero);
  ASSERT_EQ(masks.size(), 3u);
  EXPECT_EQ(masks[2].id, "layer-2");
  for (int l = 0; l < 3; ++l) {
    const HeadMask& mask = masks[l].mask;
    EXPECT_EQ(mask.FirstAffectedLayer(), l);
    EXPECT_EQ(CountAblated(mask), 4);
    for (int h = 0; h < 4; ++h) EXPECT_EQ(mask.value(l, h), 0.0f);
  }
  EXPECT_TRUE(LayerMasks(3, 0, AblationMode::kZero).empty());
}

TEST(RandomMasksTest, AblatesRoundedFractionWithinLayerRange) {
  absl::StatusOr<std::vector<SweepMask>> masks =
      RandomMasks(12, 12, 0.3, 5, 42, 6, 12, AblationMode::kZero);
  ASSERT_TRUE(masks.ok()) << masks.status();
  ASSERT_EQ(masks->size(), 5u);
  EXPECT_EQ((*masks)[4].id, "random-0.30-L6-12-r4");
  std::set<std::vector<float>> distinct;
  for (const SweepMask& m : *masks) {
    EXPECT_EQ(CountAblated(m.mask), 22);  // round(0.3 * 72) = 21.6 -> 22
    EXPECT_GE(m.mask.FirstAffectedLayer(), 6);
    distinct.insert(m.mask.values());
  }
  EXPECT_EQ(distinct.size(), 5u);  // repeats differ
}

TEST(RandomMasksTest, IdsWithoutRangeForAllLayers) {
  auto masks = RandomMasks(12, 12, 0.1, 2, 1, 0, 12, AblationMode::kZero);
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[1].id, "random-0.10-r1");
  EXPECT_EQ(CountAblated((*masks)[1].mask), 14);  // round(14.4)
}

TEST(RandomMasksTest, DeterministicInSeed) {
  auto a = RandomMasks(12, 12, 0.5, 3, 7, 0, 12, AblationMode::kZero);
  auto b = RandomMasks(12, 12, 0.5, 3, 7, 0, 12, AblationMode::kZero);
  auto c = RandomMasks(12, 12, 0.5, 3, 8, 0, 12, AblationMode::kZero);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ((*a)[r].mask.values(), (*b)[r].mask.values());
  }
  EXPECT_NE((*a)[0].mask.values(), (*c)[0].mask.values());
}

TEST(RandomMasksTest, DrawsAreRoughlyUniform) {
  // 2000 draws of 1 head of 12: each head ~167 times.
  auto masks = RandomMasks(3, 4, 1.0 / 12, 2000, 3, 0, 3, AblationMode::kZero);
  ASSERT_TRUE(masks.ok()) << masks.status();
  std::vector<int> counts(12, 0);
  for (const SweepMask& m : *masks) {
    for (const LayerHead& lh : m.mask.AffectedHeads()) {
      ++counts[lh.layer * 4 + lh.head];
    }
  }
  for (int c : counts) {
    EXPECT_GT(c, 110);
    EXPECT_LT(c, 230);
  }
}

TEST(RandomMasksTest, FullFractionAblatesEveryHeadInRange) {
  auto masks = RandomMasks(3, 4, 1.0, 1, 0, 1, 2, AblationMode::kUniform);
  ASSERT_TRUE(masks.ok()) << masks.status();
  const HeadMask& mask = (*masks)[0].mask;
  EXPECT_EQ(CountAblated(mask), 4);
  EXPECT_EQ(mask.FirstAffectedLayer(), 1);
  EXPECT_EQ(mask.mode(), AblationMode::kUniform);
}

struct BadArgs {
  int layers, heads;
  double fraction;
  int repeats, begin, end;
  std::string names;
};

TEST(RandomMasksTest, ErrorsNameTheArgument) {
  const std::vector<BadArgs> cases = {
      {0, 4, 0.5, 1, 0, 0, "layers="},
      {3, 0, 0.5, 1, 0, 3, "heads="},
      {3, 4, 0.0, 1, 0, 3, "fraction="},
      {3, 4, 1.5, 1, 0, 3, "fraction="},
      {3, 4, -0.1, 1, 0, 3, "fraction="},
      {3, 4, 0.01, 1, 0, 3, "fraction="},  // rounds to 0 heads
      {3, 4, 0.5, 0, 0, 3, "repeats="},
      {3, 4, 0.5, 1, -1, 3, "layer_begin="},
      {3, 4, 0.5, 1, 3, 3, "layer_begin="},
      {3, 4, 0.5, 1, 1, 1, "layer_end="},
      {3, 4, 0.5, 1, 0, 4, "layer_end="},
  };
  for (const BadArgs& c : cases) {
    auto masks = RandomMasks(c.layers, c.heads, c.fraction, c.repeats, 1,
                             c.begin, c.end, AblationMode::kZero);
    ASSERT_FALSE(masks.ok()) << c.names;
    EXPECT_EQ(masks.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(masks.status().message(), HasSubstr(c.names));
  }
}

}  // namespace
}  // namespace bertology
