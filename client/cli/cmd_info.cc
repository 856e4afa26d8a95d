// `bertology info`: GetModelInfo as indented JSON.
#include <cstdio>

#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

namespace {

constexpr char kUsage[] =
    "Usage: bertology info [--target=ADDR] [--model=NAME]\n"
    "Prints the served models and the server limits as "
    "JSON.";

// GetModelInfo's answer as indented JSON.
std::string InfoJson(const v1::GetModelInfoResponse& response) {
  nlohmann::json models = nlohmann::json::array();
  for (const v1::ModelInfo& m : response.models()) {
    // The ids `--statistics` takes for mean/resample ablation.
    nlohmann::json statistics = nlohmann::json::array();
    for (const v1::ReferenceStatistics& s : m.statistics()) {
      statistics.push_back({{"id", s.id()},
                            {"examples", s.examples()},
                            {"tokens", s.tokens()},
                            {"truncated_examples", s.truncated_examples()}});
    }
    models.push_back(
        {{"name", m.name()},
         {"default", m.is_default()},
         {"architecture", m.architecture()},
         {"head", v1::ModelHead_Name(m.head())},
         {"served_rpcs", std::vector<std::string>(m.served_rpcs().begin(),
                                                  m.served_rpcs().end())},
         {"identity", m.identity()},
         {"layers", m.num_layers()},
         {"heads", m.num_heads()},
         {"hidden_size", m.hidden_size()},
         {"max_seq_len", m.max_seq_len()},
         {"vocab_size", m.vocab_size()},
         {"labels", std::vector<std::string>(m.label_names().begin(),
                                             m.label_names().end())},
         {"dtype", m.dtype()},
         {"device", m.device()},
         {"statistics", statistics}});
  }
  const v1::ServerLimits& l = response.limits();
  nlohmann::json out{{"models", models},
                     {"limits",
                      {{"max_inputs_per_call", l.max_inputs_per_call()},
                       {"max_examples_per_sweep", l.max_examples_per_sweep()},
                       {"max_masks_per_sweep", l.max_masks_per_sweep()},
                       {"max_text_bytes", l.max_text_bytes()},
                       {"max_message_bytes", l.max_message_bytes()},
                       {"max_batch_size", l.max_batch_size()}}}};
  return out.dump(2) + "\n";
}

}  // namespace

absl::Status RunInfo(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args,
                   ParseCommandArgs(kUsage, ConnectionFlags(), argv));
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args));
  v1::GetModelInfoRequest request;
  request.set_model(args.Get("model"));
  v1::GetModelInfoResponse response;
  absl::Status s =
      FromGrpcStatus(stub->GetModelInfo(context.get(), request, &response));
  if (!s.ok()) return CommandError(kExitRpc, s);
  CommandOutput out;
  out.stdout_text = InfoJson(response);
  return EmitOutput(out);
}

}  // namespace client
}  // namespace bertology
