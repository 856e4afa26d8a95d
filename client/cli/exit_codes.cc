#include "client/cli/exit_codes.h"

#include <cstdio>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace bertology {
namespace client {
namespace {

constexpr char kExitCodeUrl[] = "bertology.dev/cli/exit_code";
constexpr char kQuietUrl[] = "bertology.dev/cli/quiet";

absl::Status WithCode(absl::Status status, ExitCode code) {
  status.SetPayload(kExitCodeUrl, absl::Cord(std::to_string(code)));
  return status;
}

}  // namespace

absl::Status CommandError(ExitCode code, const absl::Status& status) {
  if (status.ok()) {
    return WithCode(absl::UnknownError("CommandError of an OK status"), code);
  }
  return WithCode(status, code);
}

absl::Status QuietExit(ExitCode code) {
  absl::Status status = WithCode(absl::CancelledError("quiet exit"), code);
  status.SetPayload(kQuietUrl, absl::Cord("1"));
  return status;
}

ExitCode ExitCodeOf(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  const auto payload = status.GetPayload(kExitCodeUrl);
  int code = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &code)) {
    return kExitRpc;
  }
  return static_cast<ExitCode>(code);
}

int ReportExit(const std::string& command, const absl::Status& status) {
  if (!status.ok() && !status.GetPayload(kQuietUrl).has_value()) {
    const std::string message = status.message().empty()
                                    ? absl::StatusCodeToString(status.code())
                                    : std::string(status.message());
    std::fprintf(stderr, "bertology %s: %s\n", command.c_str(),
                 message.c_str());
  }
  return ExitCodeOf(status);
}

}  // namespace client
}  // namespace bertology
