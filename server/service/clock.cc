#include "server/service/clock.h"

namespace bertology {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
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
