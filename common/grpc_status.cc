#include "common/grpc_status.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace {
constexpr char kIdentityMismatch[] = "model identity mismatch: ";
}  // namespace

absl::Status ModelIdentityMismatchError(const std::string& model,
                                        const std::string& served,
                                        const std::string& expected) {
  return absl::FailedPreconditionError(
      absl::StrCat(kIdentityMismatch, "this replica serves model \"", model,
                   "\" as ", served, "; the sweep's is ", expected));
}

bool IsModelIdentityMismatch(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         absl::StartsWith(status.message(), kIdentityMismatch);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode both follow google.rpc.Code.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::string GrpcCodeName(grpc::StatusCode code) {
  if (code == grpc::StatusCode::OK) return "OK";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace bertology
