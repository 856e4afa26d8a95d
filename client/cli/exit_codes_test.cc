#include "client/cli/exit_codes.h"

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

absl::StatusOr<int> Inner(bool fail) {
  if (fail) {
    return CommandError(kExitData, absl::NotFoundError("no such file"));
  }
  return 7;
}

absl::Status Outer(bool fail) {
  ASSIGN_OR_RETURN(int v, Inner(fail));
  return v == 7 ? absl::OkStatus() : absl::InternalError("?");
}

TEST(ExitCodesTest, TheCodeTravelsThroughStatusOrAndMacros) {
  EXPECT_EQ(ExitCodeOf(Outer(false)), kExitOk);
  const absl::Status s = Outer(true);
  EXPECT_EQ(ExitCodeOf(s), kExitData);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no such file");
}

TEST(ExitCodesTest, UntaggedErrorsAreRpcErrors) {
  EXPECT_EQ(ExitCodeOf(absl::UnavailableError("connection refused")), kExitRpc);
  EXPECT_EQ(ReportExit("info", absl::UnavailableError("x")), kExitRpc);
}

TEST(ExitCodesTest, QuietExitsKeepTheirCode) {
  EXPECT_EQ(ReportExit("health", QuietExit(kExitUnhealthy)), kExitUnhealthy);
  EXPECT_EQ(ReportExit("sweep", QuietExit(kExitOk)), kExitOk);
  EXPECT_EQ(ReportExit("sweep", absl::OkStatus()), kExitOk);
}

TEST(ExitCodesTest, AnOkStatusIsNeverAnError) {
  const absl::Status s = CommandError(kExitUsage, absl::OkStatus());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeOf(s), kExitUsage);
}

}  // namespace
}  // namespace client
}  // namespace bertology
