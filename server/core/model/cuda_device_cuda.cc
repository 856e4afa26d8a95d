// cuda_device.h for a CUDA libtorch: the CUDA runtime's answers, plus what
// libtorch's caching allocator holds unused.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/core/model/cuda_device.h"

namespace bertology {
namespace {

absl::Status CudaError(const char* what, int index, cudaError_t error) {
  return absl::InternalError(
      absl::StrCat(what, " on cuda:", index, ": ", cudaGetErrorString(error)));
}

absl::Status CheckIndex(int index) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return CudaError("cudaGetDeviceCount", 0, error);
  if (index < 0 || index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda:", index, " out of range: ", count, " device(s)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool CudaCompiledIn() { return true; }

absl::StatusOr<CudaMemory> QueryCudaMemory(int index) {
  if (absl::Status s = CheckIndex(index); !s.ok()) return s;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  size_t free = 0, total = 0;
  const cudaError_t error = cudaMemGetInfo(&free, &total);
  if (error != cudaSuccess) return CudaError("cudaMemGetInfo", index, error);
  // Reserved by the caching allocator but holding no tensor: the driver
  // counts it as used, yet the next batch gets it first. Stat index 0 is
  // the aggregate over pool kinds (StatType::AGGREGATE).
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
      static_cast<c10::DeviceIndex>(index));
  const int64_t cached =
      stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
  CudaMemory out;
  out.free_bytes = static_cast<int64_t>(free) + std::max<int64_t>(0, cached);
  out.total_bytes = static_cast<int64_t>(total);
  return out;
}

absl::StatusOr<int> CudaComputeCapability(int index) {
  if (absl::Status s = CheckIndex(index); !s.ok()) return s;
  cudaDeviceProp prop;
  const cudaError_t error = cudaGetDeviceProperties(&prop, index);
  if (error != cudaSuccess) {
    return CudaError("cudaGetDeviceProperties", index, error);
  }
  return prop.major * 10 + prop.minor;
}

}  // namespace bertology
