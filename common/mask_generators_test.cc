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
  EXPECT_EQ((*masks)[4].id, "random-L6-12-k22-s42-r4");
  std::set<std::vector<float>> distinct;
  for (const SweepMask& m : *masks) {
    EXPECT_EQ(CountAblated(m.mask), 22);  // round(0.3 * 72) = 21.6 -> 22
    EXPECT_GE(m.mask.FirstAffectedLayer(), 6);
    distinct.insert(m.mask.values());
  }
  EXPECT_EQ(distinct.size(), 5u);  // repeats differ
}

TEST(RandomMasksTest, IdsNameRangeHeadCountSeedAndRepeat) {
  auto masks = RandomMasks(12, 12, 0.1, 2, 1, 0, 12, AblationMode::kZero);
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[1].id, "random-L0-12-k14-s1-r1");
  EXPECT_EQ(CountAblated((*masks)[1].mask), 14);  // round(14.4)
}

TEST(RandomMasksTest, DifferentDrawsNeverShareAnId) {
  // The old ids ("random-0.10-r0") were equal for all of these.
  std::set<std::string> ids;
  for (uint64_t seed : {1, 2}) {
    for (double fraction : {0.1, 0.104}) {  // 14 and 15 heads of 144
      auto masks =
          RandomMasks(12, 12, fraction, 1, seed, 0, 12, AblationMode::kZero);
      ASSERT_TRUE(masks.ok()) << masks.status();
      ids.insert((*masks)[0].id);
    }
  }
  EXPECT_THAT(ids, ::testing::ElementsAre(
                       "random-L0-12-k14-s1-r0", "random-L0-12-k14-s2-r0",
                       "random-L0-12-k15-s1-r0", "random-L0-12-k15-s2-r0"));
  // A seed over 2^63 is printed as the unsigned number it is.
  auto big = RandomMasks(2, 2, 0.5, 1, 18446744073709551615ull, 0, 2,
                         AblationMode::kZero);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)[0].id, "random-L0-2-k2-s18446744073709551615-r0");
}

// The draws of a fixed seed, pinned: a sweep sharded over replicas (or
// resumed on another machine) regenerates its masks from the seed, so they
// must not depend on the standard library. The values come from the
// algorithm, not from a run: std::mt19937_64 (fully specified by the
// standard) seeded with 7, each index drawn as i + x % (n - i) for the first
// output x below 2^64 - 2^64 % (n - i) (a partial Fisher-Yates over heads
// numbered layer-major); they were computed with an independent Python
// implementation of both. std::uniform_int_distribution or std::shuffle
// would give other heads on another standard library, and this test
// would fail.
TEST(RandomMasksTest, FirstDrawsOfSeedSevenArePinned) {
  auto small = RandomMasks(3, 4, 0.25, 2, 7, 0, 3, AblationMode::kZero);
  ASSERT_TRUE(small.ok()) << small.status();
  using LH = LayerHead;
  EXPECT_THAT((*small)[0].mask.AffectedHeads(),
              ::testing::UnorderedElementsAre(LH{0, 3}, LH{2, 0}, LH{2, 2}));
  EXPECT_THAT((*small)[1].mask.AffectedHeads(),
              ::testing::UnorderedElementsAre(LH{1, 2}, LH{0, 0}, LH{2, 2}));
  auto base = RandomMasks(12, 12, 0.1, 1, 7, 0, 12, AblationMode::kZero);
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_THAT((*base)[0].mask.AffectedHeads(),
              ::testing::UnorderedElementsAre(
                  LH{11, 3}, LH{3, 5}, LH{2, 4}, LH{6, 0}, LH{5, 5}, LH{9, 5},
                  LH{3, 3}, LH{4, 6}, LH{6, 9}, LH{2, 5}, LH{8, 10}, LH{10, 6},
                  LH{0, 0}, LH{7, 10}));
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

TEST(KeepOnlyMaskTest, KeepsListedHeadsOfTheRange) {
  auto mask =
      KeepOnlyMask(3, 4, 0, 2, {{0, 1}, {1, 3}}, "k", AblationMode::kZero);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->id, "k");
  EXPECT_EQ(CountAblated(mask->mask), 6);
  EXPECT_EQ(mask->mask.value(0, 1), 1.0f);
  EXPECT_EQ(mask->mask.value(1, 3), 1.0f);
  EXPECT_EQ(mask->mask.value(2, 0), 1.0f);  // outside the range: kept
}

TEST(KeepOnlyMaskTest, RefusesKeptHeadsOutsideTheRange) {
  // L2H0 is kept anyway (layer 2 is not ablated): listing it means the
  // caller got the range wrong.
  auto mask =
      KeepOnlyMask(3, 4, 0, 2, {{0, 1}, {2, 0}}, "k", AblationMode::kZero);
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mask.status().message(),
              HasSubstr("keep[1]=L2H0 is outside layers [0, 2)"));
  auto below = KeepOnlyMask(3, 4, 1, 3, {{0, 0}}, "k", AblationMode::kZero);
  ASSERT_FALSE(below.ok());
  EXPECT_THAT(below.status().message(), HasSubstr("keep[0]=L0H0"));
  auto outside = KeepOnlyMask(3, 4, 0, 3, {{0, 4}}, "k", AblationMode::kZero);
  ASSERT_FALSE(outside.ok());
  EXPECT_THAT(outside.status().message(),
              HasSubstr("keep[0]=L0H4 is outside the model's 3x4"));
}

TEST(MaskIdSetTest, RefusesARepeatedIdNamingBothSpecs) {
  MaskIdSet ids;
  EXPECT_TRUE(ids.Add("x", 1, "explicit_mask", true).ok());
  EXPECT_TRUE(ids.Add("y", 2, "explicit_mask", true).ok());
  const absl::Status s = ids.Add("x", 3, "explicit_mask", true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "masks[3].explicit_mask.id \"x\" repeats masks[1]");
  EXPECT_EQ(ids.Add("y", 4, "all_layers", false).message(),
            "masks[4].all_layers: id \"y\" repeats masks[2]");
}

}  // namespace
}  // namespace bertology
