#include "server/service/registry/batcher.h"

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
using Logits = std::vector<std::vector<float>>;

constexpr float kTolerance = 1e-4f;
constexpr absl::Duration kForever = absl::Hours(24);
constexpr absl::Duration kTestTimeout = absl::Seconds(60);

// Collects one request's result; thread-safe.
class Result {
 public:
  BatchDone Callback() {
    return [this](absl::StatusOr<Logits> result) {
      EXPECT_FALSE(done_.HasBeenNotified()) << "done ran twice";
      result_ = std::move(result);
      done_.Notify();
    };
  }
  bool Wait() { return done_.WaitForNotificationWithTimeout(kTestTimeout); }
  bool IsDone() const { return done_.HasBeenNotified(); }
  const absl::StatusOr<Logits>& result() const { return result_; }

 private:
  absl::Notification done_;
  absl::StatusOr<Logits> result_ = absl::UnknownError("not run");
};

// Records BatcherStats::on_batch calls; thread-safe.
class BatchLog {
 public:
  BatcherStats Stats() {
    BatcherStats stats;
    stats.on_batch = [this](int rows,
                            const std::vector<absl::Duration>& waits) {
      absl::MutexLock lock(&mu_);
      EXPECT_EQ(static_cast<int>(waits.size()), rows);
      sizes_.push_back(rows);
      waits_.insert(waits_.end(), waits.begin(), waits.end());
    };
    return stats;
  }
  std::vector<int> sizes() {
    absl::MutexLock lock(&mu_);
    return sizes_;
  }
  std::vector<absl::Duration> waits() {
    absl::MutexLock lock(&mu_);
    return waits_;
  }

 private:
  absl::Mutex mu_;
  std::vector<int> sizes_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> waits_ ABSL_GUARDED_BY(mu_);
};

class BatcherTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ModelOptions options;
    const char* root = std::getenv("BERTOLOGY_SOURCE_DIR");
    options.dir = std::string(root != nullptr ? root : ".") +
                  "/tests/golden/tiny-bert-cls";
    auto model = Model::Load(options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(model).value().release();
    // Varied lengths, so batches pad; masks of both modes and none.
    std::mt19937_64 rng(5);
    const SpecialTokens& specials = model_->tokenizer().specials();
    for (int len : {5, 17, 3, 30, 9, 12}) {
      auto enc = std::make_shared<Encoding>();
      for (int j = 0; j < len; ++j) {
        Token t;
        t.id = j == 0         ? specials.cls_id
               : j == len - 1 ? specials.sep_id
                              : 5 + static_cast<int>(rng() % 115);
        t.segment = j > len / 2 ? 1 : 0;
        enc->tokens.push_back(t);
      }
      encodings_->push_back(enc);
    }
    masks_->push_back(nullptr);
    masks_->push_back(std::make_shared<HeadMask>(
        *HeadMask::Ablate(3, 4, {{0, 1}, {2, 3}}, AblationMode::kZero)));
    masks_->push_back(std::make_shared<HeadMask>(
        *HeadMask::Ablate(3, 4, {{1, 0}, {1, 2}}, AblationMode::kUniform)));
    masks_->push_back(std::make_shared<HeadMask>(*HeadMask::KeepOnly(
        3, 4, {{0, 0}, {1, 1}, {2, 2}}, AblationMode::kZero)));
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static BatchRow Row(int encoding, int mask) {
    return {(*encodings_)[encoding], (*masks_)[mask]};
  }

  // The reference: one row alone through Model::Forward.
  static std::vector<float> Single(const BatchRow& row) {
    auto out = model_->Forward({ModelRow{row.encoding.get(), row.mask.get()}},
                               ForwardOptions());
    EXPECT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->logits.shape.size(), 2u);
    return out->logits.data;  // [1, C]
  }

  static void ExpectLogits(const Result& result,
                           const std::vector<BatchRow>& rows) {
    ASSERT_TRUE(result.result().ok()) << result.result().status();
    const Logits& got = *result.result();
    ASSERT_EQ(got.size(), rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::vector<float> want = Single(rows[r]);
      ASSERT_EQ(got[r].size(), want.size());
      for (size_t c = 0; c < want.size(); ++c) {
        EXPECT_NEAR(got[r][c], want[c], kTolerance) << "row " << r;
      }
    }
  }

  static std::unique_ptr<Batcher> MakeBatcher(Batcher::Options options) {
    auto batcher = Batcher::Create(model_, std::move(options));
    EXPECT_TRUE(batcher.ok()) << batcher.status();
    return batcher.ok() ? std::move(batcher).value() : nullptr;
  }

  static Model* model_;
  static std::vector<std::shared_ptr<const Encoding>>* encodings_;
  static std::vector<std::shared_ptr<const HeadMask>>* masks_;
};

