// The one place where absl::Status becomes grpc::Status. Handlers return
// absl::Status; the service boundary converts with ToGrpcStatus().
#ifndef BERTOLOGY_SERVICE_GRPC_STATUS_H_
#define BERTOLOGY_SERVICE_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace bertology {

// Same code (absl and gRPC share the canonical code numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The canonical name of a gRPC code, e.g. "INVALID_ARGUMENT" (metric label).
std::string GrpcCodeName(grpc::StatusCode code);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_GRPC_STATUS_H_
