#include "client/cli/connection.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "client/transport/targets.h"
#include "common/status_macros.h"

namespace bertology {
namespace client {

std::vector<FlagSpec> ConnectionFlags() {
  return {
      {"target", true,
       absl::StrCat("server: HOST:PORT, ipv4:A:P,B:P (round robin), "
                    "dns:///NAME:PORT (default ",
                    kDefaultTarget, ")"),
       "ADDR"},
      {"model", true, "model name (default: the server's default model)",
       "NAME"},
      {"timeout", true, "seconds per call (default 60)", "S"},
      {"tls-ca", true,
       "connect with TLS, trusting this PEM CA (default: plain text; with "
       "--tls-cert alone, the system's roots)",
       "FILE"},
      {"tls-cert", true,
       "PEM client certificate for mutual TLS (with "
       "--tls-key)",
       "FILE"},
      {"tls-key", true, "PEM private key of --tls-cert", "FILE"},
      {"tls-server-name", true,
       "name the server's certificate must carry, when not the target's host",
       "NAME"},
      {"token-file", true,
       "send the bearer token in FILE (its first word) with every call",
       "FILE"},
  };
}

ChannelSecurity SecurityFromArgs(const Args& args) {
  ChannelSecurity security;
  security.tls_ca = args.Get("tls-ca");
  security.tls_cert = args.Get("tls-cert");
  security.tls_key = args.Get("tls-key");
  security.tls_server_name = args.Get("tls-server-name");
  security.token_file = args.Get("token-file");
  return security;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const Args& args, const std::string& target) {
  const ChannelSecurity security = SecurityFromArgs(args);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(security);
  if (!credentials.ok()) return credentials.status();
  TargetOptions options;
  options.round_robin_list = true;
  absl::StatusOr<std::vector<ChannelTarget>> targets =
      ParseTargets(target, options);
  if (!targets.ok()) return targets.status();
  const ChannelTarget& t = targets->front();
  grpc::ChannelArguments channel_args;
  if (!t.lb_policy.empty()) {
    channel_args.SetLoadBalancingPolicyName(t.lb_policy);
  }
  channel_args.SetMaxReceiveMessageSize(-1);
  AddChannelSecurityArgs(security, &channel_args);
  return grpc::CreateCustomChannel(t.uri, *credentials, channel_args);
}

absl::StatusOr<std::unique_ptr<grpc::ClientContext>> NewContext(
    const Args& args, absl::Duration def) {
  absl::StatusOr<double> seconds =
      args.GetDouble("timeout", absl::ToDoubleSeconds(def));
  if (!seconds.ok()) return seconds.status();
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(*seconds * 1e6)));
  absl::Status token = AttachToken(SecurityFromArgs(args), context.get());
  if (!token.ok()) return token;
  return context;
}

absl::StatusOr<ModelAndLimits> FetchModelInfo(v1::Bertology::Stub* stub,
                                              const Args& args) {
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> context =
      NewContext(args);
  if (!context.ok()) return context.status();
  v1::GetModelInfoRequest request;
  request.set_model(args.Get("model"));
  v1::GetModelInfoResponse response;
  absl::Status s =
      FromGrpcStatus(stub->GetModelInfo(context->get(), request, &response));
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("GetModelInfo: ", s.message()));
  }
  for (const v1::ModelInfo& m : response.models()) {
    if (args.Get("model").empty() ? m.is_default()
                                  : m.name() == args.Get("model")) {
      return ModelAndLimits{m, response.limits()};
    }
  }
  if (response.models_size() == 1) {
    return ModelAndLimits{response.models(0), response.limits()};
  }
  return absl::NotFoundError(
      absl::StrCat("the server has no model '", args.Get("model"), "'"));
}

absl::StatusOr<std::unique_ptr<v1::Bertology::Stub>> ConnectStub(
    const Args& args) {
  auto channel = MakeChannel(args, args.Get("target", kDefaultTarget));
  if (!channel.ok()) return CommandError(kExitUsage, channel.status());
  return v1::Bertology::NewStub(*channel);
}

absl::StatusOr<std::unique_ptr<grpc::ClientContext>> CallContext(
    const Args& args, absl::Duration def) {
  auto context = NewContext(args, def);
  if (!context.ok()) return CommandError(kExitUsage, context.status());
  return context;
}

absl::StatusOr<ModelConnection> ConnectToModel(const Args& args) {
  ModelConnection out;
  ASSIGN_OR_RETURN(out.stub, ConnectStub(args));
  auto info = FetchModelInfo(out.stub.get(), args);
  if (!info.ok()) return CommandError(kExitRpc, info.status());
  out.info = *std::move(info);
  return out;
}

absl::Status CheckOneCallLimit(int inputs, const v1::ServerLimits& limits) {
  const int limit = limits.max_examples_per_sweep();
  if (limit <= 0 || inputs <= limit) return absl::OkStatus();
  return CommandError(kExitUsage,
                      absl::InvalidArgumentError(absl::StrCat(
                          "the data has ", inputs,
                          " inputs, over the server's max_examples_per_sweep=",
                          limit, " (use --limit)")));
}

}  // namespace client
}  // namespace bertology
