#include "server/core/importance/importance.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model/engine.h"
#include "server/core/model/head_reference.h"
#include "server/core/sweep/random_examples_for_tests.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

constexpr int kLayers = 3, kHeads = 4;

std::string GoldenDir() {
  const char* root = std::getenv("BERTOLOGY_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") +
         "/tests/golden/tiny-bert-cls";
}

class ImportanceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ModelOptions options;
    options.dir = GoldenDir();
    auto model = Model::Load(options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(model).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // `n` examples of 3..30 tokens with random ids and labels.
  static std::vector<SweepExample> Examples(int n, uint64_t seed) {
    return RandomExamples(*model_, n, seed, /*max_tokens=*/30,
                          /*id_span=*/115);
  }

  static ModelInput Batch(const std::vector<SweepExample>& examples) {
    std::vector<const Encoding*> encodings;
    for (const SweepExample& e : examples) encodings.push_back(&e.encoding);
    auto input = model_->engine().MakeBatch(encodings);
    EXPECT_TRUE(input.ok()) << input.status();
    return *input;
  }

  static Model* model_;
};
Model* ImportanceTest::model_ = nullptr;

HeadMask PartialMask(AblationMode mode) {
  std::vector<float> v(kLayers * kHeads, 1.0f);
  v[1] = 0.0f;
  v[6] = 0.5f;
  v[11] = 0.0f;
  return *HeadMask::Dense(kLayers, kHeads, v, mode);
}

// The gradient pass computes exactly the inference pass's logits, under
// the identity and under a partial mask in both modes.
TEST_F(ImportanceTest, GradPathLogitsEqualInference) {
  const std::vector<SweepExample> examples = Examples(6, 1);
  const ModelInput input = Batch(examples);
  for (AblationMode mode : {AblationMode::kZero, AblationMode::kUniform}) {
    for (const HeadMask& mask :
         {HeadMask::Identity(kLayers, kHeads, mode), PartialMask(mode)}) {
      std::vector<const HeadMask*> masks(examples.size(), &mask);
      auto plain = model_->engine().Run(input, masks, EngineOptions());
      ASSERT_TRUE(plain.ok()) << plain.status();
      HeadMaskTensor m;
      m.mode = mode;
      m.values = torch::tensor(mask.values()).view({kLayers, kHeads});
      m.values.requires_grad_(true);
      auto grad = model_->engine().RunWithGrad(input, m, EngineOptions());
      ASSERT_TRUE(grad.ok()) << grad.status();
      EXPECT_TRUE(grad->logits.requires_grad());
      EXPECT_TRUE(torch::allclose(grad->logits.detach(), plain->logits,
                                  /*rtol=*/1e-6, /*atol=*/1e-6))
          << mask.DebugString() << "\n"
          << grad->logits << "\n"
          << plain->logits;
    }
  }
}

// Every head's gradient is nonzero on random data, and reading only [CLS]
// in the last layer gives the same gradient as running it in full.
TEST_F(ImportanceTest, MaskGradNonzeroAndClsOnlyMatchesFull) {
  const std::vector<SweepExample> examples = Examples(5, 2);
  const ModelInput input = Batch(examples);
  torch::Tensor grads[2];
  for (int full = 0; full < 2; ++full) {
    HeadMaskTensor m;
    m.values = torch::ones({kLayers, kHeads}).requires_grad_(true);
    EngineOptions options;
    options.cls_only_last_layer = full == 0;
    auto out = model_->engine().RunWithGrad(input, m, options);
    ASSERT_TRUE(out.ok()) << out.status();
    const torch::Tensor loss = out->logits.logsumexp(-1).sum();
    grads[full] = torch::autograd::grad({loss}, {m.values})[0];
  }
  EXPECT_TRUE(grads[0].abs().gt(0).all().item<bool>()) << grads[0];
  EXPECT_TRUE(torch::allclose(grads[0], grads[1], 1e-4, 1e-5))
      << (grads[0] - grads[1]).abs().max() << "\n"
      << grads[0] << "\n"
      << grads[1];
}

