// Host tensors onto the model's device without stalling the host.
//
// A copy from pageable host memory to CUDA waits until the device has
// caught up with the stream (cudaMemcpy semantics); from pinned memory it
// is queued on the current stream, before the kernels that read it, and
// the host goes on. The engine's per-batch inputs (ids, masks, fills,
// indices) are small, so pinning them costs less than the wait.
#ifndef BERTOLOGY_CORE_DEVICE_COPY_H_
#define BERTOLOGY_CORE_DEVICE_COPY_H_

#include <torch/types.h>

namespace bertology {

// `host` (a CPU tensor) on `device`: through pinned memory without blocking
// on CUDA (libtorch's caching host allocator keeps the pinned block until
// the copy has run), as it is on CPU.
torch::Tensor ToDevice(const torch::Tensor& host, const torch::Device& device);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_DEVICE_COPY_H_
