#include "server/core/sweep/sweep.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model/engine.h"
#include "server/core/model/head_reference.h"
#include "server/core/process/threading.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

constexpr double kLossTolerance = 1e-4;

std::string GoldenDir() {
  const char* root = std::getenv("BERTOLOGY_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") +
         "/tests/golden/tiny-bert-cls";
}

class SweepTest : public ::testing::Test {
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

  // `n` examples of varied lengths (3..40 tokens, some pairs) with random
  // token ids and labels, fixed by `seed`.
  static std::vector<SweepExample> Examples(int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const SpecialTokens& specials = model_->tokenizer().specials();
    std::vector<SweepExample> examples;
    for (int i = 0; i < n; ++i) {
      const int len = 3 + static_cast<int>(rng() % 38);
      const int split = len > 6 && rng() % 2 == 0 ? len / 2 : len;
      SweepExample ex;
      for (int j = 0; j < len; ++j) {
        Token t;
        t.id = (j == 0) ? specials.cls_id
               : (j == split - 1 || j == len - 1)
                   ? specials.sep_id
                   : 5 + static_cast<int>(rng() % 115);
        t.segment = j >= split ? 1 : 0;
        ex.encoding.tokens.push_back(t);
      }
      ex.label = static_cast<int>(rng() % 3);
      examples.push_back(std::move(ex));
    }
    return examples;
  }

  // Heads, layers, random subsets, fractional values, both modes, the
  // identity: every start layer and the baseline shortcut.
  static std::vector<SweepMask> Masks() {
    std::vector<SweepMask> masks = SingleHeadMasks(3, 4, AblationMode::kZero);
    for (SweepMask& m : LayerMasks(3, 4, AblationMode::kUniform)) {
      masks.push_back(std::move(m));
    }
    auto random = RandomMasks(3, 4, 0.5, 3, 11, 0, 3, AblationMode::kZero);
    EXPECT_TRUE(random.ok());
    for (SweepMask& m : *random) masks.push_back(std::move(m));
    std::vector<float> half(12, 1.0f);
    for (int h = 0; h < 4; ++h) half[4 + h] = 0.25f * h;  // layer 1
    half[11] = 0.5f;
    for (AblationMode mode : {AblationMode::kZero, AblationMode::kUniform}) {
      masks.push_back({"fractional", "", *HeadMask::Dense(3, 4, half, mode)});
    }
    masks.push_back(
        {"uniform-L2H1", "",
         *HeadMask::Ablate(3, 4, {{2, 1}}, AblationMode::kUniform)});
    masks.push_back({"identity", "", HeadMask::Identity(3, 4)});
    masks.push_back(
        {"keep-L0", "",
         *HeadMask::KeepOnly(3, 4, {{0, 0}, {0, 1}, {0, 2}, {0, 3}})});
    return masks;
  }

  // The reference: each (mask, example) alone through a full forward pass,
  // scored in double precision.
  static MaskResult Naive(const std::vector<SweepExample>& examples,
                          const HeadMask* mask) {
    MaskResult result;
    for (const SweepExample& ex : examples) {
      auto input = model_->engine().MakeBatch({&ex.encoding});
      EXPECT_TRUE(input.ok()) << input.status();
      auto out = model_->engine().Run(*input, {mask}, EngineOptions());
      EXPECT_TRUE(out.ok()) << out.status();
      const torch::Tensor logits = out->logits.to(torch::kDouble);
      const auto a = logits.accessor<double, 2>();
      int best = 0;
      double max = a[0][0];
      for (int c = 1; c < logits.size(1); ++c) {
        if (a[0][c] > a[0][best]) best = c;
        max = std::max(max, a[0][c]);
      }
      double sum = 0;
      for (int c = 0; c < logits.size(1); ++c) sum += std::exp(a[0][c] - max);
      ++result.examples;
      result.correct += best == ex.label ? 1 : 0;
      result.loss_sum += std::log(sum) + max - a[0][ex.label];
    }
    return result;
  }

  struct Recorded {
    absl::Status status;
    MaskResult baseline;
    std::map<int, MaskResult> results;
    std::vector<std::string> events;  // "baseline", "result", "progress"
    std::vector<std::pair<int64_t, int64_t>> progress;
    int result_calls = 0;
  };

