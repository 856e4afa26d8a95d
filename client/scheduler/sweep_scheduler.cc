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
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/scheduler/progress_log.h"
#include "common/grpc_status.h"

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

// A shard waiting to run (again). After a call that ended early it carries
// what arrived, and `masks` lists only the planned masks still missing.
struct Pending {
  Shard shard;
  std::vector<int> masks;  // planned indices still to score
  ShardResult got;         // baseline and mask results so far (global)
  bool has_baseline = false;
  int attempts = 0;
  absl::Time not_before = absl::InfinitePast();
  int avoid = -1;  // the channel it last failed on
  std::string errors;
};

struct ChannelState {
  ChannelStats stats;
  bool live = false;  // in the executor's latest channel list
  int workers = 0;    // threads serving it now
  int consecutive_failures = 0;
  absl::Time down_until = absl::InfinitePast();
};

class ScheduledSweep {
 public:
  ScheduledSweep(const SweepJob& job, ShardExecutor* executor,
                 const SchedulerOptions& options, const SweepProgressFn& fn)
      : job_(job),
        executor_(executor),
        options_(options),
        clock_(options.clock != nullptr ? options.clock : Clock::Real()),
        on_progress_(fn),
        merger_(job.masks, static_cast<int>(job.examples.size())) {}

  absl::StatusOr<SweepReport> Run();