Model* BatcherTest::model_ = nullptr;
std::vector<std::shared_ptr<const Encoding>>* BatcherTest::encodings_ =
    new std::vector<std::shared_ptr<const Encoding>>();
std::vector<std::shared_ptr<const HeadMask>>* BatcherTest::masks_ =
    new std::vector<std::shared_ptr<const HeadMask>>();

TEST_F(BatcherTest, PerRowMasksInOneBatchEqualSingleRuns) {
  SimulatedClock clock;
  BatchLog log;
  Batcher::Options options;
  options.max_batch_size = 8;
  options.max_queue_delay = kForever;  // runs only once full
  options.clock = &clock;
  options.stats = log.Stats();
  auto batcher = MakeBatcher(options);
  std::vector<BatchRow> rows;
  for (int i = 0; i < 8; ++i) rows.push_back(Row(i % 6, i % 4));
  Result result;
  batcher->Enqueue(rows, result.Callback());
  ASSERT_TRUE(result.Wait());
  ExpectLogits(result, rows);
  EXPECT_EQ(log.sizes(), std::vector<int>{8});
}

TEST_F(BatcherTest, WaitsForQueueDelayOnInjectedClock) {
  SimulatedClock clock;
  BatchLog log;
  Batcher::Options options;
  options.max_batch_size = 8;
  options.max_queue_delay = absl::Milliseconds(10);
  options.clock = &clock;
  options.stats = log.Stats();
  auto batcher = MakeBatcher(options);
  Result result;
  batcher->Enqueue({Row(0, 1), Row(1, 2), Row(2, 0)}, result.Callback());
  clock.AdvanceTime(absl::Milliseconds(9));
  absl::SleepFor(absl::Milliseconds(30));  // would be long enough to run
  EXPECT_FALSE(result.IsDone());
  clock.AdvanceTime(absl::Milliseconds(1));
  ASSERT_TRUE(result.Wait());
  ExpectLogits(result, {Row(0, 1), Row(1, 2), Row(2, 0)});
  EXPECT_EQ(log.sizes(), std::vector<int>{3});
  for (absl::Duration wait : log.waits()) {
    EXPECT_EQ(wait, absl::Milliseconds(10));
  }
}

TEST_F(BatcherTest, RespectsMaxBatchSizeAcrossRequests) {
  BatchLog log;
  Batcher::Options options;
  options.max_batch_size = 4;
  options.max_queue_delay = absl::ZeroDuration();
  options.stats = log.Stats();
  auto batcher = MakeBatcher(options);
  std::vector<std::vector<BatchRow>> requests;
  std::vector<Result> results(3);
  for (int q = 0; q < 3; ++q) {
    std::vector<BatchRow> rows;
    for (int i = 0; i < 5; ++i) rows.push_back(Row((q + i) % 6, (q * i) % 4));
    requests.push_back(rows);
    batcher->Enqueue(rows, results[q].Callback());
  }
  for (int q = 0; q < 3; ++q) {
    ASSERT_TRUE(results[q].Wait());
    ExpectLogits(results[q], requests[q]);  // rows spanned batches
  }
  int total = 0;
  for (int size : log.sizes()) {
    EXPECT_GE(size, 1);
    EXPECT_LE(size, 4);
    total += size;
  }
  EXPECT_EQ(total, 15);
}

