// What every subcommand shares: the --target/--model/--timeout flags and
// the channel they describe (gRPC status conversion: common/grpc_status.h).
#ifndef BERTOLOGY_CLIENT_CLI_CONNECTION_H_
#define BERTOLOGY_CLIENT_CLI_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "client/cli/args.h"
#include "client/cli/exit_codes.h"
#include "client/transport/channel_security.h"
#include "common/grpc_status.h"

namespace bertology {
namespace client {

// bertology-server's default --listen port.
inline constexpr char kDefaultTarget[] = "localhost:50051";

// --target, --model, --timeout and the security flags (--tls-ca,
// --tls-cert, --tls-key, --tls-server-name, --token-file).
std::vector<FlagSpec> ConnectionFlags();

// The security flags of `args`.
ChannelSecurity SecurityFromArgs(const Args& args);

// One channel for `target` (usually --target), secured as `args` say: a list
// ("ipv4:a:1,b:2" or "a:1,b:2") becomes a round_robin channel over it;
// "dns:///..." round_robin over DNS.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const Args& args, const std::string& target);

// A context with the --timeout deadline (default `def`) and the
// --token-file's bearer token.
absl::StatusOr<std::unique_ptr<grpc::ClientContext>> NewContext(
    const Args& args, absl::Duration def = absl::Seconds(60));

// MakeChannel on --target and a Bertology stub on it; a bad target or
// security flag comes back as kExitUsage (exit_codes.h).
absl::StatusOr<std::unique_ptr<v1::Bertology::Stub>> ConnectStub(
    const Args& args);

// NewContext, with a bad --timeout or --token-file as kExitUsage.
absl::StatusOr<std::unique_ptr<grpc::ClientContext>> CallContext(
    const Args& args, absl::Duration def = absl::Seconds(60));

// Reads a server stream of `progress` (SweepProgress) and `result` events
// (AnalyzeHeads, HeadImportance, CompareAttention, SegmentWords) to its
// end: each progress event as "<verb> done/total <unit>" on stderr unless
// `quiet`, and the one result. The stream's status, or INTERNAL when it
// ended without a result.
template <typename Event, typename Reader>
auto ReadResultStream(Reader* reader, bool quiet, const char* verb,
                      const char* unit)
    -> absl::StatusOr<std::decay_t<decltype(std::declval<Event>().result())>> {
  Event event;
  std::optional<std::decay_t<decltype(event.result())>> result;
  while (reader->Read(&event)) {
    if (event.has_progress()) {
      if (!quiet) {
        std::fprintf(stderr, "%s %lld/%lld %s\n", verb,
                     static_cast<long long>(event.progress().done()),
                     static_cast<long long>(event.progress().total()), unit);
      }
    } else if (event.has_result()) {
      result = event.result();
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return s;
  if (!result) return absl::InternalError("the server sent no result");
  return *std::move(result);
}

// One streaming call of `progress` and `result` events (AnalyzeHeads,
// HeadImportance, CompareAttention, SegmentWords): `start(context)` starts
// it on a context with --timeout (default one hour), ReadResultStream
// reads it; a bad --timeout or --token-file is kExitUsage, the call's
// errors kExitRpc.
template <typename Event, typename Start>
auto CallResultStream(const Args& args, Start start, const char* verb,
                      const char* unit)
    -> absl::StatusOr<std::decay_t<decltype(std::declval<Event>().result())>> {
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> context =
      CallContext(args, absl::Hours(1));
  if (!context.ok()) return context.status();
  auto reader = start(context->get());
  auto result =
      ReadResultStream<Event>(reader.get(), args.Has("quiet"), verb, unit);
  if (!result.ok()) return CommandError(kExitRpc, result.status());
  return result;
}

// The ModelInfo of --model (the default model when empty) and the limits.
struct ModelAndLimits {
  v1::ModelInfo model;
  v1::ServerLimits limits;
};
absl::StatusOr<ModelAndLimits> FetchModelInfo(v1::Bertology::Stub* stub,
                                              const Args& args);

// A stub on --target (ConnectStub) and FetchModelInfo's answer through it,
// the call's errors as kExitRpc.
struct ModelConnection {
  std::unique_ptr<v1::Bertology::Stub> stub;
  ModelAndLimits info;
};
absl::StatusOr<ModelConnection> ConnectToModel(const Args& args);

// For commands that send a whole dataset in one call (their results are
// means over it, so it cannot be merged from several): kExitUsage when
// `inputs` exceeds the server's max_examples_per_sweep.
absl::Status CheckOneCallLimit(int inputs, const v1::ServerLimits& limits);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_CONNECTION_H_
