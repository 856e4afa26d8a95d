#include "server/train/train_data.h"

#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

std::vector<Encoded> RandomLengths(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Encoded> data(n);
  for (int i = 0; i < n; ++i) {
    data[i].ids.assign(5 + rng() % 40, 7);
    data[i].segments.assign(data[i].ids.size(), 0);
    data[i].label = i % 3;
  }
  return data;
}

// Padded tokens over real tokens when each batch pads to its longest row.
double Padding(const std::vector<Encoded>& data,
               const std::vector<std::vector<size_t>>& batches) {
  double padded = 0, real = 0;
  for (const auto& batch : batches) {
    size_t longest = 0;
    for (size_t i : batch) longest = std::max(longest, data[i].ids.size());
    padded += static_cast<double>(longest * batch.size());
    for (size_t i : batch) real += data[i].ids.size();
  }
  return padded / real;
}

TEST(LengthBucketedBatchesTest, EveryRowOnceInFullBatchesWithLittlePadding) {
  const std::vector<Encoded> data = RandomLengths(5000, 1);
  std::mt19937_64 rng(2);
  const auto batches = LengthBucketedBatches(data, 32, rng);
  std::multiset<size_t> seen;
  size_t short_batches = 0;
  for (const auto& batch : batches) {
    ASSERT_LE(batch.size(), 32u);
    short_batches += batch.size() < 32;
    seen.insert(batch.begin(), batch.end());
  }
  ASSERT_EQ(seen.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  // 5000 rows in windows of 64 x 32 = 2048: only the last window's last
  // batch is short, and the batch count is what plain batching gives.
  EXPECT_EQ(short_batches, 1u);
  EXPECT_EQ(batches.size(), (data.size() + 31) / 32);

  // Plain shuffled batches of the same rows, for comparison.
  std::vector<size_t> index(data.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::shuffle(index.begin(), index.end(), rng);
  std::vector<std::vector<size_t>> plain;
  for (size_t b = 0; b < index.size(); b += 32) {
    plain.emplace_back(index.begin() + b,
                       index.begin() + std::min(index.size(), b + 32));
  }
  EXPECT_LT(Padding(data, batches), 1.05);
  EXPECT_GT(Padding(data, plain), 1.3);
}

TEST(LengthBucketedBatchesTest, SameSeedSameOrderOtherSeedOtherOrder) {
  const std::vector<Encoded> data = RandomLengths(1000, 3);
  std::mt19937_64 a(4), b(4), c(5);
  const auto first = LengthBucketedBatches(data, 16, a);
  EXPECT_EQ(first, LengthBucketedBatches(data, 16, b));
  EXPECT_NE(first, LengthBucketedBatches(data, 16, c));
}

TEST(MakeBatchTest, PadsWithZerosAndMasksThePadding) {
  std::vector<Encoded> data(2);
  data[0].ids = {2, 9, 3};
  data[0].segments = {0, 0, 0};
  data[0].label = 1;
  data[1].ids = {2, 3};
  data[1].segments = {0, 1};
  data[1].label = 0;
  Batch b = MakeBatch(data, {1, 0}, 0, 2);
  EXPECT_TRUE(torch::equal(b.ids, torch::tensor({{2, 3, 0}, {2, 9, 3}})));
  EXPECT_TRUE(torch::equal(b.segments, torch::tensor({{0, 1, 0}, {0, 0, 0}})));
  EXPECT_TRUE(torch::equal(b.mask, torch::tensor({{1, 1, 0}, {1, 1, 1}})));
  EXPECT_TRUE(torch::equal(b.labels, torch::tensor({0, 1})));
}

}  // namespace
}  // namespace bertology