TEST_F(BatcherTest, RejectsWhenQueueFullAndShutdownDrains) {
  SimulatedClock clock;
  BatchLog log;
  Batcher::Options options;
  options.max_batch_size = 100;
  options.max_queue_delay = kForever;  // nothing runs until Shutdown
  options.max_queued_rows = 5;
  options.clock = &clock;
  options.stats = log.Stats();
  auto batcher = MakeBatcher(options);
  Result first, rejected, second;
  batcher->Enqueue({Row(0, 0), Row(1, 1), Row(2, 2)}, first.Callback());
  batcher->Enqueue({Row(3, 3), Row(4, 0), Row(5, 1)}, rejected.Callback());
  ASSERT_TRUE(rejected.IsDone());  // inline
  EXPECT_EQ(rejected.result().status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(rejected.result().status().message(),
              HasSubstr("queue full (max_queued_rows=5)"));
  batcher->Enqueue({Row(3, 3), Row(4, 0)}, second.Callback());  // fits
  EXPECT_FALSE(first.IsDone());
  EXPECT_FALSE(second.IsDone());

  batcher->Shutdown();  // drains without the clock moving
  ASSERT_TRUE(first.IsDone());
  ASSERT_TRUE(second.IsDone());
  ExpectLogits(first, {Row(0, 0), Row(1, 1), Row(2, 2)});
  ExpectLogits(second, {Row(3, 3), Row(4, 0)});
  EXPECT_EQ(log.sizes(), std::vector<int>{5});

  Result late;
  batcher->Enqueue({Row(0, 0)}, late.Callback());
  ASSERT_TRUE(late.IsDone());
  EXPECT_EQ(late.result().status().code(), absl::StatusCode::kUnavailable);
  batcher->Shutdown();  // idempotent
}

TEST_F(BatcherTest, ManyThreadsGetExactlyTheirOwnResults) {
  // Expected logits of every (encoding, mask) pair, computed alone.
  std::vector<std::vector<std::vector<float>>> want(6);
  for (int e = 0; e < 6; ++e) {
    for (int m = 0; m < 4; ++m) want[e].push_back(Single(Row(e, m)));
  }
  BatchLog log;
  Batcher::Options options;
  options.max_batch_size = 16;
  options.max_queue_delay = absl::Milliseconds(1);
  options.num_workers = 2;
  options.stats = log.Stats();
  auto batcher = MakeBatcher(options);
  constexpr int kThreads = 8, kRequests = 15;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int q = 0; q < kRequests; ++q) {
        const int n = 1 + static_cast<int>(rng() % 3);
        std::vector<std::pair<int, int>> pairs;
        std::vector<BatchRow> rows;
        for (int i = 0; i < n; ++i) {
          pairs.push_back(
              {static_cast<int>(rng() % 6), static_cast<int>(rng() % 4)});
          rows.push_back(Row(pairs.back().first, pairs.back().second));
        }
        Result result;
        batcher->Enqueue(rows, result.Callback());
        if (!result.Wait() || !result.result().ok() ||
            result.result()->size() != rows.size()) {
          ++failures[t];
          continue;
        }
        for (int i = 0; i < n; ++i) {
          const std::vector<float>& got = (*result.result())[i];
          const std::vector<float>& expected =
              want[pairs[i].first][pairs[i].second];
          for (size_t c = 0; c < expected.size(); ++c) {
            if (std::abs(got[c] - expected[c]) > kTolerance) ++failures[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
  for (int size : log.sizes()) EXPECT_LE(size, 16);
}

TEST_F(BatcherTest, InvalidRowsRejectedInline) {
  Batcher::Options options;
  auto batcher = MakeBatcher(options);
  auto bad_token = std::make_shared<Encoding>(*(*encodings_)[0]);
  bad_token->tokens[1].id = 100000;
  const std::vector<std::pair<BatchRow, std::string>> cases = {
      {{nullptr, nullptr}, "rows[1].encoding is null"},
      {{std::make_shared<Encoding>(), nullptr}, "rows[1].encoding has 0"},
      {{bad_token, nullptr}, "rows[1].encoding.tokens[1]"},
      {{(*encodings_)[0], std::make_shared<HeadMask>(HeadMask::Identity(2, 4))},
       "rows[1].mask"},
  };
  for (const auto& [row, message] : cases) {
    Result result;
    batcher->Enqueue({Row(0, 0), row}, result.Callback());
    ASSERT_TRUE(result.IsDone()) << message;
    EXPECT_EQ(result.result().status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.result().status().message(), HasSubstr(message));
  }
  Result empty;
  batcher->Enqueue({}, empty.Callback());
  ASSERT_TRUE(empty.IsDone());
  ASSERT_TRUE(empty.result().ok());
  EXPECT_TRUE(empty.result()->empty());
}

TEST_F(BatcherTest, CreateValidatesOptions) {
  Batcher::Options options;
  options.max_batch_size = 0;
  EXPECT_THAT(Batcher::Create(model_, options).status().message(),
              HasSubstr("max_batch_size"));
  options = Batcher::Options();
  options.max_queued_rows = 0;
  EXPECT_THAT(Batcher::Create(model_, options).status().message(),
              HasSubstr("max_queued_rows"));
  options = Batcher::Options();
  options.num_workers = 0;
  EXPECT_THAT(Batcher::Create(model_, options).status().message(),
              HasSubstr("num_workers"));
  options = Batcher::Options();
  options.max_queue_delay = -absl::Milliseconds(1);
  EXPECT_THAT(Batcher::Create(model_, options).status().message(),
              HasSubstr("max_queue_delay"));
  EXPECT_EQ(Batcher::Create(nullptr, Batcher::Options()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bertology
