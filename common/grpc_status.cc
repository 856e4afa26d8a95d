#include "common/grpc_status.h"

#include <string>

#include "absl/status/status.h"

namespace bertology {

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
