// The engine on one device and precision, as the environment names them:
//   BERTOLOGY_TEST_DEVICE     cpu (default), cuda, cuda:N
//   BERTOLOGY_TEST_DTYPE      F32 (default), BF16, F16
//   BERTOLOGY_TEST_TF32       1: TF32 matrix products on CUDA (default 0)
//   BERTOLOGY_TEST_ATTENTION  auto (default), explicit, fused
// scripts/gpu_check.sh runs it on the lent GPU under each precision; `make
// test` runs it on CPU at F32. What it checks:
//   - the float64 goldens (tests/golden: make_golden.py and
//     intervention_reference.py) under every mask mode, logits and
//     attention maps, at the precision's stated tolerance (Tolerances);
//   - a sweep's results equal across worker counts and batch sizes;
//   - masks isolated under concurrency: threads running different masks at
//     once each get their mask's result alone.
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/core/model/engine.h"
#include "server/core/model/golden_for_tests.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"
#include "server/core/sweep/random_examples_for_tests.h"
#include "server/core/sweep/sweep.h"

namespace bertology {
namespace {

using json = nlohmann::json;

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// What each precision may differ from float64 by. F32: as the CPU tests
// (model_test.cc). BF16: as model_test.cc's Bf16IsCloseToF32, which
// explains them (8 significant bits in every weight and activation: 0.146
// in a logit and 0.099 in a probability measured on CPU; twice the logit
// bound stays below the 0.71 the smallest golden mask moves a logit). F16
// keeps 11 bits and TF32 rounds only the products' inputs to 11: about a
// quarter of BF16's error, bounded here by a quarter of its tolerances.
struct Tolerances {
  double logits, maps;
};

Tolerances ToleranceFor(const std::string& dtype, bool tf32) {
  if (dtype == "BF16") return {0.25, 0.15};
  if (dtype == "F16" || tf32) return {0.06, 0.04};
  return {1e-4, 1e-5};
}

class DeviceCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ModelOptions options;
    options.dir = golden::SourceDir() + "/tests/golden/tiny-bert-cls";
    options.device = Env("BERTOLOGY_TEST_DEVICE", "cpu");
    options.dtype = Env("BERTOLOGY_TEST_DTYPE", "F32");
    options.attention = Env("BERTOLOGY_TEST_ATTENTION", "auto");
    options.tf32 = Env("BERTOLOGY_TEST_TF32", "0") == "1";
    auto model = Model::Load(options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
    tol_ = ToleranceFor(model_->dtype(),
                        options.tf32 && model_->device() != "cpu");
    std::cerr << "device_check: " << model_->device() << " " << model_->dtype()
              << (options.tf32 ? " tf32" : "") << " " << model_->attention()
              << " attention; tolerances logits " << tol_.logits << ", maps "
              << tol_.maps << "\n";
  }
  static void TearDownTestSuite() { delete model_; }

  // The golden file's padded rows as encodings, batched by the model (so on
  // its device).
  static ModelInput Batch(const json& ids, const json& types, const json& mask,
                          std::vector<Encoding>* keep) {
    keep->clear();
    for (size_t r = 0; r < ids.size(); ++r) {
      keep->push_back(golden::EncodingOf(ids[r], types[r], mask[r]));
    }
    std::vector<const Encoding*> ptrs;
    for (const Encoding& e : *keep) ptrs.push_back(&e);
    auto batch = model_->engine().MakeBatch(ptrs);
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  }

  static std::vector<float> Values(const json& rows, size_t r) {
    std::vector<float> values;
    for (const json& layer : rows[r]) {
      for (const json& v : layer) values.push_back(v.get<float>());
    }
    return values;
  }