  static Recorded RunSweep(const SweepOptions& options,
                           const std::vector<SweepExample>& examples,
                           const std::vector<SweepMask>& masks,
                           std::function<bool()> is_cancelled = nullptr) {
    Recorded rec;
    SweepCallbacks callbacks;
    callbacks.on_baseline = [&](const MaskResult& r) {
      rec.baseline = r;
      rec.events.push_back("baseline");
    };
    callbacks.on_result = [&](const MaskResult& r) {
      rec.results[r.mask_index] = r;
      ++rec.result_calls;
      rec.events.push_back("result");
    };
    callbacks.on_progress = [&](int64_t done, int64_t total) {
      rec.progress.push_back({done, total});
      rec.events.push_back("progress");
    };
    callbacks.is_cancelled = std::move(is_cancelled);
    rec.status = SweepExecutor(model_, options).Run(examples, masks, callbacks);
    return rec;
  }

  static Model* model_;
};

Model* SweepTest::model_ = nullptr;

void ExpectSameScores(const MaskResult& got, const MaskResult& want,
                      const std::string& what) {
  EXPECT_EQ(got.examples, want.examples) << what;
  EXPECT_EQ(got.correct, want.correct) << what;
  EXPECT_NEAR(got.loss_sum, want.loss_sum, kLossTolerance) << what;
  EXPECT_DOUBLE_EQ(got.accuracy,
                   static_cast<double>(got.correct) / got.examples)
      << what;
}

TEST_F(SweepTest, MatchesNaivePerMaskForwardPasses) {
  const std::vector<SweepExample> examples = Examples(17, 1);
  const std::vector<SweepMask> masks = Masks();
  const MaskResult naive_baseline = Naive(examples, nullptr);
  std::vector<MaskResult> naive;
  int differs_from_baseline = 0;
  for (const SweepMask& m : masks) {
    naive.push_back(Naive(examples, &m.mask));
    if (std::abs(naive.back().loss_sum - naive_baseline.loss_sum) > 1e-3) {
      ++differs_from_baseline;
    }
  }
  // The comparison means something only if masks change the scores.
  EXPECT_GT(differs_from_baseline, static_cast<int>(masks.size()) / 2);

  struct Config {
    int max_batch_rows;
    int64_t cache_budget_bytes;
    bool levers = true;  // pack_tokens and reuse_head_outputs
  };
  // Dense batches in one chunk (their padding is packed away); one row per
  // pass with one example per chunk; big batches over several chunks; the
  // padded pass without the cached head outputs.
  for (const Config& c :
       {Config{7, int64_t{1} << 30}, Config{1, 0}, Config{64, 20000},
        Config{7, int64_t{1} << 30, false}}) {
    SweepOptions options;
    options.max_batch_rows = c.max_batch_rows;
    options.cache_budget_bytes = c.cache_budget_bytes;
    options.pack_tokens = options.reuse_head_outputs = c.levers;
    const std::string what =
        "max_batch_rows=" + std::to_string(c.max_batch_rows) +
        " budget=" + std::to_string(c.cache_budget_bytes) +
        " levers=" + (c.levers ? "on" : "off");
    Recorded rec = RunSweep(options, examples, masks);
    ASSERT_TRUE(rec.status.ok()) << rec.status << " " << what;
    EXPECT_EQ(rec.baseline.mask_index, -1);
    ExpectSameScores(rec.baseline, naive_baseline, what + " baseline");
    ASSERT_EQ(rec.result_calls, static_cast<int>(masks.size())) << what;
    for (size_t m = 0; m < masks.size(); ++m) {
      ASSERT_EQ(rec.results.count(m), 1u) << what;
      ExpectSameScores(rec.results[m], naive[m], what + " " + masks[m].id);
    }
  }
}

