// `bertology health`: the standard gRPC health check, for scripts and
// readiness probes.
#include <cstdio>

#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace bertology {
namespace client {

int RunHealth(const Argv& argv) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"service", true,
                   "service name to check (default \"\": the server)", "S"});
  Args args;
  int exit = 0;
  if (!ParseCommandArgs("health",
                        "Usage: bertology health [--target=ADDR]\n"
                        "Prints SERVING (exit 0) or NOT_SERVING/UNKNOWN "
                        "(exit 4); exit 1 when unreachable.",
                        flags, argv, &args, &exit)) {
    return exit;
  }
  auto channel = MakeChannel(args, args.Get("target", kDefaultTarget));
  if (!channel.ok()) return Fail("health", kExitUsage, channel.status());
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  auto context = NewContext(args, absl::Seconds(5));
  if (!context.ok()) return Fail("health", kExitUsage, context.status());
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(args.Get("service"));
  grpc::health::v1::HealthCheckResponse response;
  absl::Status s =
      FromGrpcStatus(stub->Check(context->get(), request, &response));
  if (!s.ok()) return Fail("health", kExitRpc, s);
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                          response.status())
                          .c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? kExitOk
             : kExitUnhealthy;
}

}  // namespace client
}  // namespace bertology