  static Model* model_;
  static Tolerances tol_;
};

Model* DeviceCheckTest::model_ = nullptr;
Tolerances DeviceCheckTest::tol_;

TEST_F(DeviceCheckTest, ZeroAndUniformMasksMatchTheGoldens) {
  const json golden = golden::Read("tiny-bert-cls.golden.json");
  std::vector<Encoding> keep;
  const ModelInput input = Batch(golden["input_ids"], golden["token_type_ids"],
                                 golden["attention_mask"], &keep);
  double worst_logit = 0, worst_map = 0;
  for (const json& c : golden["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<HeadMask> masks;
    for (size_t r = 0; r < c["head_mask"].size(); ++r) {
      auto m = HeadMask::Dense(3, 4, Values(c["head_mask"], r),
                               c["uniform_rows"][r].get<int>() == 1
                                   ? AblationMode::kUniform
                                   : AblationMode::kZero);
      ASSERT_TRUE(m.ok()) << m.status();
      masks.push_back(*m);
    }
    std::vector<const HeadMask*> ptrs;
    for (const HeadMask& m : masks) ptrs.push_back(&m);
    EngineOptions options;
    options.attention_layers = {0, 1, 2};
    auto out = model_->engine().Run(input, ptrs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    const double logit = golden::MaxAbsDiff(
        out->logits, golden::ToTensor(c["logits"], torch::kDouble));
    EXPECT_LT(logit, tol_.logits);
    worst_logit = std::max(worst_logit, logit);
    for (int l = 0; l < 3; ++l) {
      const double map = golden::MaxAbsDiff(
          out->attentions.at(l),
          golden::ToTensor(c["attentions"][l], torch::kDouble));
      EXPECT_LT(map, tol_.maps) << "layer " << l;
      worst_map = std::max(worst_map, map);
    }
  }
  std::cerr << "device_check: zero/uniform goldens: largest logit gap "
            << worst_logit << ", map gap " << worst_map << "\n";
}

TEST_F(DeviceCheckTest, MeanAndResampleMatchTheGoldens) {
  // Every draw of a resample case is its own golden: each row reads its
  // own source input's per-position outputs (head_reference.h).
  const json golden = golden::Read("interventions.golden.json");
  const auto stats = golden::ReferenceStats(*model_, golden);
  ASSERT_NE(stats, nullptr);
  double worst = 0;
  int compared = 0;
  for (const json& c : golden["ablation_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<HeadMask> masks;
    for (size_t r = 0; r < c["head_mask"].size(); ++r) {
      masks.push_back(golden::InterventionMask(c, r, stats));
    }
    std::vector<const HeadMask*> ptrs;
    for (const HeadMask& m : masks) ptrs.push_back(&m);
    const int draws = std::max(1, c["draws"].get<int>());
    for (int k = 0; k < draws; ++k) {
      auto out = model_->engine().Run(golden::GoldenInput(*model_, golden, k),
                                      ptrs, EngineOptions{});
      ASSERT_TRUE(out.ok()) << out.status();
      const double gap =
          golden::MaxAbsDiff(out->logits, golden::CaseLogits(c, k));
      EXPECT_LT(gap, tol_.logits) << "draw " << k;
      worst = std::max(worst, gap);
      ++compared;
    }
  }
  EXPECT_GT(compared, static_cast<int>(golden["ablation_cases"].size()));
  std::cerr << "device_check: mean/role-mean/resample goldens (" << compared
            << " logit sets): largest logit gap " << worst << "\n";
}

// Random labelled examples of 3 to 40 tokens from the model's vocabulary.
std::vector<SweepExample> Examples(const Model& model, int n, uint64_t seed) {
  return RandomExamples(model, n, seed, /*max_tokens=*/40, /*id_span=*/90);
}

TEST_F(DeviceCheckTest, SweepResultsDoNotDependOnWorkersOrBatchRows) {
  const std::vector<SweepExample> examples = Examples(*model_, 61, 3);
  const std::vector<SweepMask> masks =
      SingleHeadMasks(3, 4, AblationMode::kZero);
  auto run = [&](int rows, int workers) {
    SweepOptions options;
    options.max_batch_rows = rows;
    options.workers = workers;
    std::map<int, MaskResult> results;
    SweepCallbacks callbacks;
    callbacks.on_result = [&](const MaskResult& r) {
      results[r.mask_index] = r;
    };
    const absl::Status s =
        SweepExecutor(model_, options).Run(examples, masks, callbacks);
    EXPECT_TRUE(s.ok()) << s;
    return results;
  };
  const std::map<int, MaskResult> want = run(7, 1);
  ASSERT_EQ(want.size(), masks.size());
  // Per mask, the examples whose top two logits are closer than twice the
  // precision's logit tolerance: batches of other shapes round differently,
  // and only these may change their argmax (none, typically, at F32).
  std::vector<const Encoding*> encodings;
  for (const SweepExample& e : examples) encodings.push_back(&e.encoding);
  auto input = model_->engine().MakeBatch(encodings);
  ASSERT_TRUE(input.ok()) << input.status();
  std::map<int, int> near_ties;
  for (size_t m = 0; m < masks.size(); ++m) {
    auto out = model_->engine().Run(
        *input, std::vector<const HeadMask*>(examples.size(), &masks[m].mask),
        EngineOptions{});
    ASSERT_TRUE(out.ok()) << out.status();
    const torch::Tensor top2 = std::get<0>(out->logits.topk(2, 1));
    near_ties[m] = (top2.select(1, 0) - top2.select(1, 1) < 2 * tol_.logits)
                       .sum()
                       .item<int>();
  }
  for (const auto& [rows, workers] :
       std::vector<std::pair<int, int>>{{64, 1}, {512, 1}, {7, 2}, {64, 3}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(workers) +
                 " workers");
    const std::map<int, MaskResult> got = run(rows, workers);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [m, r] : want) {
      EXPECT_LE(std::abs(got.at(m).correct - r.correct), near_ties[m])
          << masks[m].id;
      // A log-softmax moves by at most twice its largest logit's error.
      EXPECT_NEAR(got.at(m).loss_sum, r.loss_sum,
                  2 * tol_.logits * examples.size())
          << masks[m].id;
    }
  }
}

TEST_F(DeviceCheckTest, MasksStayIsolatedUnderConcurrency) {
  const std::vector<SweepExample> examples = Examples(*model_, 9, 5);
  std::vector<const Encoding*> encodings;
  for (const SweepExample& e : examples) encodings.push_back(&e.encoding);
  auto input = model_->engine().MakeBatch(encodings);
  ASSERT_TRUE(input.ok()) << input.status();
  // Eight masks, each in its own thread: one head each, alternating modes.
  std::vector<HeadMask> masks;
  for (int i = 0; i < 8; ++i) {
    auto m = HeadMask::Ablate(
        3, 4, {{i % 3, (i * 3) % 4}},
        i % 2 == 0 ? AblationMode::kZero : AblationMode::kUniform);
    ASSERT_TRUE(m.ok()) << m.status();
    masks.push_back(*m);
  }
  auto run = [&](const HeadMask& mask) {
    auto out = model_->engine().Run(
        *input, std::vector<const HeadMask*>(encodings.size(), &mask),
        EngineOptions{});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->logits : torch::Tensor();
  };
  std::vector<torch::Tensor> alone;
  for (const HeadMask& m : masks) alone.push_back(run(m));
  // The masks are told apart (eight different heads): a leak from one
  // thread's mask into another's would show.
  for (size_t i = 0; i < masks.size(); ++i) {
    for (size_t j = i + 1; j < masks.size(); ++j) {
      EXPECT_GT(golden::MaxAbsDiff(alone[i], alone[j]), 1e-4)
          << i << " vs " << j;
    }
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < masks.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 20; ++rep) {
        // Same shapes, same kernels: the same bits as alone.
        if (!torch::equal(run(masks[i]), alone[i])) ++mismatches;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace bertology