TEST_F(SweepTest, ResampleScoresEveryDrawAndPairsWithTheBaseline) {
  // Resample runs each example once per draw, the metric averaged over
  // draws, the spread per draw kept; role means fill by position. Both
  // against each row run alone; the paired sums against the baseline's
  // per-example scores.
  const std::vector<SweepExample> examples = Examples(9, 41);
  const std::vector<SweepExample> pool = Examples(30, 77);
  std::vector<const Encoding*> refs;
  for (const SweepExample& e : pool) refs.push_back(&e.encoding);
  auto reference = ComputeHeadReference(*model_, refs, 8);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<SweepMask> masks;
  for (AblationMode mode : {AblationMode::kResample, AblationMode::kMeanByRole,
                            AblationMode::kMean, AblationMode::kZero}) {
    auto m = HeadMask::Ablate(3, 4, {{1, 2}, {2, 0}, {2, 3}}, mode);
    ASSERT_TRUE(m.ok());
    ResampleDraws draws{3, 5, ResampleAlignment::kScaled};
    m->set_reference(*reference, draws);
    masks.push_back({AblationModeName(mode), "", *m});
  }
  auto first_layer = HeadMask::Ablate(3, 4, {{0, 1}}, AblationMode::kResample);
  first_layer->set_reference(*reference,
                             ResampleDraws{2, 9, ResampleAlignment::kScaled});
  masks.push_back({"resample-L0H1", "", *first_layer});
  // Per example, one row alone at draw k: units right and loss.
  auto row = [&](const SweepExample& ex, const HeadMask* mask, int k) {
    auto input = model_->engine().MakeBatch({&ex.encoding});
    EXPECT_TRUE(input.ok()) << input.status();
    input->draws = {k};
    auto out = model_->engine().Run(*input, {mask}, EngineOptions());
    EXPECT_TRUE(out.ok()) << out.status();
    const torch::Tensor lp =
        torch::log_softmax(out->logits[0].to(torch::kDouble), 0);
    return std::make_pair(lp.argmax().item<int64_t>() == ex.label ? 1 : 0,
                          -lp[ex.label].item<double>());
  };
  SweepOptions options;
  options.max_batch_rows = 5;
  options.workers = 2;
  const Recorded rec = RunSweep(options, examples, masks);
  ASSERT_TRUE(rec.status.ok()) << rec.status;
  EXPECT_EQ(rec.progress.back().second, 9 * (1 + 3 + 1 + 1 + 1 + 2));
  for (size_t m = 0; m < masks.size(); ++m) {
    SCOPED_TRACE(masks[m].id);
    const int draws = masks[m].mask.mode() == AblationMode::kResample
                          ? masks[m].mask.draws().count
                          : 1;
    int correct = 0;
    double loss = 0;
    std::vector<int64_t> per_draw(draws, 0);
    PairedSums paired;
    for (const SweepExample& ex : examples) {
      const int base = row(ex, nullptr, 0).first;
      int right = 0;
      for (int k = 0; k < draws; ++k) {
        const auto [ok, l] = row(ex, &masks[m].mask, k);
        right += ok;
        per_draw[k] += ok;
        loss += l;
      }
      correct += right;
      paired.Add(1, static_cast<double>(right) / draws - base);
    }
    const MaskResult& got = rec.results.at(static_cast<int>(m));
    EXPECT_EQ(got.draws, draws);
    EXPECT_EQ(got.scored, 9 * draws);
    EXPECT_EQ(got.correct, correct);
    EXPECT_NEAR(got.loss_sum, loss, kLossTolerance * draws);
    if (draws > 1) {
      EXPECT_EQ(got.draw_correct, per_draw);
    } else {
      EXPECT_TRUE(got.draw_correct.empty());
    }
    EXPECT_EQ(got.paired.clusters, 9);
    EXPECT_NEAR(got.paired.diff, paired.diff, 1e-12);
    EXPECT_NEAR(got.paired.diff_sq, paired.diff_sq, 1e-12);
  }
  EXPECT_EQ(rec.baseline.paired.clusters, 9);
  EXPECT_EQ(rec.baseline.paired.diff_sq, 0.0);
}

