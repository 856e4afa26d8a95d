// The gRPC ShardExecutor: a channel per replica (per address of a list or of
// a resolved DNS name), a streaming SweepAblation call per shard attempt.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "client/scheduler/shard_executor.h"
#include "client/transport/replica_resolver.h"
#include "common/grpc_status.h"

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
  c.scored = r.scored();
  c.correct = r.correct();
  c.loss_sum = r.loss_sum();
  c.draws = std::max(1, r.draws());
  c.draw_correct.assign(r.draw_correct().begin(), r.draw_correct().end());
  const v1::PairedSums& p = r.paired();
  c.paired = PairedSums{p.clusters(), p.units(),   p.units_sq(),
                        p.diff(),     p.diff_sq(), p.units_diff()};
  return c;
}

std::shared_ptr<grpc::Channel> NewChannel(
    const ChannelTarget& t, const ChannelSecurity& security,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  AddChannelSecurityArgs(security, &args);
  if (!t.lb_policy.empty()) args.SetLoadBalancingPolicyName(t.lb_policy);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Reconnect to a restarted replica within a second or two.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return grpc::CreateCustomChannel(t.uri, credentials, args);
}

class GrpcShardExecutor : public ShardExecutor {
 public:
  GrpcShardExecutor(const std::vector<ChannelTarget>& targets,
                    const GrpcExecutorOptions& options)
      : resolver_(targets, options.resolve_interval, options.clock),
        security_(options.security),
        credentials_(ChannelCredentialsFor(security_)) {}

  absl::StatusOr<std::vector<int>> Channels() override {
    if (!credentials_.ok()) return credentials_.status();
    absl::StatusOr<std::vector<ChannelTarget>> now = resolver_.Current();
    if (!now.ok()) return now.status();
    absl::MutexLock lock(&mu_);
    std::vector<int> ids;
    for (const ChannelTarget& t : *now) {
      auto it = by_uri_.find(t.uri);
      if (it == by_uri_.end()) {
        Entry e;
        e.target = t;
        e.stub =
            v1::Bertology::NewStub(NewChannel(t, security_, *credentials_));
        entries_.push_back(std::move(e));
        it =
            by_uri_.emplace(t.uri, static_cast<int>(entries_.size()) - 1).first;
      }
      ids.push_back(it->second);
    }
    return ids;
  }

  std::string channel_name(int c) const override {
    absl::MutexLock lock(&mu_);
    return entries_[c].target.uri;
  }
  int backends(int c) const override {
    absl::MutexLock lock(&mu_);
    return entries_[c].target.backends;
  }

  ShardAttempt Run(int channel, const v1::SweepAblationRequest& request,
                   absl::Duration timeout,
                   const ShardProgressFn& on_progress) override {
    v1::Bertology::Stub* stub;
    ShardAttempt attempt;
    {
      absl::MutexLock lock(&mu_);
      stub = entries_[channel].stub.get();  // entries_ only grows
      attempt.result.replica = entries_[channel].target.uri;
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMicroseconds(timeout));
    // Read per attempt, so a token rotated during a long sweep is picked up.
    attempt.status = AttachToken(security_, &context);
    if (!attempt.status.ok()) return attempt;
    auto reader = stub->SweepAblation(&context, request);
    v1::SweepAblationResponse event;
    while (reader->Read(&event)) {
      switch (event.event_case()) {
        case v1::SweepAblationResponse::kProgress:
          if (on_progress) on_progress(event.progress().done());
          break;
        case v1::SweepAblationResponse::kBaseline:
          attempt.result.baseline = FromProto(event.baseline());
          attempt.has_baseline = true;
          break;
        case v1::SweepAblationResponse::kResult:
          attempt.result.masks.push_back(FromProto(event.result()));
          break;
        default:
          break;
      }
    }
    const grpc::Status status = reader->Finish();
    // The peer that served it (an L7 balancer hides the replica behind it).
    const std::string peer = context.peer();
    if (!peer.empty()) attempt.result.replica = peer;
    if (!status.ok()) {
      attempt.status = FromGrpcStatus(status);
    } else if (!attempt.has_baseline ||
               attempt.result.masks.size() !=
                   static_cast<size_t>(request.masks_size())) {
      attempt.status = absl::UnavailableError(
          absl::StrCat("the stream ended OK without every result (baseline: ",
                       attempt.has_baseline, ", ", attempt.result.masks.size(),
                       " of ", request.masks_size(), " masks)"));
    }
    return attempt;
  }

 private:
  struct Entry {
    ChannelTarget target;
    std::unique_ptr<v1::Bertology::Stub> stub;
  };
  ReplicaResolver resolver_;
  const ChannelSecurity security_;
  const absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials_;
  mutable absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> by_uri_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<ShardExecutor> NewGrpcShardExecutor(
    const std::vector<ChannelTarget>& targets,
    const GrpcExecutorOptions& options) {
  return std::make_unique<GrpcShardExecutor>(targets, options);
}

}  // namespace client
}  // namespace bertology
