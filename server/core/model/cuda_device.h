// What the engine asks of a CUDA device beyond libtorch's portable API: its
// free memory (to size batches) and its compute capability (to choose
// BF16). Built from cuda_device_cuda.cc where the libtorch found has CUDA,
// else from cuda_device_none.cc, which answers UNIMPLEMENTED: the rest of
// the core calls these only for a CUDA device, which a CPU-only libtorch
// never has.
//
// Thread-safe.
#ifndef BERTOLOGY_CORE_CUDA_DEVICE_H_
#define BERTOLOGY_CORE_CUDA_DEVICE_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace bertology {

struct CudaMemory {
  // Bytes the driver reports free plus those libtorch's caching allocator
  // holds without a tensor in them (free to this process, not to others).
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

// True when this build links a CUDA libtorch (cuda_device_cuda.cc).
bool CudaCompiledIn();

// Device `index`'s memory now. UNIMPLEMENTED without CUDA.
absl::StatusOr<CudaMemory> QueryCudaMemory(int index);

// Device `index`'s compute capability as major * 10 + minor (e.g. 90 for
// an H100). UNIMPLEMENTED without CUDA.
absl::StatusOr<int> CudaComputeCapability(int index);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_CUDA_DEVICE_H_
