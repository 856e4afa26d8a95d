#include "client/scheduler/sweep_merger.h"

#include <string>

#include "client/scheduler/fake_executor_test_util.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

std::vector<PlannedMask> Masks(int n) {
  std::vector<PlannedMask> masks(n);
  for (int i = 0; i < n; ++i) {
    masks[i].id = absl::StrCat("m", i);
    masks[i].wire.mutable_explicit_mask()->set_id(masks[i].id);
  }
  return masks;
}

std::vector<v1::LabeledExample> Examples(int n) {
  std::vector<v1::LabeledExample> out(n);
  for (int i = 0; i < n; ++i) {
    out[i].mutable_input()->set_text_a(absl::StrCat("text ", i));
    out[i].set_label(i % 3);
  }
  return out;
}

// Runs every shard through the fake executor and merges.
SweepSummary MergeWith(const std::vector<PlannedMask>& masks,
                       const std::vector<v1::LabeledExample>& examples,
                       ShardingOptions sharding, bool reverse) {
  testing::FakeExecutor exec(1);
  SweepMerger merger(masks, static_cast<int>(examples.size()));
  std::vector<Shard> shards =
      PlanShards(static_cast<int>(masks.size()),
                 static_cast<int>(examples.size()), sharding);
  if (reverse) std::reverse(shards.begin(), shards.end());
  for (const Shard& s : shards) {
    v1::SweepAblationRequest req;
    for (int e = s.example_begin; e < s.example_end; ++e) {
      *req.add_examples() = examples[e];
    }
    for (int m = s.mask_begin; m < s.mask_end; ++m) {
      *req.add_masks() = masks[m].wire;
    }
    ShardAttempt a = exec.Run(0, req, absl::Seconds(1), {});
    EXPECT_TRUE(a.status.ok()) << a.status;
    ShardResult& r = a.result;
    r.shard = s;
    for (MaskCounts& c : r.masks) c.mask_index += s.mask_begin;
    EXPECT_TRUE(merger.Add(r).ok());
  }
  auto summary = merger.Finish();
  EXPECT_TRUE(summary.ok()) << summary.status();
  return *summary;
}

void ExpectSame(const SweepSummary& a, const SweepSummary& b) {
  ASSERT_EQ(a.masks.size(), b.masks.size());
  EXPECT_EQ(a.baseline.counts.correct, b.baseline.counts.correct);
  EXPECT_EQ(a.baseline.counts.loss_sum, b.baseline.counts.loss_sum);
  for (size_t i = 0; i < a.masks.size(); ++i) {
    EXPECT_EQ(a.masks[i].counts.mask_id, b.masks[i].counts.mask_id);
    EXPECT_EQ(a.masks[i].counts.examples, b.masks[i].counts.examples);
    EXPECT_EQ(a.masks[i].counts.correct, b.masks[i].counts.correct);
    EXPECT_EQ(a.masks[i].counts.loss_sum, b.masks[i].counts.loss_sum);
    EXPECT_EQ(a.masks[i].accuracy, b.masks[i].accuracy);
    EXPECT_EQ(a.masks[i].relative_change_percent,
              b.masks[i].relative_change_percent);
    // The intervals come from sums that add across example chunks.
    ASSERT_TRUE(a.masks[i].accuracy_delta_ci.has_value());
    ASSERT_TRUE(b.masks[i].accuracy_delta_ci.has_value());
    EXPECT_NEAR(a.masks[i].accuracy_delta_ci->low,
                b.masks[i].accuracy_delta_ci->low, 1e-12);
    EXPECT_NEAR(a.masks[i].accuracy_delta_ci->high,
                b.masks[i].accuracy_delta_ci->high, 1e-12);
    EXPECT_DOUBLE_EQ(a.masks[i].accuracy_ci.low, b.masks[i].accuracy_ci.low);
  }
  EXPECT_FALSE(a.baseline.accuracy_delta_ci.has_value());
}