 private:
  // Reads the progress file and the merge_from files; queues the rest.
  absl::Status Plan() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the executor's channel list (asked for without the lock: it may
  // look names up) and starts workers for channels new to the sweep.
  void ApplyChannels(const absl::StatusOr<std::vector<int>>& ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Worker(int channel);
  // The next shard `channel` may run now, or false with how long to wait.
  bool TakeShard(int channel, Pending* out, absl::Duration* wait)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool OthersDown(int channel, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished(int channel, Pending p, ShardAttempt attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Succeeded(int channel, const Pending& p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::SweepAblationRequest Request(const Pending& p) const;
  void Report() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !fatal_.ok() || (queue_.empty() && inflight_ == 0);
  }

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
  std::map<int, ChannelState> channels_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  absl::Time no_replicas_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::map<int, int64_t> partial_ ABSL_GUARDED_BY(mu_);  // shard -> pairs
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);
  int inflight_ ABSL_GUARDED_BY(mu_) = 0;
  int masks_resumed_ ABSL_GUARDED_BY(mu_) = 0;
  SweepProgressSnapshot progress_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> by_peer_ ABSL_GUARDED_BY(mu_);
};

v1::SweepAblationRequest ScheduledSweep::Request(const Pending& p) const {
  v1::SweepAblationRequest r;
  r.set_model(job_.model);
  r.set_model_identity(job_.model_identity);
  r.set_mode(job_.mode);
  if (job_.max_batch_rows > 0) {
    r.mutable_options()->set_max_batch_rows(job_.max_batch_rows);
  }
  r.set_statistics(job_.statistics);
  for (const v1::TextInput& input : job_.reference) *r.add_reference() = input;
  if (job_.resample.draws() != 0 || job_.resample.seed() != 0 ||
      job_.resample.alignment() != v1::RESAMPLE_ALIGNMENT_UNSPECIFIED) {
    *r.mutable_resample() = job_.resample;
  }
  for (int e = p.shard.example_begin; e < p.shard.example_end; ++e) {
    *r.add_examples() = job_.examples[e];
  }
  for (int m : p.masks) *r.add_masks() = job_.masks[m].wire;
  return r;
}

bool ScheduledSweep::OthersDown(int channel, absl::Time now) const {
  for (const auto& [c, state] : channels_) {
    if (c != channel && state.live && state.down_until <= now) return false;
  }
  return true;
}

bool ScheduledSweep::TakeShard(int channel, Pending* out,
                               absl::Duration* wait) {
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

void ScheduledSweep::Report() {
  if (!on_progress_) return;
  SweepProgressSnapshot s = progress_;
  s.inflight = inflight_;
  for (const auto& [c, state] : channels_) s.replicas += state.live ? 1 : 0;
  for (const auto& [shard, pairs] : partial_) s.pairs_done += pairs;
  on_progress_(s);
}

void ScheduledSweep::Succeeded(int channel, const Pending& p) {
  ChannelState& ch = channels_[channel];
  ch.stats.shards_ok++;
  ch.consecutive_failures = 0;
  ch.down_until = absl::InfinitePast();
  by_peer_[p.got.replica]++;
  progress_.shards_done++;
  progress_.pairs_done += p.shard.pairs();
  if (log_ != nullptr) {
    absl::Status logged = log_->Append(p.got);
    if (!logged.ok() && fatal_.ok()) fatal_ = logged;
  }
}

void ScheduledSweep::Finished(int channel, Pending p, ShardAttempt attempt) {
  --inflight_;
  partial_.erase(p.shard.index);
  ChannelState& ch = channels_[channel];
  const absl::Time now = clock_->Now();
  // Keep whatever arrived, in planned indices; the rest is sent again.
  p.got.replica = attempt.result.replica;
  if (attempt.has_baseline && !p.has_baseline) {
    p.got.baseline = attempt.result.baseline;
    p.got.baseline.mask_index = -1;
    p.has_baseline = true;
  }
  std::vector<bool> arrived(p.masks.size(), false);
  int fresh = 0;
  for (MaskCounts& c : attempt.result.masks) {
    if (c.mask_index < 0 || c.mask_index >= static_cast<int>(p.masks.size()) ||
        arrived[c.mask_index]) {
      continue;  // not one we asked for: ignore, it is asked again
    }
    arrived[c.mask_index] = true;
    c.mask_index = p.masks[c.mask_index];
    p.got.masks.push_back(std::move(c));
    ++fresh;
  }
  std::vector<int> missing;
  for (size_t i = 0; i < p.masks.size(); ++i) {
    if (!arrived[i]) missing.push_back(p.masks[i]);
  }
  p.masks = std::move(missing);
  absl::Status status = attempt.status;
  if (!status.ok() && p.masks.empty() && p.has_baseline) {
    // Everything asked for arrived before the call ended badly (a deadline
    // or a cut after the last result): the shard is complete. Sending it
    // again would ask for no masks, which a replica refuses.
    status = absl::OkStatus();
  }
  if (status.ok() && (!p.masks.empty() || !p.has_baseline)) {
    status = absl::UnavailableError("the call ended OK with results missing");
  }
  if (status.ok()) {
    p.got.shard = p.shard;
    status = merger_.Add(p.got);
    if (status.ok()) {
      Succeeded(channel, p);
      Report();
      return;
    }
  }
  const std::string where =
      absl::StrCat(executor_->channel_name(channel), ": ", status.ToString());
  if (IsModelIdentityMismatch(status)) {
    // This replica serves other weights (or dtype, or server version): it
    // is refused by address, and the shard goes to the others without
    // counting an attempt. With none left, the sweep stops naming them.
    ch.stats.refused = std::string(status.message());
    ch.down_until = absl::InfiniteFuture();
    queue_.push_front(std::move(p));
    bool any_left = false;
    std::string refused;
    for (const auto& [c, state] : channels_) {
      if (!state.live) continue;
      if (state.stats.refused.empty())
        any_left = true;
      else
        absl::StrAppend(&refused, "\n  ", state.stats.name, ": ",
                        state.stats.refused);
    }
    if (!any_left && fatal_.ok()) {
      fatal_ = absl::FailedPreconditionError(
          absl::StrCat("every replica serves another model than the sweep's (",
                       job_.model_identity, "):", refused));
    }
    Report();
    return;
  }
  if (!IsRetryable(status)) {
    absl::StrAppend(&p.errors, "\n  attempt ", p.attempts + 1, " on ", where);
    if (fatal_.ok()) {
      fatal_ = absl::Status(
          status.code(), absl::StrCat("shard ", p.shard.Key(),
                                      " was refused (not retried):", p.errors));
    }
    Report();
    return;
  }
  if (fresh > 0 && p.has_baseline) {
    // The call made progress before it ended (typically a stream cut when
    // its connection aged out): not the replica's fault and not an attempt
    // lost. Send the remaining masks again at once, anywhere.
    masks_resumed_ += fresh;
    progress_.retries++;
    queue_.push_front(std::move(p));
    Report();
    return;
  }
  ch.stats.failures++;
  ch.stats.last_error = status.ToString();
  ch.consecutive_failures++;
  ch.down_until = now + Backoff(options_, ch.consecutive_failures);
  p.attempts++;
  absl::StrAppend(&p.errors, "\n  attempt ", p.attempts, " on ", where);
  if (p.attempts >= options_.max_attempts) {
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

void ScheduledSweep::Worker(int channel) {
  while (true) {
    Pending p;
    absl::Duration backoff = absl::ZeroDuration();
    {
      absl::MutexLock lock(&mu_);
      if (Done() || !channels_[channel].live ||
          !channels_[channel].stats.refused.empty()) {
        channels_[channel].workers--;
        return;
      }
      absl::Duration wait;
      if (!TakeShard(channel, &p, &wait)) {
        if (wait == absl::InfiniteDuration()) {
          // Nothing queued: wait for an in-flight shard to finish or fail.
          changed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
          continue;
        }
        backoff = std::min(wait, absl::Milliseconds(50));
      } else {
        ++inflight_;
      }
    }
    if (backoff > absl::ZeroDuration()) {
      // On the injectable clock, so tests skip backoff in no time.
      clock_->SleepFor(backoff);
      continue;
    }
    const v1::SweepAblationRequest request = Request(p);
    const int index = p.shard.index;
    // Pairs already scored by earlier calls of this shard count as done.
    const int64_t earlier =
        static_cast<int64_t>(p.shard.num_masks() - p.masks.size() +
                             (p.has_baseline ? 1 : 0)) *
        p.shard.num_examples();
    ShardAttempt attempt = executor_->Run(
        channel, request, options_.shard_timeout, [&](int64_t done) {
          absl::MutexLock lock(&mu_);
          partial_[index] = std::min(earlier + done, p.shard.pairs());
          Report();
        });
    absl::MutexLock lock(&mu_);
    Finished(channel, std::move(p), std::move(attempt));
    changed_.SignalAll();
  }
}

void ScheduledSweep::ApplyChannels(
    const absl::StatusOr<std::vector<int>>& ids) {
  const absl::Time now = clock_->Now();
  for (auto& [c, state] : channels_) state.live = false;
  if (ids.ok()) {
    for (int c : *ids) {
      ChannelState& state = channels_[c];
      if (state.stats.name.empty())
        state.stats.name = executor_->channel_name(c);
      state.live = true;
      if (!state.stats.refused.empty()) continue;
      // A new replica (a pod came up), or one back after it went away, gets
      // its own in-flight slots.
      const int slots = std::max(1, options_.max_inflight) *
                        std::max(1, executor_->backends(c));
      for (; state.workers < slots; ++state.workers) {
        workers_.emplace_back([this, c] { Worker(c); });
      }
    }
  }
  if (ids.ok() && !ids->empty()) {
    no_replicas_since_ = absl::InfiniteFuture();
  } else if (no_replicas_since_ == absl::InfiniteFuture()) {
    no_replicas_since_ = now;
  } else if (now - no_replicas_since_ >= options_.no_replica_timeout &&
             fatal_.ok()) {
    fatal_ = absl::UnavailableError(absl::StrCat(
        "no replica for ", absl::FormatDuration(now - no_replicas_since_), ": ",
        ids.ok() ? "the executor has no channel" : ids.status().ToString()));
  }
  changed_.SignalAll();
}

absl::Status ScheduledSweep::Plan() {
  const std::vector<Shard> shards =
      PlanShards(static_cast<int>(job_.masks.size()),
                 static_cast<int>(job_.examples.size()), options_.sharding);
  const std::string fingerprint = SweepFingerprint(job_, options_.sharding);
  std::map<std::string, bool> resumed;
  auto take = [&](const std::vector<ShardResult>& finished,
                  const std::string& path) -> absl::Status {
    for (const ShardResult& r : finished) {
      const absl::Status added = merger_.Add(r);
      // A shard twice (a part's file and the merge's own) counts once; a
      // baseline that disagrees with another shard's is another model's.
      if (absl::IsFailedPrecondition(added)) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, ": ", added.message()));
      }
      if (!added.ok()) continue;
      resumed[r.shard.Key()] = true;
    }
    return absl::OkStatus();
  };
  if (!options_.progress_file.empty()) {
    absl::StatusOr<std::unique_ptr<ProgressLog>> log =
        ProgressLog::Open(options_.progress_file, fingerprint);
    if (!log.ok()) return log.status();
    log_ = *std::move(log);
    absl::Status taken = take(log_->finished(), options_.progress_file);
    if (!taken.ok()) return taken;
  }
  for (const std::string& path : options_.merge_from) {
    if (path == options_.progress_file) continue;
    absl::StatusOr<std::vector<ShardResult>> finished =
        ReadProgressFile(path, fingerprint);
    if (!finished.ok()) return finished.status();
    absl::Status taken = take(*finished, path);
    if (!taken.ok()) return taken;
  }
  const int parts = std::max(1, options_.part_count);
  for (const Shard& s : shards) {
    if (s.index % parts != options_.part_index) continue;
    progress_.shards_total++;
    progress_.pairs_total += s.pairs();
    if (resumed.count(s.Key()) > 0) {
      progress_.shards_done++;
      progress_.shards_resumed++;
      progress_.pairs_done += s.pairs();
      continue;
    }
    Pending p;
    p.shard = s;
    for (int m = s.mask_begin; m < s.mask_end; ++m) p.masks.push_back(m);
    queue_.push_back(std::move(p));
  }
  return absl::OkStatus();
}

absl::StatusOr<SweepReport> ScheduledSweep::Run() {
  if (job_.examples.empty()) {
    return absl::InvalidArgumentError("the sweep has no examples");
  }
  if (job_.masks.empty()) return absl::InvalidArgumentError("no masks");
  if (options_.part_count < 1 || options_.part_index < 0 ||
      options_.part_index >= options_.part_count) {
    return absl::InvalidArgumentError(absl::StrCat("part ", options_.part_index,
                                                   "/", options_.part_count,
                                                   " is not in [0, count)"));
  }
  {
    absl::MutexLock lock(&mu_);
    absl::Status planned = Plan();
    if (!planned.ok()) return planned;
    Report();
  }
  // Supervise: re-read the channels now and then until the work is done.
  absl::Time next_refresh = absl::InfinitePast();
  while (true) {
    if (clock_->Now() >= next_refresh) {
      const absl::StatusOr<std::vector<int>> ids = executor_->Channels();
      absl::MutexLock lock(&mu_);
      if (Done()) break;
      ApplyChannels(ids);
      next_refresh = clock_->Now() + options_.refresh_interval;
      continue;
    }
    bool no_replica;
    {
      absl::MutexLock lock(&mu_);
      if (Done()) break;
      no_replica = no_replicas_since_ != absl::InfiniteFuture();
      if (!no_replica) changed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
    }
    // No worker runs: waiting for a replica is all there is to do.
    if (no_replica) clock_->SleepFor(options_.refresh_interval);
  }
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [c, state] : channels_) state.live = false;  // workers leave
    changed_.SignalAll();
    workers = std::move(workers_);
  }
  for (std::thread& t : workers) t.join();
  absl::MutexLock lock(&mu_);
  if (!fatal_.ok()) return fatal_;
  SweepReport run;
  if (options_.part_count <= 1) {
    absl::StatusOr<SweepSummary> summary = merger_.Finish();
    if (!summary.ok()) return summary.status();
    run.summary = *std::move(summary);
    run.complete = true;
  }
  for (const auto& [c, state] : channels_) run.channels.push_back(state.stats);
  run.shards_by_peer = by_peer_;
  run.shards_total = progress_.shards_total;
  run.shards_resumed = progress_.shards_resumed;
  run.retries = progress_.retries;
  run.masks_resumed = masks_resumed_;
  return run;
}

}  // namespace

