// What every subcommand shares: the --target/--model/--timeout flags and
// the channel they describe (gRPC status conversion: common/grpc_status.h).
#ifndef BERTOLOGY_CLIENT_CLI_CONNECTION_H_
#define BERTOLOGY_CLIENT_CLI_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "client/cli/args.h"
#include "common/grpc_status.h"

namespace bertology {
namespace client {

// bertology-server's default --listen port.
inline constexpr char kDefaultTarget[] = "localhost:50051";

// --target, --model, --timeout.
std::vector<FlagSpec> ConnectionFlags();

// One channel for --target: a list ("ipv4:a:1,b:2" or "a:1,b:2") becomes a
// round_robin channel over it; "dns:///..." round_robin over DNS.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& target);

// A context with the --timeout deadline (default `def`).
absl::StatusOr<std::unique_ptr<grpc::ClientContext>> NewContext(
    const Args& args, absl::Duration def = absl::Seconds(60));

// The ModelInfo of --model (the default model when empty) and the limits.
struct ModelAndLimits {
  v1::ModelInfo model;
  v1::ServerLimits limits;
};
absl::StatusOr<ModelAndLimits> FetchModelInfo(v1::Bertology::Stub* stub,
                                              const Args& args);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_CONNECTION_H_