TEST(PlanShardsTest, TilesMasksAndExamples) {
  const auto shards = PlanShards(10, 7, {4, 3});
  ASSERT_EQ(shards.size(), 9u);  // 3 mask ranges x 3 example chunks
  int64_t pairs = 0;
  for (const Shard& s : shards) pairs += s.num_masks() * s.num_examples();
  EXPECT_EQ(pairs, 70);
  EXPECT_EQ(shards.back().Key(), "m8-10:e6-7");
}

TEST(SweepMergerTest, AnyShardingMergesToTheSingleRun) {
  const auto masks = Masks(13);
  const auto examples = Examples(29);
  const SweepSummary single = MergeWith(masks, examples, {13, 29}, false);
  ExpectSame(single, MergeWith(masks, examples, {1, 1}, true));
  ExpectSame(single, MergeWith(masks, examples, {4, 10}, false));
  ExpectSame(single, MergeWith(masks, examples, {5, 7}, true));
  // Accuracy and deltas follow from the counts.
  const MergedMask& m = single.masks[3];
  EXPECT_DOUBLE_EQ(m.accuracy, static_cast<double>(m.counts.correct) / 29);
  EXPECT_DOUBLE_EQ(m.accuracy_delta, m.accuracy - single.baseline.accuracy);
  EXPECT_EQ(single.baseline.counts.examples, 29);
}