// Mean mode: importance is |d loss / d m| for o' = m o + (1 - m) mean,
// checked head by head against central differences of the loss computed by
// the inference path (itself checked against the float64 reference in
// head_reference_test), at m = 0.5 so that m +- eps stays a valid mask.
TEST_F(ImportanceTest, MeanModeGradientMatchesFiniteDifferences) {
  const std::vector<SweepExample> reference_set = Examples(8, 3);
  std::vector<const Encoding*> encodings;
  for (const SweepExample& e : reference_set) encodings.push_back(&e.encoding);
  auto reference = ComputeHeadReference(*model_, encodings);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<SweepExample> one = Examples(1, 7);
  const ModelInput input = Batch(one);
  auto mask_at = [&](int head, float delta, AblationMode mode) {
    std::vector<float> v(kLayers * kHeads, 0.5f);
    if (head >= 0) v[head] += delta;
    HeadMask m = *HeadMask::Dense(kLayers, kHeads, v, mode);
    m.set_reference(*reference);
    return m;
  };
  auto loss = [&](const HeadMask& m) {
    auto out = model_->engine().Run(input, {&m}, EngineOptions());
    EXPECT_TRUE(out.ok()) << out.status();
    return -torch::log_softmax(out->logits.to(torch::kDouble),
                               -1)[0][one[0].label]
                .item<double>();
  };
  ImportanceOptions options;
  options.layer_norm = options.global_norm = false;
  auto mean =
      ComputeHeadImportance(*model_, one, mask_at(-1, 0, AblationMode::kMean),
                            options, ImportanceCallbacks());
  ASSERT_TRUE(mean.ok()) << mean.status();
  auto zero =
      ComputeHeadImportance(*model_, one, mask_at(-1, 0, AblationMode::kZero),
                            options, ImportanceCallbacks());
  ASSERT_TRUE(zero.ok()) << zero.status();
  constexpr float kEps = 1e-2f;
  double largest = 0, mode_gap = 0;
  for (int h = 0; h < kLayers * kHeads; ++h) {
    const double fd = (loss(mask_at(h, kEps, AblationMode::kMean)) -
                       loss(mask_at(h, -kEps, AblationMode::kMean))) /
                      (2 * kEps);
    EXPECT_NEAR(mean->raw[h], std::abs(fd), 1e-3 + 2e-2 * std::abs(fd))
        << "head " << h;
    largest = std::max(largest, mean->raw[h]);
    mode_gap = std::max(mode_gap, std::abs(mean->raw[h] - zero->raw[h]));
  }
  // The check can fail: gradients well above its tolerance, and another
  // gradient than zero ablation's.
  EXPECT_GT(largest, 2e-2);
  EXPECT_GT(mode_gap, 1e-2);
  // Resample has no gradient form; mean needs its statistics.
  HeadMask resample = mask_at(-1, 0, AblationMode::kResample);
  EXPECT_FALSE(ComputeHeadImportance(*model_, one, resample, options,
                                     ImportanceCallbacks())
                   .ok());
}

// Per-row mask copies make importance a sum of per-example |grad|: the
// batching does not change it.
TEST_F(ImportanceTest, BatchingDoesNotChangeImportance) {
  const std::vector<SweepExample> examples = Examples(9, 3);
  ImportanceOptions one, many;
  one.max_batch_rows = 1;
  many.max_batch_rows = 4;
  const HeadMask mask = PartialMask(AblationMode::kZero);
  auto a = ComputeHeadImportance(*model_, examples, mask, one, {});
  auto b = ComputeHeadImportance(*model_, examples, mask, many, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->raw.size(), kLayers * kHeads);
  for (int i = 0; i < kLayers * kHeads; ++i) {
    EXPECT_NEAR(a->raw[i], b->raw[i], 1e-5 * std::abs(a->raw[i]) + 1e-9) << i;
    EXPECT_GT(a->raw[i], 0) << i;
  }
  EXPECT_EQ(a->correct, b->correct);
  EXPECT_EQ(a->examples, 9);
  EXPECT_EQ(a->scored, 9);
  EXPECT_NEAR(a->loss_sum, b->loss_sum, 1e-4);
  // Normalised: in [0, 1] with both ends reached.
  double lo = 1, hi = 0;
  for (double v : a->importance) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_DOUBLE_EQ(lo, 0.0);
  EXPECT_DOUBLE_EQ(hi, 1.0);
}

TEST(NormalizeImportanceTest, FollowsHf) {
  const std::vector<double> raw = {3, 4, 0, 0, 1, 1};  // 3 layers x 2 heads
  ImportanceOptions off;
  off.layer_norm = off.global_norm = false;
  EXPECT_EQ(NormalizeImportance(raw, 3, 2, off), raw);
  ImportanceOptions layer = off;
  layer.layer_norm = true;
  const std::vector<double> l = NormalizeImportance(raw, 3, 2, layer);
  EXPECT_NEAR(l[0], 0.6, 1e-12);
  EXPECT_NEAR(l[1], 0.8, 1e-12);
  EXPECT_EQ(l[2], 0.0);  // +1e-20: no 0/0
  EXPECT_NEAR(l[4], 1 / std::sqrt(2.0), 1e-12);
  ImportanceOptions both;
  const std::vector<double> g = NormalizeImportance(raw, 3, 2, both);
  EXPECT_NEAR(g[0], 0.6 / 0.8, 1e-12);
  EXPECT_NEAR(g[1], 1.0, 1e-12);
  EXPECT_NEAR(g[2], 0.0, 1e-12);
}

