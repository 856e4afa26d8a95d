#include "server/service/registry/row_budget.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

TEST(RowBudgetTest, AdmitsUntilFullThenRefusesAtOnceNamingTheFlag) {
  RowBudget budget(64, "--max_queued_rows", "model tiny");
  auto a = budget.Acquire(32);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = budget.Acquire(32);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(budget.used(), 64);
  auto c = budget.Acquire(1);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("--max_queued_rows=64"));
  EXPECT_THAT(c.status().message(), HasSubstr("model tiny"));
  EXPECT_THAT(c.status().message(), HasSubstr("hold 64 of its 64 rows"));
  EXPECT_EQ(budget.used(), 64);  // a refusal takes nothing
}

TEST(RowBudgetTest, LeaseGivesItsRowsBackWhenDestroyed) {
  RowBudget budget(10, "--f", "x");
  {
    auto a = budget.Acquire(7);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->rows(), 7);
    EXPECT_FALSE(budget.Acquire(4).ok());
    EXPECT_EQ(budget.used(), 7);
  }
  EXPECT_EQ(budget.used(), 0);
  EXPECT_TRUE(budget.Acquire(10).ok());
  EXPECT_EQ(budget.used(), 0);  // the temporary lease is gone too
}

TEST(RowBudgetTest, MovedLeaseReleasesOnce) {
  RowBudget budget(10, "--f", "x");
  auto a = budget.Acquire(6);
  ASSERT_TRUE(a.ok());
  RowBudget::Lease moved = *std::move(a);
  EXPECT_EQ(budget.used(), 6);
  RowBudget::Lease assigned;
  assigned = std::move(moved);
  EXPECT_EQ(budget.used(), 6);
  auto b = budget.Acquire(4);
  ASSERT_TRUE(b.ok());
  assigned = *std::move(b);  // the 6 rows are given back, the 4 kept
  EXPECT_EQ(budget.used(), 4);
}

TEST(RowBudgetTest, MoreThanTheCapacityIsTakenAsTheCapacity) {
  RowBudget budget(16, "--f", "x");
  auto a = budget.Acquire(4096);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows(), 16);
  EXPECT_EQ(budget.Acquire(1).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(RowBudgetTest, RefusesLessThanOneRow) {
  RowBudget budget(16, "--f", "x");
  EXPECT_EQ(budget.Acquire(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(budget.Acquire(-3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RowBudgetTest, ConcurrentAcquiresNeverOverCommit) {
  RowBudget budget(5, "--f", "x");
  std::vector<std::thread> threads;
  std::atomic<int> over{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto lease = budget.Acquire(2);
        if (lease.ok() && budget.used() > 5) ++over;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(budget.used(), 0);
}

}  // namespace
}  // namespace bertology