std::string SweepFingerprint(const SweepJob& job,
                             const ShardingOptions& sharding) {
  uint64_t h = 14695981039346656037ull;
  Fnv(&h, job.model);
  // Results of other weights, another dtype or server version are not this
  // sweep's, even when the flags are the same.
  Fnv(&h, job.model_identity);
  Fnv(&h, absl::StrCat(job.mode, "/", sharding.masks_per_shard, "/",
                       sharding.examples_per_shard));
  // Other reference statistics or draws score other numbers. Added only
  // when set, so the progress files of zero/uniform sweeps keep their
  // fingerprint.
  if (!job.statistics.empty() || !job.reference.empty() ||
      job.resample.draws() != 0 || job.resample.seed() != 0 ||
      job.resample.alignment() != v1::RESAMPLE_ALIGNMENT_UNSPECIFIED) {
    Fnv(&h, absl::StrCat("statistics=", job.statistics, "/draws=",
                         job.resample.draws(), "/seed=", job.resample.seed()));
    // Only a non-default alignment joins, so earlier fingerprints hold.
    if (job.resample.alignment() > v1::RESAMPLE_ALIGNMENT_MATCHED_LENGTHS) {
      Fnv(&h, absl::StrCat("/alignment=",
                           static_cast<int>(job.resample.alignment())));
    }
    for (const v1::TextInput& input : job.reference) {
      Fnv(&h, input.text_a());
      Fnv(&h, input.text_b());
    }
  }
  for (const PlannedMask& m : job.masks) {
    Fnv(&h, m.id);
    Fnv(&h, m.wire.SerializeAsString());
  }
  for (const v1::LabeledExample& e : job.examples) {
    Fnv(&h, e.input().text_a());
    Fnv(&h, e.input().text_b());
    Fnv(&h, absl::StrCat(e.label(), ":", absl::StrJoin(e.word_labels(), ",")));
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

absl::StatusOr<SweepReport> ScheduleSweep(const SweepJob& job,
                                          ShardExecutor* executor,
                                          const SchedulerOptions& options,
                                          const SweepProgressFn& on_progress) {
  ScheduledSweep state(job, executor, options, on_progress);
  return state.Run();
}

}  // namespace client
}  // namespace bertology