TEST_F(SweepTest, ReportsBaselineFirstAndProgressToTotal) {
  const std::vector<SweepExample> examples = Examples(9, 2);
  const std::vector<SweepMask> masks = Masks();
  SweepOptions options;
  options.max_batch_rows = 8;
  options.cache_budget_bytes = 10000;  // several chunks
  Recorded rec = RunSweep(options, examples, masks);
  ASSERT_TRUE(rec.status.ok()) << rec.status;
  ASSERT_FALSE(rec.events.empty());
  int baseline_at = -1, first_result_at = -1;
  for (int i = 0; i < static_cast<int>(rec.events.size()); ++i) {
    if (rec.events[i] == "baseline" && baseline_at < 0) baseline_at = i;
    if (rec.events[i] == "result" && first_result_at < 0) first_result_at = i;
  }
  EXPECT_GE(baseline_at, 0);
  EXPECT_LT(baseline_at, first_result_at);
  const int64_t total = 9 * static_cast<int64_t>(masks.size() + 1);
  ASSERT_FALSE(rec.progress.empty());
  int64_t last = 0;
  for (const auto& [done, tot] : rec.progress) {
    EXPECT_EQ(tot, total);
    EXPECT_GT(done, last);
    last = done;
  }
  EXPECT_EQ(last, total);
}

// Results stream out a few masks at a time, not one burst per start layer
// at the end of a chunk: a caller whose call is cut keeps more of them.
TEST_F(SweepTest, ResultsStreamOutDuringAChunk) {
  const std::vector<SweepExample> examples = Examples(40, 6);
  const std::vector<SweepMask> masks = Masks();
  std::set<int> start_layers;
  for (const SweepMask& m : masks) {
    start_layers.insert(m.mask.FirstAffectedLayer());
  }
  SweepOptions options;
  options.max_batch_rows = 2;  // 16 batches of 2 rows < 40 examples: 1 mask
  options.cache_budget_bytes = int64_t{1} << 30;  // one chunk
  Recorded rec = RunSweep(options, examples, masks);
  ASSERT_TRUE(rec.status.ok()) << rec.status;
  // The pairs done when each result arrived: one value per delivery point.
  std::set<int64_t> delivered_at;
  int64_t done = 0;
  size_t p = 0;
  for (const std::string& e : rec.events) {
    if (e == "progress") done = rec.progress[p++].first;
    if (e == "result") delivered_at.insert(done);
  }
  EXPECT_GE(delivered_at.size(), masks.size() - 1)
      << "results came in " << delivered_at.size() << " bursts for "
      << start_layers.size() << " start layers";
}

TEST_F(SweepTest, CancelledBetweenPasses) {
  const std::vector<SweepExample> examples = Examples(6, 3);
  SweepOptions options;
  options.max_batch_rows = 4;
  int polls = 0;
  Recorded rec =
      RunSweep(options, examples, Masks(), [&polls] { return ++polls > 2; });
  EXPECT_EQ(rec.status.code(), absl::StatusCode::kCancelled) << rec.status;
  EXPECT_EQ(rec.progress.size(), 2u);  // two passes ran, then it stopped
  EXPECT_EQ(polls, 3);
}

// Parallel workers run the serial run's batches and add their scores in the
// same order: every figure and every event equals the one-worker run's on
// one thread (kernels on wider pools round differently: there, within
// kLossTolerance), over several chunks and partial batches.
TEST_F(SweepTest, ParallelWorkersGiveTheSerialRunsResults) {
  const std::vector<SweepExample> examples = Examples(23, 7);
  const std::vector<SweepMask> masks = Masks();
  SweepOptions serial;
  serial.max_batch_rows = 5;
  serial.cache_budget_bytes = 30000;  // several chunks
  Recorded want;
  {
    SingleThreadedBlasScope one_blas_thread;
    std::thread([&] {
      UseOneIntraOpThreadOnThisThread();
      want = RunSweep(serial, examples, masks);
    }).join();
  }
  ASSERT_TRUE(want.status.ok()) << want.status;
  const Recorded wide = RunSweep(serial, examples, masks);  // default pools
  ASSERT_TRUE(wide.status.ok()) << wide.status;
  for (const auto& [m, r] : want.results) {
    ExpectSameScores(wide.results.at(m), r, masks[m].id + " default pools");
  }
  for (int workers : {2, 3}) {
    SweepOptions parallel = serial;
    parallel.workers = workers;
    const Recorded got = RunSweep(parallel, examples, masks);
    ASSERT_TRUE(got.status.ok()) << got.status;
    EXPECT_EQ(got.events, want.events) << workers;
    EXPECT_EQ(got.progress, want.progress) << workers;
    EXPECT_EQ(got.baseline.correct, want.baseline.correct);
    EXPECT_EQ(got.baseline.loss_sum, want.baseline.loss_sum);
    ASSERT_EQ(got.results.size(), masks.size());
    for (const auto& [m, r] : want.results) {
      EXPECT_EQ(got.results.at(m).correct, r.correct) << masks[m].id;
      EXPECT_EQ(got.results.at(m).scored, r.scored) << masks[m].id;
      // Same batches, same kernels on one thread each: the same bits.
      EXPECT_EQ(got.results.at(m).loss_sum, r.loss_sum) << masks[m].id;
    }
  }
}

