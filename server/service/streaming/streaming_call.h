// One server-streaming call as a handler sees it, with no gRPC: the
// transport's two functions (EventStream, filled by rpc/bertology_service.cc)
// and the skeleton every streaming handler shares (StreamingCall): progress
// throttled to one event per kProgressInterval, cancellation polled between
// forward passes, and a client that went away turned into CANCELLED. Plus
// the one count check every streaming handler makes on its list of inputs.
#ifndef BERTOLOGY_SERVICE_STREAMING_STREAMING_CALL_H_
#define BERTOLOGY_SERVICE_STREAMING_STREAMING_CALL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/service/registry/service_limits.h"

namespace bertology {

// The transport side of a server stream, as functions so the handler knows
// no gRPC. `write` sends one event (false: the client is gone);
// `is_cancelled` (may be empty) is polled between forward passes (client
// cancel, deadline).
template <typename Event>
struct EventStream {
  std::function<bool(const Event&)> write;
  std::function<bool()> is_cancelled;
};

// Progress events go out at most this often (and always for the last unit),
// so a fast call does not flood its client.
inline constexpr absl::Duration kProgressInterval = absl::Milliseconds(100);

// What a streaming handler writes through. `Event` is a response message
// with a `progress` (SweepProgress: done, total) in its oneof. Thread-safe:
// writes are serialised (a sweep's executor calls back from its workers),
// one at a time on the stream as gRPC requires. Holds a reference to
// `stream`, which must outlive it.
template <typename Event>
class StreamingCall {
 public:
  // `clock` (not owned; tests pass a SimulatedClock) times the progress.
  explicit StreamingCall(const EventStream<Event>& stream,
                         Clock* clock = Clock::Real())
      : stream_(stream), clock_(clock) {}

  // Sends one event; false once a write has failed (the client went away),
  // after which events are dropped.
  bool Write(const Event& event) {
    absl::MutexLock lock(&mu_);
    return WriteLocked(event);
  }

  // A progress event, unless one went out less than kProgressInterval ago
  // and done < total. False once the client is gone.
  bool Progress(int64_t done, int64_t total) {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    if (done < total && now - last_progress_ < kProgressInterval) {
      return !gone_;
    }
    last_progress_ = now;
    Event event;
    event.mutable_progress()->set_done(done);
    event.mutable_progress()->set_total(total);
    return WriteLocked(event);
  }

  // The client went away, cancelled, or the deadline passed.
  bool Cancelled() const {
    return Gone() || (stream_.is_cancelled && stream_.is_cancelled());
  }
  // A write has failed: the client went away.
  bool Gone() const {
    absl::MutexLock lock(&mu_);
    return gone_;
  }
  // The transport's poll alone, for code that takes it as a function.
  const std::function<bool()>& is_cancelled() const {
    return stream_.is_cancelled;
  }

  // `status`, or CANCELLED "the client went away" where it is OK but a
  // write failed.
  absl::Status Finish(absl::Status status) const {
    if (status.ok() && Gone()) {
      return absl::CancelledError("the client went away");
    }
    return status;
  }

  // Sends the call's last event and finishes.
  absl::Status Close(const Event& last) {
    Write(last);
    return Finish(absl::OkStatus());
  }

 private:
  bool WriteLocked(const Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!gone_ && !stream_.write(event)) gone_ = true;
    return !gone_;
  }

  const EventStream<Event>& stream_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_progress_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// The count check of a streaming call's inputs, named by their `field`:
// INVALID_ARGUMENT "<field> is empty", RESOURCE_EXHAUSTED over
// --max_examples_per_sweep.
inline absl::Status CheckInputCount(const ServiceLimits& limits, int64_t count,
                                    absl::string_view field) {
  if (count == 0)
    return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  if (count > limits.max_examples_per_sweep) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, " has ", count,
                     " entries, over the limit --max_examples_per_sweep=",
                     limits.max_examples_per_sweep));
  }
  return absl::OkStatus();
}

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_STREAMING_STREAMING_CALL_H_
