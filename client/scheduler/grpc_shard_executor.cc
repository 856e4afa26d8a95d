// The gRPC ShardExecutor: one channel per target, a streaming SweepAblation
// call per shard.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "client/scheduler/shard_executor.h"

namespace bertology {
namespace client {
namespace {

MaskCounts FromProto(const v1::MaskResult& r) {
  MaskCounts c;
  c.mask_index = r.mask_index();
  c.mask_id = r.mask_id();
  c.spec = r.spec();
  for (const v1::LayerHead& lh : r.ablated()) {
    c.ablated.push_back({lh.layer(), lh.head()});
  }
  c.examples = r.examples();
  c.correct = r.correct();
  c.loss_sum = r.loss_sum();
  return c;
}

class GrpcShardExecutor : public ShardExecutor {
 public:
  explicit GrpcShardExecutor(const std::vector<ChannelTarget>& targets)
      : targets_(targets) {
    for (const ChannelTarget& t : targets_) {
      grpc::ChannelArguments args;
      if (!t.lb_policy.empty()) args.SetLoadBalancingPolicyName(t.lb_policy);
      args.SetMaxReceiveMessageSize(-1);
      args.SetMaxSendMessageSize(-1);
      // Reconnect to a restarted replica within a second or two.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
      stubs_.push_back(v1::Bertology::NewStub(grpc::CreateCustomChannel(
          t.uri, grpc::InsecureChannelCredentials(), args)));
    }
  }

  int num_channels() const override { return static_cast<int>(stubs_.size()); }
  std::string channel_name(int c) const override { return targets_[c].uri; }
  int backends(int c) const override { return targets_[c].backends; }

  absl::StatusOr<ShardResult> Run(int channel,
                                  const v1::SweepAblationRequest& request,
                                  absl::Duration timeout,
                                  const ShardProgressFn& on_progress) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMicroseconds(timeout));
    auto reader = stubs_[channel]->SweepAblation(&context, request);
    ShardResult result;
    result.replica = targets_[channel].uri;
    bool has_baseline = false;
    v1::SweepAblationResponse event;
    while (reader->Read(&event)) {
      switch (event.event_case()) {
        case v1::SweepAblationResponse::kProgress:
          if (on_progress) on_progress(event.progress().done());
          break;
        case v1::SweepAblationResponse::kBaseline:
          result.baseline = FromProto(event.baseline());
          has_baseline = true;
          break;
        case v1::SweepAblationResponse::kResult:
          result.masks.push_back(FromProto(event.result()));
          break;
        default:
          break;
      }
    }
    const grpc::Status status = reader->Finish();
    // The peer that served it (an L7 balancer hides the replica behind it).
    const std::string peer = context.peer();
    if (!peer.empty()) result.replica = peer;
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    if (!has_baseline ||
        result.masks.size() != static_cast<size_t>(request.masks_size())) {
      return absl::UnavailableError(absl::StrCat(
          "the stream ended OK without every result (baseline: ", has_baseline,
          ", ", result.masks.size(), " of ", request.masks_size(), " masks)"));
    }
    return result;
  }

 private:
  std::vector<ChannelTarget> targets_;
  std::vector<std::unique_ptr<v1::Bertology::Stub>> stubs_;
};

}  // namespace

std::unique_ptr<ShardExecutor> NewGrpcShardExecutor(
    const std::vector<ChannelTarget>& targets) {
  return std::make_unique<GrpcShardExecutor>(targets);
}

}  // namespace client
}  // namespace bertology
