// A ShardExecutor for tests: scores every (mask, example) pair with a fixed
// function of the mask id and the example, so any sharding must merge to the
// same totals; channels can be made to fail.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_FAKE_EXECUTOR_TEST_UTIL_H_
#define BERTOLOGY_CLIENT_SCHEDULER_FAKE_EXECUTOR_TEST_UTIL_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/scheduler/shard_executor.h"
#include "common/grpc_status.h"

namespace bertology {
namespace client {
namespace testing {

// Loss values are multiples of 1/8 so sums are exact in any order.
inline void ScorePair(const std::string& mask_id, const v1::LabeledExample& e,
                      bool* correct, double* loss) {
  const size_t h = std::hash<std::string>()(
      absl::StrCat(mask_id, "|", e.input().text_a(), "|", e.label()));
  *correct = h % 3 != 0;
  *loss = static_cast<double>(h % 17) / 8.0;
}

inline std::string MaskIdOf(const v1::MaskSpec& m) {
  if (m.has_explicit_mask()) return m.explicit_mask().id();
  if (m.has_keep_only()) return m.keep_only().id();
  return "generator";
}

class FakeExecutor : public ShardExecutor {
 public:
  explicit FakeExecutor(int channels) : calls_(channels), dead_(channels) {
    for (int c = 0; c < channels; ++c) live_.push_back(c);
  }
  absl::StatusOr<std::vector<int>> Channels() override {
    absl::MutexLock lock(&mu_);
    if (live_.empty()) return absl::UnavailableError("fake: no channel");
    return live_;
  }
  std::string channel_name(int c) const override {
    return absl::StrCat("fake-", c);
  }
  int backends(int) const override { return 1; }

  // The channels Channels() returns from now on (ids < the constructor's
  // count): replicas coming and going.
  void SetLive(std::vector<int> live) {
    absl::MutexLock lock(&mu_);
    live_ = std::move(live);
  }
  // Every call ends with UNAVAILABLE after delivering the baseline and at
  // most `masks` mask results (a stream cut part-way); < 0: never.
  void CutAfter(int masks) {
    absl::MutexLock lock(&mu_);
    cut_after_ = masks;
  }
  // Every call delivers all its results and then ends with `status` (a
  // deadline reached after the last result); OK: calls end OK.
  void EndWith(absl::Status status) {
    absl::MutexLock lock(&mu_);
    end_with_ = std::move(status);
  }
  int64_t masks_sent() {
    absl::MutexLock lock(&mu_);
    return masks_sent_;
  }

  void Kill(int channel) {
    absl::MutexLock lock(&mu_);
    dead_[channel] = true;
  }
  // `channel` serves a model with `identity`: requests that carry another
  // model_identity get the server's refusal.
  void ServeIdentity(int channel, std::string identity) {
    absl::MutexLock lock(&mu_);
    identity_[channel] = std::move(identity);
  }
  // Calls on other channels wait until `channel` has been called once (a
  // test that needs `channel` asked, however the threads are scheduled).
  void HoldUntilCalled(int channel) {
    absl::MutexLock lock(&mu_);
    hold_for_ = channel;
  }
  // Every call fails with `status` (after `ok_calls` successful ones).
  void FailAll(absl::Status status, int ok_calls = 0) {
    absl::MutexLock lock(&mu_);
    fail_all_ = status;
    ok_calls_ = ok_calls;
  }
  // Each call takes this long in real time, so every worker gets shards.
  void SetDelay(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    delay_ = d;
  }
  int calls(int channel) {
    absl::MutexLock lock(&mu_);
    return calls_[channel];
  }
  // Every request Run was given, in call order.
  std::vector<v1::SweepAblationRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  int total_calls() {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (int c : calls_) n += c;
    return n;
  }

  ShardAttempt Run(int channel, const v1::SweepAblationRequest& request,
                   absl::Duration,
                   const ShardProgressFn& on_progress) override {
    absl::Duration delay;
    int cut_after;
    absl::Status end_with;
    ShardAttempt attempt;
    {
      absl::MutexLock lock(&mu_);
      delay = delay_;
      cut_after = cut_after_;
      masks_sent_ += request.masks_size();
      requests_.push_back(request);
      end_with = end_with_;
    }
    absl::SleepFor(delay);
    {
      absl::MutexLock lock(&mu_);
      if (hold_for_ >= 0 && channel != hold_for_) {
        mu_.Await(absl::Condition(this, &FakeExecutor::HeldChannelCalled));
      }
      calls_[channel]++;
      if (dead_[channel]) {
        attempt.status =
            absl::UnavailableError(absl::StrCat("fake-", channel, " is dead"));
        return attempt;
      }
      auto served = identity_.find(channel);
      if (served != identity_.end() && !request.model_identity().empty() &&
          request.model_identity() != served->second) {
        attempt.status = ModelIdentityMismatchError(
            request.model(), served->second, request.model_identity());
        return attempt;
      }
      if (!fail_all_.ok()) {
        if (ok_calls_ <= 0) {
          attempt.status = fail_all_;
          return attempt;
        }
        --ok_calls_;
      }
    }
    ShardResult& r = attempt.result;
    r.replica = channel_name(channel);
    r.baseline.mask_index = -1;
    r.baseline.mask_id = "baseline";
    for (const v1::LabeledExample& e : request.examples()) {
      bool ok;
      double loss;
      ScorePair("baseline", e, &ok, &loss);
      r.baseline.examples++;
      r.baseline.scored++;
      r.baseline.correct += ok ? 1 : 0;
      r.baseline.loss_sum += loss;
      r.baseline.paired.Add(1, 0.0);
    }
    for (int m = 0; m < request.masks_size(); ++m) {
      MaskCounts c;
      c.mask_index = m;
      c.mask_id = MaskIdOf(request.masks(m));
      for (const v1::LabeledExample& e : request.examples()) {
        bool ok, base_ok;
        double loss, base_loss;
        ScorePair(c.mask_id, e, &ok, &loss);
        ScorePair("baseline", e, &base_ok, &base_loss);
        c.examples++;
        c.scored++;
        c.correct += ok ? 1 : 0;
        c.loss_sum += loss;
        // The server's paired sums: one unit, correct minus the baseline's.
        c.paired.Add(1, (ok ? 1.0 : 0.0) - (base_ok ? 1.0 : 0.0));
      }
      r.masks.push_back(c);
    }
    attempt.has_baseline = true;
    if (on_progress) on_progress(r.baseline.examples);
    if (cut_after >= 0 && static_cast<int>(r.masks.size()) > cut_after) {
      r.masks.resize(cut_after);
      attempt.status = absl::UnavailableError("fake: stream cut");
    } else {
      attempt.status = end_with;
    }
    return attempt;
  }

 private:
  bool HeldChannelCalled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return calls_[hold_for_] > 0;
  }

  absl::Mutex mu_;
  std::vector<int> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> dead_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> identity_ ABSL_GUARDED_BY(mu_);
  int hold_for_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status fail_all_ ABSL_GUARDED_BY(mu_);
  int ok_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> live_ ABSL_GUARDED_BY(mu_);
  int cut_after_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status end_with_ ABSL_GUARDED_BY(mu_);
  int64_t masks_sent_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<v1::SweepAblationRequest> requests_ ABSL_GUARDED_BY(mu_);
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace testing
}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_FAKE_EXECUTOR_TEST_UTIL_H_
