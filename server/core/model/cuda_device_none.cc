// cuda_device.h for a libtorch without CUDA.
#include "absl/status/status.h"
#include "server/core/model/cuda_device.h"

namespace bertology {

bool CudaCompiledIn() { return false; }

absl::StatusOr<CudaMemory> QueryCudaMemory(int /*index*/) {
  return absl::UnimplementedError("this build's libtorch has no CUDA");
}

absl::StatusOr<int> CudaComputeCapability(int /*index*/) {
  return absl::UnimplementedError("this build's libtorch has no CUDA");
}

}  // namespace bertology