// A pass that runs out of device memory is run again as halves: here
// every pass of more than 3 rows fails as CUDA's allocator would make it
// fail (RESOURCE_EXHAUSTED), so 8-row batches split twice. The results
// are the unsplit run's; the splits are reported.
TEST_F(SweepTest, OutOfMemoryBatchesSplitAndGiveTheSameResults) {
  const std::vector<SweepExample> examples = Examples(13, 5);
  const std::vector<SweepMask> masks = Masks();
  SweepOptions options;
  options.max_batch_rows = 8;
  const Recorded want = RunSweep(options, examples, masks);
  ASSERT_TRUE(want.status.ok()) << want.status;
  std::atomic<int> largest{0};
  options.inject_before_forward = [&](int rows) -> absl::Status {
    if (rows > 3) {
      return absl::ResourceExhaustedError("injected: out of memory");
    }
    largest = std::max(largest.load(), rows);
    return absl::OkStatus();
  };
  int splits = 0;
  Recorded got;
  {
    SweepCallbacks callbacks;
    callbacks.on_result = [&](const MaskResult& r) {
      got.results[r.mask_index] = r;
    };
    callbacks.on_baseline = [&](const MaskResult& r) { got.baseline = r; };
    callbacks.on_batch_split = [&] { ++splits; };
    got.status = SweepExecutor(model_, options).Run(examples, masks, callbacks);
  }
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_GT(splits, 0);
  EXPECT_EQ(largest.load(), 3);
  ExpectSameScores(got.baseline, want.baseline, "baseline");
  ASSERT_EQ(got.results.size(), want.results.size());
  for (const auto& [m, r] : want.results) {
    ExpectSameScores(got.results.at(m), r, masks[m].id);
  }
  // A single row that does not fit is the sweep's error, not a loop.
  options.inject_before_forward = [](int) {
    return absl::ResourceExhaustedError("injected: out of memory");
  };
  const Recorded failed = RunSweep(options, examples, masks);
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kResourceExhausted);
}

// SweepOptions::device_memory_bytes bounds a pass's rows by
// EstimateRowBytes; the results are those of any other batching.
TEST_F(SweepTest, DeviceMemoryBoundsTheBatchRows) {
  const std::vector<SweepExample> examples = Examples(13, 5);
  const std::vector<SweepMask> masks = Masks();
  SweepOptions options;
  options.max_batch_rows = 64;
  const Recorded want = RunSweep(options, examples, masks);
  ASSERT_TRUE(want.status.ok()) << want.status;
  int longest = 0;
  for (const SweepExample& e : examples) {
    longest = std::max(longest, static_cast<int>(e.encoding.tokens.size()));
  }
  const int64_t row_bytes = EstimateRowBytes(*model_, longest);
  EXPECT_GT(row_bytes, EstimateRowBytes(*model_, longest / 2));
  options.device_memory_bytes = 4 * row_bytes;
  std::atomic<int> largest{0};
  options.inject_before_forward = [&](int rows) {
    largest = std::max(largest.load(), rows);
    return absl::OkStatus();
  };
  const Recorded got = RunSweep(options, examples, masks);
  ASSERT_TRUE(got.status.ok()) << got.status;
  // One chunk (the default cache budget holds every example): four rows of
  // its longest example fit, and every pass has at most four.
  EXPECT_EQ(largest.load(), 4);
  EXPECT_GT(got.progress.size(), want.progress.size());
  for (const auto& [m, r] : want.results) {
    ExpectSameScores(got.results.at(m), r, masks[m].id);
  }
}

