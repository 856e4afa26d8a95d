#include "client/scheduler/sweep_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "client/scheduler/progress_log.h"

namespace bertology {
namespace client {
namespace {

// Errors that say the request itself is wrong: every replica would refuse it.
bool IsRetryable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kAlreadyExists:
      return false;
    default:
      return true;
  }
}

void Fnv(uint64_t* h, const std::string& s) {
  for (unsigned char c : s) {
    *h ^= c;
    *h *= 1099511628211ull;
  }
  *h ^= 0xff;  // separator, so ("ab","c") != ("a","bc")
  *h *= 1099511628211ull;
}

struct Pending {
  Shard shard;
  int attempts = 0;
  absl::Time not_before = absl::InfinitePast();
  int avoid = -1;  // the channel it last failed on
  std::string errors;
};

struct ChannelState {
  ChannelStats stats;
  int consecutive_failures = 0;
  absl::Time down_until = absl::InfinitePast();
};

class SweepRunState {
 public:
  SweepRunState(const SweepJob& job, ShardExecutor* executor,
                const SchedulerOptions& options, const SweepProgressFn& fn)
      : job_(job),
        executor_(executor),
        options_(options),
        clock_(options.clock != nullptr ? options.clock : Clock::Real()),
        on_progress_(fn),
        merger_(job.masks, static_cast<int>(job.examples.size())) {}

  absl::StatusOr<SweepRun> Run();

 private:
  void Worker(int channel);
  // The next shard `channel` may run now, or nullopt with how long to wait.
  bool TakeShard(int channel, Pending* out, absl::Duration* wait)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool OthersDown(int channel, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished(int channel, Pending p, absl::StatusOr<ShardResult> result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::SweepAblationRequest Request(const Shard& s) const;
  void Report() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SweepJob& job_;
  ShardExecutor* const executor_;
  const SchedulerOptions options_;
  Clock* const clock_;
  const SweepProgressFn on_progress_;
  std::unique_ptr<ProgressLog> log_;

  absl::Mutex mu_;
  absl::CondVar changed_;
  SweepMerger merger_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<ChannelState> channels_ ABSL_GUARDED_BY(mu_);
  std::map<int, int64_t> partial_ ABSL_GUARDED_BY(mu_);  // shard -> pairs
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);
  int inflight_ ABSL_GUARDED_BY(mu_) = 0;
  SweepProgressSnapshot progress_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> by_peer_ ABSL_GUARDED_BY(mu_);
};

v1::SweepAblationRequest SweepRunState::Request(const Shard& s) const {
  v1::SweepAblationRequest r;
  r.set_model(job_.model);
  r.set_mode(job_.mode);
  if (job_.max_batch_rows > 0) {
    r.mutable_options()->set_max_batch_rows(job_.max_batch_rows);
  }
  for (int e = s.example_begin; e < s.example_end; ++e) {
    *r.add_examples() = job_.examples[e];
  }
  for (int m = s.mask_begin; m < s.mask_end; ++m) {
    *r.add_masks() = job_.masks[m].wire;
  }
  return r;
}

bool SweepRunState::OthersDown(int channel, absl::Time now) const {
  for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
    if (c != channel && channels_[c].down_until <= now) return false;
  }
  return true;
}

bool SweepRunState::TakeShard(int channel, Pending* out, absl::Duration* wait) {
  const absl::Time now = clock_->Now();
  if (channels_[channel].down_until > now) {
    *wait = channels_[channel].down_until - now;
    return false;
  }
  *wait = absl::InfiniteDuration();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->not_before > now) {
      *wait = std::min(*wait, it->not_before - now);
      continue;
    }
    if (it->avoid == channel && !OthersDown(channel, now)) {
      *wait = std::min(*wait, absl::Milliseconds(20));
      continue;
    }
    *out = std::move(*it);
    queue_.erase(it);
    return true;
  }
  return false;
}

void SweepRunState::Report() {
  if (!on_progress_) return;
  SweepProgressSnapshot s = progress_;
  s.inflight = inflight_;
  for (const auto& [shard, pairs] : partial_) s.pairs_done += pairs;
  on_progress_(s);
}

void SweepRunState::Finished(int channel, Pending p,
                             absl::StatusOr<ShardResult> result) {
  --inflight_;
  partial_.erase(p.shard.index);
  ChannelState& ch = channels_[channel];
  const absl::Time now = clock_->Now();
  absl::Status status = result.status();
  if (result.ok()) {
    result->shard = p.shard;
    result->baseline.mask_index = -1;
    for (MaskCounts& c : result->masks) c.mask_index += p.shard.mask_begin;
    status = merger_.Add(*result);
  }
  if (status.ok()) {
    ch.stats.shards_ok++;
    ch.consecutive_failures = 0;
    ch.down_until = absl::InfinitePast();
    by_peer_[result->replica]++;
    progress_.shards_done++;
    progress_.pairs_done += p.shard.pairs();
    if (log_ != nullptr) {
      absl::Status logged = log_->Append(*result);
      if (!logged.ok() && fatal_.ok()) fatal_ = logged;
    }
    Report();
    return;
  }
  ch.stats.failures++;
  ch.stats.last_error = status.ToString();
  ch.consecutive_failures++;
  ch.down_until = now + Backoff(options_, ch.consecutive_failures);
  p.attempts++;
  absl::StrAppend(&p.errors, "\n  attempt ", p.attempts, " on ",
                  executor_->channel_name(channel), ": ", status.ToString());
  if (!IsRetryable(status)) {
    if (fatal_.ok()) {
      fatal_ = absl::Status(
          status.code(), absl::StrCat("shard ", p.shard.Key(),
                                      " was refused (not retried):", p.errors));
    }
  } else if (p.attempts >= options_.max_attempts) {
    if (fatal_.ok()) {
      fatal_ = absl::UnavailableError(
          absl::StrCat("shard ", p.shard.Key(), " failed ", p.attempts,
                       " times; no replica answered:", p.errors));
    }
  } else {
    p.not_before = now + Backoff(options_, p.attempts);
    p.avoid = channel;
    progress_.retries++;
    queue_.push_front(std::move(p));
  }
  Report();
}