TEST(SweepMergerTest, RefusesDuplicatesAndReportsGaps) {
  const auto masks = Masks(2);
  SweepMerger merger(masks, 4);
  ShardResult r;
  r.shard = {0, 0, 2, 0, 2};
  r.baseline.examples = r.baseline.scored = 2;
  r.masks.resize(2);
  for (int i = 0; i < 2; ++i) {
    r.masks[i].mask_index = i;
    r.masks[i].examples = r.masks[i].scored = 2;
  }
  ASSERT_TRUE(merger.Add(r).ok());
  EXPECT_EQ(merger.Add(r).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(merger.Finish().status().code(),
            absl::StatusCode::kFailedPrecondition);  // examples 2-4 missing
  ShardResult bad = r;
  bad.shard = {1, 0, 2, 2, 4};
  bad.masks.pop_back();
  EXPECT_EQ(merger.Add(bad).code(), absl::StatusCode::kInvalidArgument);
}

// One shard of masks [begin, end) on examples [0, 2), every mask 1 of 2.
ShardResult Shard2(int begin, int end, int base_correct, double base_loss,
                   const std::string& replica) {
  ShardResult r;
  r.shard = {begin, begin, end, 0, 2};
  r.replica = replica;
  r.baseline.examples = r.baseline.scored = 2;
  r.baseline.correct = base_correct;
  r.baseline.loss_sum = base_loss;
  for (int i = begin; i < end; ++i) {
    MaskCounts c;
    c.mask_index = i;
    c.examples = c.scored = 2;
    c.correct = 1;
    c.loss_sum = 1.5;
    r.masks.push_back(c);
  }
  return r;
}

TEST(SweepMergerTest, RefusesBaselinesThatDisagree) {
  // An F32 and a BF16 replica: the same counts, another loss sum.
  SweepMerger loss(Masks(2), 2);
  ASSERT_TRUE(loss.Add(Shard2(0, 1, 2, 0.6931, "f32:50051")).ok());
  const absl::Status s = loss.Add(Shard2(1, 2, 2, 0.6953, "bf16:50051"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  for (const char* part :
       {"shard m1-2:e0-2 (from bf16:50051)", "shard m0-1:e0-2 (from f32:50051)",
        "the replicas score differently",
        "loss_sum differs by 0.00316 relative (tolerated: 1e-05)"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << s;
  }
  // Equal counts are not named as a difference.
  EXPECT_EQ(s.message().find("correct 2 vs"), std::string::npos) << s;
  // The refused shard counts nothing: the sweep is not complete.
  EXPECT_FALSE(loss.Finish().ok());
  // Another count of correct examples.
  SweepMerger correct(Masks(2), 2);
  ASSERT_TRUE(correct.Add(Shard2(0, 1, 2, 0.5, "a")).ok());
  const absl::Status c = correct.Add(Shard2(1, 2, 1, 0.5, "b"));
  EXPECT_EQ(c.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(c.message().find("correct 1 vs 2 (counts must be equal)"),
            std::string::npos)
      << c;
  // Float noise between identical replicas is not a disagreement.
  SweepMerger noise(Masks(2), 2);
  ASSERT_TRUE(noise.Add(Shard2(0, 1, 2, 0.6931, "a")).ok());
  ASSERT_TRUE(noise.Add(Shard2(1, 2, 2, 0.6931 * (1 + 1e-7), "b")).ok());
  EXPECT_TRUE(noise.Finish().ok());
}

// Shards of one chunk whose baselines differ in their last bits (replicas
// that round differently) merge to the same numbers whichever finished
// first: the lowest mask index's is kept.
TEST(SweepMergerTest, KeepsTheLowestShardsBaselineInAnyOrder) {
  const ShardResult low = Shard2(0, 1, 2, 0.6931, "a");
  const ShardResult high = Shard2(1, 2, 2, 0.6931 * (1 + 1e-7), "b");
  SweepMerger in_order(Masks(2), 2);
  ASSERT_TRUE(in_order.Add(low).ok());
  ASSERT_TRUE(in_order.Add(high).ok());
  SweepMerger reversed(Masks(2), 2);
  ASSERT_TRUE(reversed.Add(high).ok());
  ASSERT_TRUE(reversed.Add(low).ok());
  auto a = in_order.Finish();
  auto b = reversed.Finish();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->baseline.counts.loss_sum, 0.6931);
  EXPECT_EQ(b->baseline.counts.loss_sum, 0.6931);
  ASSERT_EQ(b->masks.size(), 2u);
  EXPECT_EQ(a->masks[1].mean_loss_delta, b->masks[1].mean_loss_delta);
}

TEST(SweepMergerTest, NoRelativeChangeAtAZeroBaseline) {
  SweepMerger merger(Masks(1), 2);
  ASSERT_TRUE(merger.Add(Shard2(0, 1, 0, 1.0, "a")).ok());
  auto summary = merger.Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->masks[0].accuracy_delta, 0.5);
  EXPECT_FALSE(summary->masks[0].relative_change_percent.has_value());
  EXPECT_FALSE(summary->baseline.relative_change_percent.has_value());
  SweepMerger nonzero(Masks(1), 2);
  ASSERT_TRUE(nonzero.Add(Shard2(0, 1, 2, 1.0, "a")).ok());
  EXPECT_EQ(nonzero.Finish()->masks[0].relative_change_percent, -50.0);
}

}  // namespace
// A token classifier's shards: accuracy and mean loss are per labelled word
// (scored), summed over shards, not per example.
TEST(SweepMergerTest, TokenClassifierCountsScoredWords) {
  SweepMerger merger(Masks(1), 4);
  for (int half = 0; half < 2; ++half) {
    ShardResult r;
    r.shard = {half, 0, 1, 2 * half, 2 * half + 2};
    r.baseline.examples = 2;
    r.baseline.scored = 7;
    r.baseline.correct = 6;
    r.baseline.loss_sum = 1.4;
    MaskCounts c;
    c.mask_index = 0;
    c.examples = 2;
    c.scored = 7;
    c.correct = 3 + half;
    c.loss_sum = 2.8;
    r.masks.push_back(c);
    ASSERT_TRUE(merger.Add(r).ok());
  }
  auto summary = merger.Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->baseline.counts.scored, 14);
  EXPECT_DOUBLE_EQ(summary->baseline.accuracy, 12.0 / 14);
  EXPECT_DOUBLE_EQ(summary->masks[0].accuracy, 7.0 / 14);
  EXPECT_DOUBLE_EQ(summary->masks[0].mean_loss_delta, (5.6 - 2.8) / 14);
}

}  // namespace client
}  // namespace bertology
