// Runs one shard's SweepAblation call on one of a fixed set of channels.
// An interface so the scheduler's retry, merge and resume logic is tested
// with a fake that fails on demand, without servers.
#ifndef BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_
#define BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.pb.h"
#include "client/scheduler/shard.h"
#include "client/scheduler/targets.h"

namespace bertology {
namespace client {

// Pairs scored so far within the running shard.
using ShardProgressFn = std::function<void(int64_t done)>;

// Implementations are thread-safe: the scheduler calls Run from one thread
// per in-flight shard.
class ShardExecutor {
 public:
  virtual ~ShardExecutor() = default;
  virtual int num_channels() const = 0;
  virtual std::string channel_name(int channel) const = 0;
  // How many shards may be in flight on `channel` per --max-inflight unit
  // (the number of replicas behind it, when known).
  virtual int backends(int channel) const = 0;
  // Sends `request` (the shard's examples and masks, mask indices relative
  // to the shard) on `channel` with `timeout`; returns the baseline and one
  // result per mask, indices still shard-relative, or the call's error (as
  // the gRPC code and message). An incomplete stream is an error.
  virtual absl::StatusOr<ShardResult> Run(
      int channel, const v1::SweepAblationRequest& request,
      absl::Duration timeout, const ShardProgressFn& on_progress) = 0;
};

// gRPC channels, one per ChannelTarget.
std::unique_ptr<ShardExecutor> NewGrpcShardExecutor(
    const std::vector<ChannelTarget>& targets);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_SHARD_EXECUTOR_H_
