// The one place where absl::Status and grpc::Status become each other: the
// service's handlers return absl::Status and its boundary converts with
// ToGrpcStatus(); clients (the CLI, the scheduler, tests) turn call results
// back with FromGrpcStatus().
#ifndef BERTOLOGY_COMMON_GRPC_STATUS_H_
#define BERTOLOGY_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace bertology {

// Same code (absl and gRPC share the canonical code numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The same code and message as an absl::Status.
absl::Status FromGrpcStatus(const grpc::Status& status);

// The canonical name of a gRPC code, e.g. "INVALID_ARGUMENT" (metric label).
std::string GrpcCodeName(grpc::StatusCode code);

// A replica's answer to a sweep shard sent for another model than it
// serves (SweepAblationRequest.model_identity): FAILED_PRECONDITION with a
// message the scheduler recognises, so it refuses that replica by address
// and sends the shard elsewhere instead of failing the sweep.
absl::Status ModelIdentityMismatchError(const std::string& model,
                                        const std::string& served,
                                        const std::string& expected);
bool IsModelIdentityMismatch(const absl::Status& status);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_GRPC_STATUS_H_
