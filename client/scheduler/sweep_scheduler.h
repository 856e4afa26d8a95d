// Runs one sweep as many SweepAblation calls over the replicas and merges
// them into the result a single-replica call would give.
//
// Promises:
//  - at most max_inflight x backends(channel) shards in flight per channel,
//    each with a deadline of shard_timeout; the channels are re-read from
//    the executor every refresh_interval (a dns:/// name grows and shrinks
//    with its pods), so concurrency scales with the replicas it sees;
//  - a call that ends early (a stream cut when its connection ages out, a
//    replica that dies) keeps the mask results that arrived: the shard's
//    remaining masks are sent again, not the whole shard. An attempt that
//    delivered new results does not count against max_attempts;
//  - a shard that fails with a retryable code (UNAVAILABLE, DEADLINE_EXCEEDED,
//    RESOURCE_EXHAUSTED, ABORTED, CANCELLED, INTERNAL, UNKNOWN, or an
//    incomplete stream) is retried after backoff, preferably on another
//    channel; a channel that fails is rested with growing backoff, so a dead
//    replica costs time, not results;
//  - the run fails only when a shard has failed max_attempts times (every
//    replica down, or the error is not the replica's fault), or at once on
//    a request error (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ...),
//    with a message naming the shard, the attempts and the last errors;
//  - shards of one example chunk whose baselines disagree (replicas that
//    score differently) fail the run with FAILED_PRECONDITION instead of
//    being merged;
//  - with a progress file, finished shards are appended as they finish and
//    skipped when the same sweep runs again (the same flags and the same
//    model identity: a file written against other weights is refused);
//  - with part_count N > 1, only the shards whose index % N == part_index
//    run (one part of an Indexed Job); merge_from reads other progress files
//    of the same sweep (the parts) and runs only what none of them holds.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_SWEEP_SCHEDULER_H_
#define BERTOLOGY_CLIENT_SCHEDULER_SWEEP_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.pb.h"
#include "client/scheduler/mask_plan.h"
#include "client/scheduler/shard.h"
#include "client/scheduler/shard_executor.h"
#include "client/scheduler/sweep_merger.h"
#include "common/clock.h"

namespace bertology {
namespace client {

struct SweepJob {
  std::string model;  // empty: the server's default model
  // GetModelInfo's ModelInfo.identity for the model (weights file, dtype,
  // max_seq_len, server version): part of the fingerprint, so a progress
  // file of another build of the model is refused instead of merged.
  std::string model_identity;
  v1::AblationMode mode = v1::ABLATION_MODE_ZERO;
  int max_batch_rows = 0;  // SweepOptions.max_batch_rows; 0: server default
  // MEAN and RESAMPLE: SweepAblationRequest.statistics, .reference and
  // .resample, sent with every shard (each replica computes a reference's
  // statistics once and keeps them under the same id).
  std::string statistics;
  std::vector<v1::TextInput> reference;
  v1::ResampleOptions resample;
  std::vector<v1::LabeledExample> examples;
  std::vector<PlannedMask> masks;
};

struct SchedulerOptions {
  ShardingOptions sharding;
  int max_inflight = 2;  // per channel and per replica behind it
  absl::Duration shard_timeout = absl::Minutes(10);
  int max_attempts = 6;  // per shard, the first included
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(10);
  double backoff_multiplier = 2.0;
  std::string progress_file;  // empty: none
  // Progress files of other runs of this sweep (the parts of an Indexed
  // Job): their finished shards count as done. Read only.
  std::vector<std::string> merge_from;
  int part_index = 0;  // this run's part, in [0, part_count)
  int part_count = 1;  // > 1: run only shards with index % count == index
  // How often the executor is asked for its channels (it rate-limits DNS
  // lookups itself), and how long the sweep may have none before failing.
  absl::Duration refresh_interval = absl::Seconds(1);
  absl::Duration no_replica_timeout = absl::Minutes(2);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

struct SweepProgressSnapshot {
  int64_t pairs_done = 0;  // resumed shards and partial in-flight shards
  int64_t pairs_total = 0;
  int shards_done = 0;
  int shards_total = 0;
  int shards_resumed = 0;
  int retries = 0;
  int inflight = 0;
  int replicas = 0;  // channels in use now
};
// Called from worker threads, one call at a time.
using SweepProgressFn = std::function<void(const SweepProgressSnapshot&)>;

struct ChannelStats {
  std::string name;
  int shards_ok = 0;
  int failures = 0;
  std::string last_error;
  // Non-empty once the replica answered that it serves another model than
  // the sweep's (its message): it gets no more shards, whatever DNS says.
  std::string refused;
};

struct SweepReport {
  // Empty for a part run (part_count > 1): its shards are in the progress
  // file, and a run with merge_from over all parts gives the summary.
  bool complete = false;
  SweepSummary summary;
  std::vector<ChannelStats> channels;
  std::map<std::string, int> shards_by_peer;  // who served (this run)
  int shards_total = 0;
  int shards_resumed = 0;
  int retries = 0;
  int masks_resumed = 0;  // mask results kept from calls that ended early
};

// Identifies a sweep (model and its identity, mode, examples, masks,
// sharding) for progress files; stable across runs of the same binary.
std::string SweepFingerprint(const SweepJob& job,
                             const ShardingOptions& sharding);

// Delay before attempt `failures` + 1 after `failures` failures (>= 1).
absl::Duration Backoff(const SchedulerOptions& options, int failures);

// Blocks until the sweep is merged or has failed.
absl::StatusOr<SweepReport> ScheduleSweep(
    const SweepJob& job, ShardExecutor* executor,
    const SchedulerOptions& options, const SweepProgressFn& on_progress = {});

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SWEEP_SCHEDULER_H_