// A sweep's baseline is the same bits whatever masks run beside it (masks
// starting at the last layer used to make the baseline pass run that layer
// in full, not for [CLS] alone): shards of one sweep agree on it exactly.
TEST_F(SweepTest, BaselineDoesNotDependOnTheMasks) {
  const std::vector<SweepExample> examples = Examples(23, 11);
  SingleThreadedBlasScope one_blas_thread;
  std::thread([&] {
    UseOneIntraOpThreadOnThisThread();
    SweepOptions options;
    options.max_batch_rows = 5;
    const Recorded alone = RunSweep(options, examples, {});
    ASSERT_TRUE(alone.status.ok()) << alone.status;
    const std::vector<SweepMask> all = Masks();
    for (const SweepMask& m : all) {
      const Recorded got = RunSweep(options, examples, {m});
      ASSERT_TRUE(got.status.ok()) << got.status;
      EXPECT_EQ(got.baseline.correct, alone.baseline.correct) << m.id;
      EXPECT_EQ(got.baseline.loss_sum, alone.baseline.loss_sum) << m.id;
    }
    const Recorded together = RunSweep(options, examples, all);
    ASSERT_TRUE(together.status.ok()) << together.status;
    EXPECT_EQ(together.baseline.loss_sum, alone.baseline.loss_sum);
  }).join();
}

TEST_F(SweepTest, ParallelWorkersStopWhenCancelled) {
  const std::vector<SweepExample> examples = Examples(12, 8);
  SweepOptions options;
  options.max_batch_rows = 3;
  options.workers = 2;
  std::atomic<int> polls{0};
  Recorded rec =
      RunSweep(options, examples, Masks(), [&polls] { return ++polls > 6; });
  EXPECT_EQ(rec.status.code(), absl::StatusCode::kCancelled) << rec.status;
  // Passes polled before the 7th ran; at most the window's worth more
  // polled (and stopped) after it.
  EXPECT_LE(rec.progress.size(), 6u);
  EXPECT_LE(polls.load(), 6 + 1 + 2 * 2);
  EXPECT_LT(rec.result_calls, static_cast<int>(Masks().size()));
}

TEST_F(SweepTest, WorkersBelowOneIsRefused) {
  SweepOptions options;
  options.workers = 0;
  Recorded rec = RunSweep(options, Examples(2, 9), Masks());
  EXPECT_EQ(rec.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rec.status.message(), HasSubstr("workers=0"));
}

TEST_F(SweepTest, LabelOutOfRangeNamesTheExample) {
  std::vector<SweepExample> examples = Examples(3, 4);
  examples[1].label = 3;
  Recorded rec = RunSweep(SweepOptions(), examples, Masks());
  EXPECT_EQ(rec.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rec.status.message(), HasSubstr("examples[1].label"));
  EXPECT_TRUE(rec.progress.empty());

  examples[1].label = 0;
  examples[2].label = -1;
  rec = RunSweep(SweepOptions(), examples, Masks());
  EXPECT_THAT(rec.status.message(), HasSubstr("examples[2].label"));
}

TEST_F(SweepTest, MaskOfWrongShapeNamesTheMask) {
  std::vector<SweepMask> masks = Masks();
  masks.push_back({"bad", "", HeadMask::Identity(2, 4)});
  Recorded rec = RunSweep(SweepOptions(), Examples(2, 5), masks);
  EXPECT_EQ(rec.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rec.status.message(),
              HasSubstr("masks[" + std::to_string(masks.size() - 1) + "]"));
}

TEST_F(SweepTest, NoExamplesGivesEmptyResults) {
  Recorded rec = RunSweep(SweepOptions(), {}, Masks());
  ASSERT_TRUE(rec.status.ok()) << rec.status;
  EXPECT_EQ(rec.baseline.examples, 0);
  EXPECT_EQ(rec.result_calls, static_cast<int>(Masks().size()));
}

}  // namespace
}  // namespace bertology
