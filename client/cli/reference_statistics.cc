#include "client/cli/reference_statistics.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"

namespace bertology {
namespace client {

absl::StatusOr<v1::ComputeHeadStatisticsResponse> ComputeStatistics(
    v1::Bertology::Stub* stub, const Args& args,
    const std::vector<v1::TextInput>& inputs) {
  v1::ComputeHeadStatisticsRequest request;
  request.set_model(args.Get("model"));
  for (const v1::TextInput& input : inputs) *request.add_inputs() = input;
  auto context = NewContext(args, absl::Minutes(10));
  if (!context.ok()) return context.status();
  v1::ComputeHeadStatisticsResponse response;
  absl::Status s = FromGrpcStatus(
      stub->ComputeHeadStatistics(context->get(), request, &response));
  if (!s.ok()) return s;
  return response;
}

std::string StatisticsLine(const v1::ReferenceStatistics& statistics) {
  std::string line =
      absl::StrCat(statistics.id(), ": ", statistics.examples(), " examples, ",
                   statistics.tokens(), " tokens");
  if (statistics.truncated_examples() > 0) {
    absl::StrAppend(&line, " (", statistics.truncated_examples(),
                    " truncated)");
  }
  return line;
}

absl::Status ResolveMaskStatistics(v1::Bertology::Stub* stub, const Args& args,
                                   bool column_flags, std::string* statistics) {
  if (!args.Has("reference")) return absl::OkStatus();
  absl::StatusOr<std::vector<v1::TextInput>> inputs =
      LoadTextInputs(args.Get("reference"), args, column_flags);
  if (!inputs.ok()) {
    return CommandError(
        absl::IsInvalidArgument(inputs.status()) ? kExitUsage : kExitData,
        inputs.status());
  }
  absl::StatusOr<v1::ComputeHeadStatisticsResponse> response =
      ComputeStatistics(stub, args, *inputs);
  if (!response.ok()) return CommandError(kExitRpc, response.status());
  *statistics = response->statistics().id();
  std::fprintf(stderr, "reference statistics %s\n",
               StatisticsLine(response->statistics()).c_str());
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
