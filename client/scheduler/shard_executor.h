// Runs one shard's SweepAblation call on one of the replicas the executor
// knows. An interface so the scheduler's retry, resume, merge and fleet
// logic is tested with a fake that fails on demand, without servers.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_
#define BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.pb.h"
#include "client/scheduler/shard.h"
#include "client/transport/channel_security.h"
#include "client/transport/targets.h"
#include "common/clock.h"

namespace bertology {
namespace client {

// Pairs scored so far within the running call.
using ShardProgressFn = std::function<void(int64_t done)>;

// What one call returned. `result` holds whatever arrived before the call
// ended (a stream cut part-way still delivered its baseline and some mask
// results, which the scheduler keeps); it is complete when `status` is OK.
// Mask indices in `result` are relative to the request's mask list.
struct ShardAttempt {
  absl::Status status;
  ShardResult result;
  bool has_baseline = false;
};

// Implementations are thread-safe: the scheduler calls Run from one thread
// per in-flight shard, and Channels from its own thread.
class ShardExecutor {
 public:
  virtual ~ShardExecutor() = default;
  // The channels to use now, by id. Ids are stable and never reused: a
  // replica that goes away drops out of the list, a new one gets a new id.
  // An executor over DNS names re-resolves them here when due. An error only
  // when there is no channel at all (the message says why).
  virtual absl::StatusOr<std::vector<int>> Channels() = 0;
  virtual std::string channel_name(int channel) const = 0;
  // How many shards may be in flight on `channel` per --max-inflight unit
  // (the number of replicas behind it, when known).
  virtual int backends(int channel) const = 0;
  // Sends `request` (a shard's examples and some of its masks) on `channel`
  // with `timeout`. An OK stream that ended without every result is an
  // UNAVAILABLE attempt.
  virtual ShardAttempt Run(int channel, const v1::SweepAblationRequest& request,
                           absl::Duration timeout,
                           const ShardProgressFn& on_progress) = 0;
};

struct GrpcExecutorOptions {
  // How often dns:/// targets are looked up again, so replicas that come
  // and go (pods behind a headless Service) are seen.
  absl::Duration resolve_interval = absl::Seconds(10);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
  // TLS, client certificate and bearer token for every replica.
  ChannelSecurity security;
};

// gRPC channels: one per address of a list or of a resolved DNS name, or
// one per target for a single address (a server or an L7 balancer) or a
// round_robin target.
std::unique_ptr<ShardExecutor> NewGrpcShardExecutor(
    const std::vector<ChannelTarget>& targets,
    const GrpcExecutorOptions& options = {});

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_