void SweepRunState::Worker(int channel) {
  while (true) {
    Pending p;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (!fatal_.ok() || (queue_.empty() && inflight_ == 0)) return;
        absl::Duration wait;
        if (TakeShard(channel, &p, &wait)) break;
        if (wait == absl::InfiniteDuration()) {
          // Nothing queued: wait for an in-flight shard to finish or fail.
          changed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
          continue;
        }
        mu_.Unlock();
        clock_->SleepFor(std::min(wait, absl::Milliseconds(50)));
        mu_.Lock();
      }
      ++inflight_;
    }
    const v1::SweepAblationRequest request = Request(p.shard);
    const int index = p.shard.index;
    absl::StatusOr<ShardResult> result = executor_->Run(
        channel, request, options_.shard_timeout, [&](int64_t done) {
          absl::MutexLock lock(&mu_);
          partial_[index] = done;
          Report();
        });
    absl::MutexLock lock(&mu_);
    Finished(channel, std::move(p), std::move(result));
    changed_.SignalAll();
  }
}

absl::StatusOr<SweepRun> SweepRunState::Run() {
  if (job_.examples.empty()) {
    return absl::InvalidArgumentError("the sweep has no examples");
  }
  if (job_.masks.empty()) return absl::InvalidArgumentError("no masks");
  if (executor_->num_channels() < 1) {
    return absl::InvalidArgumentError("no replicas to send shards to");
  }
  const std::vector<Shard> shards =
      PlanShards(static_cast<int>(job_.masks.size()),
                 static_cast<int>(job_.examples.size()), options_.sharding);
  std::map<std::string, bool> resumed;
  absl::MutexLock lock(&mu_);
  if (!options_.progress_file.empty()) {
    absl::StatusOr<std::unique_ptr<ProgressLog>> log = ProgressLog::Open(
        options_.progress_file, SweepFingerprint(job_, options_.sharding));
    if (!log.ok()) return log.status();
    log_ = *std::move(log);
    for (const ShardResult& r : log_->finished()) {
      if (!merger_.Add(r).ok()) continue;  // e.g. a duplicate line
      resumed[r.shard.Key()] = true;
    }
  }
  progress_.shards_total = static_cast<int>(shards.size());
  for (const Shard& s : shards) {
    progress_.pairs_total += s.pairs();
    if (resumed.count(s.Key()) > 0) {
      progress_.shards_done++;
      progress_.shards_resumed++;
      progress_.pairs_done += s.pairs();
    } else {
      queue_.push_back(Pending{s});
    }
  }
  channels_.resize(executor_->num_channels());
  std::vector<std::thread> workers;
  for (int c = 0; c < executor_->num_channels(); ++c) {
    channels_[c].stats.name = executor_->channel_name(c);
    const int n = std::max(1, options_.max_inflight) *
                  std::max(1, executor_->backends(c));
    for (int i = 0; i < n; ++i) workers.emplace_back([this, c] { Worker(c); });
  }
  Report();
  mu_.Unlock();
  for (std::thread& t : workers) t.join();
  mu_.Lock();
  if (!fatal_.ok()) return fatal_;
  absl::StatusOr<SweepSummary> summary = merger_.Finish();
  if (!summary.ok()) return summary.status();
  SweepRun run;
  run.summary = *std::move(summary);
  for (const ChannelState& c : channels_) run.channels.push_back(c.stats);
  run.shards_by_peer = by_peer_;
  run.shards_total = progress_.shards_total;
  run.shards_resumed = progress_.shards_resumed;
  run.retries = progress_.retries;
  return run;
}

}  // namespace

std::string SweepFingerprint(const SweepJob& job,
                             const ShardingOptions& sharding) {
  uint64_t h = 14695981039346656037ull;
  Fnv(&h, job.model);
  Fnv(&h, absl::StrCat(job.mode, "/", sharding.masks_per_shard, "/",
                       sharding.examples_per_shard));
  for (const PlannedMask& m : job.masks) {
    Fnv(&h, m.id);
    Fnv(&h, m.wire.SerializeAsString());
  }
  for (const v1::LabeledExample& e : job.examples) {
    Fnv(&h, e.input().text_a());
    Fnv(&h, e.input().text_b());
    Fnv(&h, absl::StrCat(e.label()));
  }
  return absl::StrFormat("%016x-%dm-%de", h, job.masks.size(),
                         job.examples.size());
}

absl::Duration Backoff(const SchedulerOptions& o, int failures) {
  const double factor =
      std::pow(o.backoff_multiplier, std::max(0, failures - 1));
  const absl::Duration d = o.initial_backoff * factor;
  return std::min(d, o.max_backoff);
}

absl::StatusOr<SweepRun> RunSweep(const SweepJob& job, ShardExecutor* executor,
                                  const SchedulerOptions& options,
                                  const SweepProgressFn& on_progress) {
  SweepRunState state(job, executor, options, on_progress);
  return state.Run();
}

}  // namespace client
}  // namespace bertology