TEST_F(ImportanceTest, RefusesBadInput) {
  const HeadMask id = HeadMask::Identity(kLayers, kHeads);
  auto empty = ComputeHeadImportance(*model_, {}, id, {}, {});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("examples"));

  std::vector<SweepExample> bad = Examples(3, 4);
  bad[2].label = 3;
  auto label = ComputeHeadImportance(*model_, bad, id, {}, {});
  EXPECT_EQ(label.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(label.status().message(), HasSubstr("examples[2].label=3"));

  const HeadMask wrong = HeadMask::Identity(2, kHeads);
  auto shape = ComputeHeadImportance(*model_, Examples(2, 5), wrong, {}, {});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);

  const std::vector<SweepExample> examples = Examples(2, 6);
  const ModelInput input = Batch(examples);
  HeadMaskTensor m;
  m.values = torch::ones({kLayers, kHeads + 1});
  auto bad_mask = model_->engine().RunWithGrad(input, m, EngineOptions());
  EXPECT_EQ(bad_mask.status().code(), absl::StatusCode::kInvalidArgument);
  m.values = torch::ones({kLayers, kHeads});
  {
    torch::InferenceMode inference;
    auto under = model_->engine().RunWithGrad(input, m, EngineOptions());
    EXPECT_EQ(under.status().code(), absl::StatusCode::kFailedPrecondition);
  }

  for (double t : {0.0, -0.1, 1.5, std::nan("")}) {
    PruneOptions options;
    options.threshold = t;
    auto r = RunPruneCurve(*model_, examples, options, {});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << t;
    EXPECT_THAT(r.status().message(), HasSubstr("threshold")) << t;
    options.threshold = 0.9;
    options.step_fraction = t;
    r = RunPruneCurve(*model_, examples, options, {});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << t;
    EXPECT_THAT(r.status().message(), HasSubstr("step_fraction")) << t;
  }
}

TEST_F(ImportanceTest, CancelledBetweenPasses) {
  ImportanceCallbacks callbacks;
  callbacks.is_cancelled = [] { return true; };
  auto r =
      ComputeHeadImportance(*model_, Examples(3, 7),
                            HeadMask::Identity(kLayers, kHeads), {}, callbacks);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
}

// Each step masks the least important unmasked heads of the previous
// step's importance, and its scores are the importance run's under the
// step's mask.
TEST_F(ImportanceTest, PruneCurveMasksLeastImportant) {
  const std::vector<SweepExample> examples = Examples(12, 8);
  PruneOptions options;
  options.threshold = 0.01;  // run long
  options.step_fraction = 0.25;
  std::vector<PruneStep> steps;
  PruneCallbacks callbacks;
  callbacks.on_step = [&](const PruneStep& s) { steps.push_back(s); };
  auto kept = RunPruneCurve(*model_, examples, options, callbacks);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[0].heads_left, 12);
  EXPECT_TRUE(steps[0].masked.empty());
  for (size_t s = 1; s < steps.size(); ++s) {
    EXPECT_EQ(steps[s].step, static_cast<int>(s));
    EXPECT_EQ(steps[s].masked_this_step.size(), 3u);
    EXPECT_EQ(steps[s].heads_left, 12 - 3 * static_cast<int>(s));
    const std::vector<double>& prev = steps[s - 1].scores.importance;
    std::vector<bool> was(12, false), now(12, false);
    for (const LayerHead& lh : steps[s - 1].masked)
      was[lh.layer * 4 + lh.head] = true;
    double worst_new = -1;
    for (const LayerHead& lh : steps[s].masked_this_step) {
      const int i = lh.layer * 4 + lh.head;
      EXPECT_FALSE(was[i]);
      now[i] = true;
      worst_new = std::max(worst_new, prev[i]);
    }
    for (int i = 0; i < 12; ++i) {
      if (!was[i] && !now[i]) EXPECT_GE(prev[i], worst_new) << s << " " << i;
    }
    std::vector<float> v(12, 1.0f);
    for (const LayerHead& lh : steps[s].masked) v[lh.layer * 4 + lh.head] = 0;
    auto direct = ComputeHeadImportance(
        *model_, examples, *HeadMask::Dense(kLayers, kHeads, v), {}, {});
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(direct->correct, steps[s].scores.correct);
  }
  EXPECT_GE(*kept, 0);
  EXPECT_LT(*kept, static_cast<int>(steps.size()));
}

}  // namespace
}  // namespace bertology
