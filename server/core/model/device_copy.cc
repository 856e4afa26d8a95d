#include "server/core/model/device_copy.h"

#include <torch/torch.h>

namespace bertology {

torch::Tensor ToDevice(const torch::Tensor& host, const torch::Device& device) {
  if (!device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace bertology
