// Time for everything in the scheduler that waits (backoff, idle workers), so
// tests can run on a fake clock instead of sleeping.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_CLOCK_H_
#define BERTOLOGY_CLIENT_SCHEDULER_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace bertology {
namespace client {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  virtual void SleepFor(absl::Duration d) = 0;
  // The process-wide wall clock (never deleted).
  static Clock* Real();
};

// A clock whose SleepFor advances its own time at once and returns: backoff
// of minutes costs a test microseconds. Thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() override;
  void SleepFor(absl::Duration d) override;
  absl::Duration total_slept();

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration slept_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_CLOCK_H_
