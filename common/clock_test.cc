#include "common/clock.h"

#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(SimulatedClockTest, MovesOnlyWhenAdvanced) {
  SimulatedClock clock(absl::FromUnixSeconds(100));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(100));
  clock.AdvanceTime(absl::Milliseconds(1500));
  EXPECT_EQ(clock.Now(), absl::FromUnixMillis(101500));
}

TEST(SimulatedClockTest, AwaitReturnsAtSimulatedDeadline) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool flag = false;
  // The deadline is fixed before the advancer can run: read after it, it
  // would be an hour past the only advance, and the wait would never end.
  const absl::Time deadline = clock.Now() + absl::Hours(1);
  std::thread advancer([&clock] { clock.AdvanceTime(absl::Hours(1)); });
  mu.Lock();
  // Would block for an hour of real time on a real clock.
  const bool result =
      clock.AwaitWithDeadline(&mu, absl::Condition(&flag), deadline);
  mu.Unlock();
  advancer.join();
  EXPECT_FALSE(result);
  EXPECT_GE(clock.Now(), absl::UnixEpoch() + absl::Hours(1));
}

TEST(SimulatedClockTest, AwaitReturnsWhenConditionHolds) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool flag = false;
  std::thread setter([&] {
    absl::MutexLock lock(&mu);
    flag = true;
  });
  mu.Lock();
  const bool result = clock.AwaitWithDeadline(&mu, absl::Condition(&flag),
                                              clock.Now() + absl::Seconds(1));
  mu.Unlock();
  setter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Now(), absl::UnixEpoch());  // time never moved
}

TEST(RealClockTest, AwaitTimesOut) {
  absl::Mutex mu;
  bool flag = false;
  Clock* clock = Clock::Real();
  const absl::Time start = clock->Now();
  mu.Lock();
  EXPECT_FALSE(clock->AwaitWithDeadline(&mu, absl::Condition(&flag),
                                        start + absl::Milliseconds(5)));
  mu.Unlock();
  EXPECT_GE(clock->Now() - start, absl::Milliseconds(5));
}

}  // namespace
}  // namespace bertology
