// `bertology statistics`: ComputeHeadStatistics over a reference file, so
// later mean/resample runs can pass the id (--statistics) instead of the
// inputs.
#include <cstdio>
#include <string>
#include <vector>

#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/reference_statistics.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

absl::Status RunStatistics(const Argv& argv) {
  constexpr char kCommand[] = "statistics";
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
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs(
          "Usage: bertology statistics --reference=FILE [--model=M] "
          "[--text-a=COL] [--text-b=COL] [--json]\n"
          "Computes every head's mean output over the reference inputs on "
          "the unmasked\nmodel (ComputeHeadStatistics) and prints the id "
          "(first line), examples and\ntokens. Pass the id as --statistics=ID "
          "with --mode=mean or resample; the\nserver keeps it (bertology info "
          "lists them), and the same model and inputs\ngive the same id on "
          "every replica.",
          flags, argv));
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
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  auto response = ComputeStatistics(stub.get(), args, *inputs);
  if (!response.ok()) return CommandError(kExitRpc, response.status());
  const v1::ReferenceStatistics& s = response->statistics();
  if (args.Has("json")) {
    nlohmann::json out{{"model", response->model()},
                       {"id", s.id()},
                       {"examples", s.examples()},
                       {"tokens", s.tokens()},
                       {"truncated_examples", s.truncated_examples()},
                       {"already_held", response->already_held()}};
    std::printf("%s\n", out.dump(2).c_str());
    return absl::OkStatus();
  }
  std::printf(
      "%s\nmodel\t%s\nexamples\t%d\ntokens\t%lld\n"
      "truncated_examples\t%d\nalready_held\t%s\n",
      s.id().c_str(), response->model().c_str(), s.examples(),
      static_cast<long long>(s.tokens()), s.truncated_examples(),
      response->already_held() ? "true" : "false");
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
