#include "server/core/compare/attention_similarity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace bertology {
namespace {

TEST(MapCosine, IdenticalScaledAndOrthogonalMaps) {
  const std::vector<float> a = {1, 0, 0.5f, 0.5f};
  const std::vector<float> scaled = {2, 0, 1, 1};
  const std::vector<float> orth = {0, 1, 0, 0};
  EXPECT_NEAR(MapCosine(a.data(), 2, a.data(), 2, 2), 1.0, 1e-12);
  // Cosine ignores scale (a head mask of 0.5 in both models).
  EXPECT_NEAR(MapCosine(a.data(), 2, scaled.data(), 2, 2), 1.0, 1e-12);
  EXPECT_NEAR(MapCosine(a.data(), 2, orth.data(), 2, 2), 0.0, 1e-12);
  // A hand-computed case: dot 0.5, |a|^2 = 1.5, |c|^2 = 0.5.
  const std::vector<float> c = {0, 0, 0.5f, 0.5f};
  EXPECT_NEAR(MapCosine(a.data(), 2, c.data(), 2, 2),
              0.5 / std::sqrt(1.5 * 0.5), 1e-12);
}

TEST(MapCosine, ReadsOnlyTheRealTokenBlockWithEachStride) {
  // a: [3 x 3] padded, real block [[1, 2], [3, 4]], padding 9s.
  const std::vector<float> a = {1, 2, 9, 3, 4, 9, 9, 9, 9};
  // b: the same block, unpadded.
  const std::vector<float> b = {1, 2, 3, 4};
  EXPECT_NEAR(MapCosine(a.data(), 3, b.data(), 2, 2), 1.0, 1e-12);
}

TEST(MapCosine, AllZeroMapIsNan) {
  const std::vector<float> a = {1, 0, 0, 1}, z = {0, 0, 0, 0};
  EXPECT_TRUE(std::isnan(MapCosine(a.data(), 2, z.data(), 2, 2)));
  EXPECT_TRUE(std::isnan(MapCosine(z.data(), 2, z.data(), 2, 2)));
}

TEST(AttentionSimilarityAccumulator, MeanOverExamplesPerHead) {
  // 1 layer, 2 heads; example 1 (t = 1 of padded 2), example 2 (t = 2).
  AttentionSimilarityAccumulator acc(1, 2);
  EXPECT_TRUE(std::isnan(acc.Mean()[0]));
  // [H=2, 2, 2] each; only element [0][0] of each head is real.
  const std::vector<float> a1 = {1, 7, 7, 7, 1, 7, 7, 7};
  const std::vector<float> b1 = {3, 0, 0, 0, 5, 1, 1, 1};
  ASSERT_TRUE(acc.Add({a1.data()}, 2, {b1.data()}, 2, 1).ok());
  // Head 0: identical; head 1: orthogonal.
  const std::vector<float> a2 = {1, 0, 0, 1, 1, 0, 0, 0};
  const std::vector<float> b2 = {1, 0, 0, 1, 0, 1, 0, 0};
  ASSERT_TRUE(acc.Add({a2.data()}, 2, {b2.data()}, 2, 2).ok());
  EXPECT_EQ(acc.examples(), 2);
  const std::vector<double> mean = acc.Mean();
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_NEAR(mean[0], 1.0, 1e-12);
  EXPECT_NEAR(mean[1], 0.5, 1e-12);  // (1 + 0) / 2
}

TEST(AttentionSimilarityAccumulator, RefusesBadShapes) {
  AttentionSimilarityAccumulator acc(2, 1);
  const std::vector<float> a = {1};
  EXPECT_FALSE(acc.Add({a.data()}, 1, {a.data()}, 1, 1).ok());  // 1 layer
  EXPECT_FALSE(
      acc.Add({a.data(), a.data()}, 1, {a.data(), a.data()}, 1, 2).ok());
  EXPECT_EQ(acc.examples(), 0);
}

}  // namespace
}  // namespace bertology
