#include "client/scheduler/clock.h"

#include <thread>

#include "absl/time/clock.h"

namespace bertology {
namespace client {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

}  // namespace

Clock* Clock::Real() {
  static Clock* const clock = new RealClock();
  return clock;
}

absl::Time FakeClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::SleepFor(absl::Duration d) {
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

absl::Duration FakeClock::total_slept() {
  absl::MutexLock lock(&mu_);
  return slept_;
}

}  // namespace client
}  // namespace bertology
