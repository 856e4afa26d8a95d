// `bertology health`: the standard gRPC health check, for scripts and
// readiness probes.
#include <cstdio>

#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "common/status_macros.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace bertology {
namespace client {

absl::Status RunHealth(const Argv& argv) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"service", true,
                   "service name to check (default \"\": the server)", "S"});
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs("Usage: bertology health [--target=ADDR]\n"
                       "Prints SERVING (exit 0) or NOT_SERVING/UNKNOWN "
                       "(exit 4); exit 1 when unreachable.",
                       flags, argv));
  auto channel = MakeChannel(args, args.Get("target", kDefaultTarget));
  if (!channel.ok()) return CommandError(kExitUsage, channel.status());
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args, absl::Seconds(5)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(args.Get("service"));
  grpc::health::v1::HealthCheckResponse response;
  absl::Status s =
      FromGrpcStatus(stub->Check(context.get(), request, &response));
  if (!s.ok()) return CommandError(kExitRpc, s);
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                          response.status())
                          .c_str());
  // The status line said it: no message beside it.
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? absl::OkStatus()
             : QuietExit(kExitUnhealthy);
}

}  // namespace client
}  // namespace bertology
