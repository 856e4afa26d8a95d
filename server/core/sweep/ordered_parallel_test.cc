#include "server/core/sweep/ordered_parallel.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

// Jobs finish out of order (later jobs sleep less), yet commits come in
// number order, one at a time, each after its own compute.
TEST(OrderedParallelTest, CommitsInOrderWhileComputingConcurrently) {
  constexpr int kJobs = 40;
  std::vector<int> slot(kJobs, -1);
  std::vector<int> committed;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::atomic<int> in_commit{0};
  std::mutex ids_mu;
  std::set<std::thread::id> ids;
  std::atomic<int> starts{0};
  OrderedParallelFns fns;
  fns.compute = [&](int j) {
    const int now = ++running;
    int seen = max_running.load();
    while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
    }
    {
      std::lock_guard<std::mutex> lock(ids_mu);
      ids.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds((kJobs - j) % 5));
    slot[j] = j * j;
    --running;
    return absl::OkStatus();
  };
  fns.commit = [&](int j) {
    EXPECT_EQ(++in_commit, 1) << "two commits at once";
    EXPECT_EQ(slot[j], j * j) << "commit before compute of job " << j;
    committed.push_back(j);
    --in_commit;
    return absl::OkStatus();
  };
  fns.on_worker_start = [&] { ++starts; };
  ASSERT_TRUE(RunOrderedParallel(kJobs, 3, fns).ok());
  ASSERT_EQ(committed.size(), static_cast<size_t>(kJobs));
  for (int j = 0; j < kJobs; ++j) EXPECT_EQ(committed[j], j);
  EXPECT_EQ(starts.load(), 3);
  EXPECT_GE(max_running.load(), 2) << "jobs never overlapped";
  EXPECT_GE(ids.size(), 2u);
  EXPECT_LE(ids.size(), 3u);
}

TEST(OrderedParallelTest, OneWorkerRunsOnTheCallersThreadInOrder) {
  std::vector<std::string> events;
  OrderedParallelFns fns;
  const std::thread::id caller = std::this_thread::get_id();
  fns.compute = [&](int j) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    events.push_back("c" + std::to_string(j));
    return absl::OkStatus();
  };
  fns.commit = [&](int j) {
    events.push_back("k" + std::to_string(j));
    return absl::OkStatus();
  };
  int starts = 0;
  fns.on_worker_start = [&] { ++starts; };
  ASSERT_TRUE(RunOrderedParallel(3, 1, fns).ok());
  EXPECT_EQ(events,
            (std::vector<std::string>{"c0", "k0", "c1", "k1", "c2", "k2"}));
  EXPECT_EQ(starts, 0);
}

TEST(OrderedParallelTest, MoreWorkersThanJobsAndNoJobs) {
  std::atomic<int> computed{0};
  std::vector<int> committed;
  OrderedParallelFns fns;
  fns.compute = [&](int) {
    ++computed;
    return absl::OkStatus();
  };
  fns.commit = [&](int j) {
    committed.push_back(j);
    return absl::OkStatus();
  };
  ASSERT_TRUE(RunOrderedParallel(2, 8, fns).ok());
  EXPECT_EQ(computed.load(), 2);
  EXPECT_EQ(committed, (std::vector<int>{0, 1}));
  ASSERT_TRUE(RunOrderedParallel(0, 4, fns).ok());
  EXPECT_EQ(computed.load(), 2);
}

// A failing compute stops the run: its error comes back, nothing at or
// after it is committed, and few jobs start after it (the window).
TEST(OrderedParallelTest, FirstErrorStopsTheRun) {
  for (int workers : {1, 2, 4}) {
    constexpr int kJobs = 200;
    constexpr int kBad = 10;
    std::atomic<int> computed{0};
    std::vector<int> committed;
    OrderedParallelFns fns;
    fns.compute = [&](int j) {
      ++computed;
      if (j == kBad) return absl::InternalError("job 10 broke");
      return absl::OkStatus();
    };
    fns.commit = [&](int j) {
      committed.push_back(j);
      return absl::OkStatus();
    };
    absl::Status s = RunOrderedParallel(kJobs, workers, fns);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << workers;
    EXPECT_EQ(s.message(), "job 10 broke");
    for (int j : committed) EXPECT_LT(j, kBad) << workers;
    EXPECT_LE(computed.load(), kBad + 1 + 2 * workers) << workers;
  }
}

TEST(OrderedParallelTest, CommitErrorStopsTheRun) {
  std::vector<int> committed;
  OrderedParallelFns fns;
  fns.compute = [](int) { return absl::OkStatus(); };
  fns.commit = [&](int j) {
    if (j == 5) return absl::CancelledError("stop at 5");
    committed.push_back(j);
    return absl::OkStatus();
  };
  absl::Status s = RunOrderedParallel(50, 3, fns);
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(committed, (std::vector<int>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace bertology
