// `bertology statistics`: ComputeHeadStatistics over a reference file, so
// later mean/resample runs can pass the id (--statistics) instead of the
// inputs.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/reference_statistics.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

namespace {

constexpr char kUsage[] =
    "Usage: bertology statistics --reference=FILE [--model=M] "
    "[--text-a=COL] [--text-b=COL] [--json]\n"
    "Computes every head's mean output over the reference inputs on "
    "the unmasked\nmodel (ComputeHeadStatistics) and prints the id "
    "(first line), examples and\ntokens. Pass the id as --statistics=ID "
    "with --mode=mean or resample; the\nserver keeps it (bertology info "
    "lists them), and the same model and inputs\ngive the same id on "
    "every replica.";

std::vector<FlagSpec> StatisticsFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"reference", true,
                   "the reference inputs (.tsv, .csv, .jsonl; labels ignored)",
                   "FILE"});
  // The layout flags of --data, for the reference file.
  for (FlagSpec& f : DatasetFlags()) {
    if (f.name == "format" || f.name == "header" || f.name == "text-a" ||
        f.name == "text-b") {
      flags.push_back(f);
    }
  }
  flags.push_back({"json", false, "JSON instead of lines"});
  return flags;
}

// --reference's inputs: kExitUsage for a bad flag, kExitData for the file.
absl::StatusOr<std::vector<v1::TextInput>> ReadReference(const Args& args) {
  if (!args.Has("reference")) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("--reference is required"));
  }
  auto inputs =
      LoadTextInputs(args.Get("reference"), args, /*column_flags=*/true);
  if (!inputs.ok()) {
    return CommandError(
        absl::IsInvalidArgument(inputs.status()) ? kExitUsage : kExitData,
        inputs.status());
  }
  return inputs;
}

// The id on the first line, then the counts; or JSON.
CommandOutput StatisticsOutput(
    bool json, const v1::ComputeHeadStatisticsResponse& response) {
  const v1::ReferenceStatistics& s = response.statistics();
  CommandOutput out;
  if (json) {
    out.stdout_text =
        nlohmann::json{{"model", response.model()},
                       {"id", s.id()},
                       {"examples", s.examples()},
                       {"tokens", s.tokens()},
                       {"truncated_examples", s.truncated_examples()},
                       {"already_held", response.already_held()}}
            .dump(2) +
        "\n";
    return out;
  }
  out.stdout_text = absl::StrFormat(
      "%s\nmodel\t%s\nexamples\t%d\ntokens\t%lld\n"
      "truncated_examples\t%d\nalready_held\t%s\n",
      s.id(), response.model(), s.examples(),
      static_cast<long long>(s.tokens()), s.truncated_examples(),
      response.already_held() ? "true" : "false");
  return out;
}

}  // namespace

absl::Status RunStatistics(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args,
                   ParseCommandArgs(kUsage, StatisticsFlags(), argv));
  ASSIGN_OR_RETURN(const std::vector<v1::TextInput> inputs,
                   ReadReference(args));
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  auto response = ComputeStatistics(stub.get(), args, inputs);
  if (!response.ok()) return CommandError(kExitRpc, response.status());
  return EmitOutput(StatisticsOutput(args.Has("json"), *response));
}

}  // namespace client
}  // namespace bertology
