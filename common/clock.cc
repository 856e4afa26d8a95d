#include "common/clock.h"

#include <thread>

#include "absl/time/clock.h"

namespace bertology {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu->AwaitWithDeadline(cond, deadline);
  }
};

}  // namespace

Clock* Clock::Real() {
  static Clock* const clock = new RealClock();
  return clock;
}

absl::Time SimulatedClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

void SimulatedClock::SleepFor(absl::Duration d) {
  {
    absl::MutexLock lock(&mu_);
    if (d > absl::ZeroDuration()) {
      now_ += d;
      slept_ += d;
    }
  }
  // Let other threads run, as a real sleep would.
  std::this_thread::yield();
}

absl::Duration SimulatedClock::total_slept() {
  absl::MutexLock lock(&mu_);
  return slept_;
}

void SimulatedClock::AdvanceTime(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

bool SimulatedClock::AwaitWithDeadline(absl::Mutex* mu,
                                       const absl::Condition& cond,
                                       absl::Time deadline) {
  // The caller's mutex cannot be woken from AdvanceTime without a lock-order
  // cycle (mu -> mu_ here, mu_ -> mu there), so poll in short real-time
  // slices. Lock order: the caller's mu, then mu_ (in Now()).
  while (!cond.Eval()) {
    if (Now() >= deadline) return false;
    mu->AwaitWithTimeout(cond, absl::Milliseconds(1));
  }
  return true;
}

}  // namespace bertology
