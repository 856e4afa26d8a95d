#include "server/core/model/patch_plan.h"

#include <torch/torch.h>

#include <utility>

#include "server/core/model/device_copy.h"

namespace bertology {

PatchPlan::PatchPlan(const ActivationPatch& patch, int64_t rows, int64_t t,
                     int layers, int heads, int head_size) {
  TORCH_CHECK(static_cast<int64_t>(patch.row_sites.size()) == rows,
              "activation patch: one site list per row");
  const torch::Device device = patch.layer_inputs.device();
  residual_.resize(layers + 1);
  head_.resize(layers);
  std::vector<torch::Tensor> residual_bits(layers + 1), head_bits(layers);
  auto position_range = [&](int p) {
    TORCH_CHECK(p >= -1 && p < t, "patch position ", p, " out of range [0, ", t,
                ")");
    return p < 0 ? std::pair<int64_t, int64_t>(0, t)
                 : std::pair<int64_t, int64_t>(p, p + 1);
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (const PatchSite& site : patch.row_sites[r]) {
      const auto [p0, p1] = position_range(site.position);
      if (site.kind == PatchSite::Kind::kResidual) {
        TORCH_CHECK(site.layer >= 0 && site.layer <= layers,
                    "patch layer out of range");
        torch::Tensor& bits = residual_bits[site.layer];
        if (!bits.defined()) bits = torch::zeros({rows, t, 1}, torch::kBool);
        bits[r].narrow(0, p0, p1 - p0).fill_(true);
      } else {
        TORCH_CHECK(site.layer >= 0 && site.layer < layers && site.head >= 0 &&
                        site.head < heads,
                    "patch head out of range");
        torch::Tensor& bits = head_bits[site.layer];
        if (!bits.defined()) {
          bits = torch::zeros({rows, heads, t, 1}, torch::kBool);
        }
        bits[r][site.head].narrow(0, p0, p1 - p0).fill_(true);
      }
    }
  }
  for (int l = 0; l <= layers; ++l) {
    if (!residual_bits[l].defined()) continue;
    residual_[l] = {ToDevice(residual_bits[l], device),
                    patch.layer_inputs[l].unsqueeze(0)};  // [1, T, D]
  }
  for (int l = 0; l < layers; ++l) {
    if (!head_bits[l].defined()) continue;
    // [T, D] -> [1, H, T, d]
    head_[l] = {ToDevice(head_bits[l], device), patch.head_outputs[l]
                                                    .view({t, heads, head_size})
                                                    .permute({1, 0, 2})
                                                    .unsqueeze(0)};
  }
}

torch::Tensor PatchPlan::PatchResidual(int l,
                                       const torch::Tensor& hidden) const {
  if (!Touches(l)) return hidden;
  const int64_t q = hidden.size(1);  // 1 after a [CLS]-only last layer
  return torch::where(residual_[l].where.narrow(1, 0, q),
                      residual_[l].values.narrow(1, 0, q), hidden);
}

void PatchPlan::PatchHeads(int l, LayerMask* mask) const {
  if (l >= static_cast<int>(head_.size()) || !head_[l].where.defined()) {
    return;
  }
  mask->patch_where = head_[l].where;
  mask->patch_values = head_[l].values;
}

}  // namespace bertology
