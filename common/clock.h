// Time, injected into everything that waits (the server's batcher, the
// client's sweep scheduler) so tests drive it instead of sleeping.
#ifndef BERTOLOGY_COMMON_CLOCK_H_
#define BERTOLOGY_COMMON_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace bertology {

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  // Blocks for `d` of this clock's time (backoff, idle polling).
  virtual void SleepFor(absl::Duration d) = 0;
  // As absl::Mutex::AwaitWithDeadline, on this clock's time: `mu` must be
  // held; releases it while waiting until `cond` holds or Now() >= deadline
  // and returns with it held again. Returns whether `cond` holds.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                 absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
  // The process-wide wall clock (never destroyed).
  static Clock* Real();
};

// A clock that moves only when told to: by AdvanceTime, or by a SleepFor,
// which moves it at once and returns (backoff of minutes costs a test
// microseconds). Waiters notice an advance within about a millisecond of
// real time (they poll), so tests that advance it need no sleeps of their
// own, and nothing times out unless the clock moves past a deadline.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}

  absl::Time Now() override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SleepFor(absl::Duration d) override;
  void AdvanceTime(absl::Duration d);
  // The sum of all SleepFor durations so far.
  absl::Duration total_slept();

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration slept_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_CLOCK_H_
