// Activation patching at the tensor level: per batch row, sites whose
// activation is replaced by a source run's (server/core/patch/ builds these
// and scores them). Read by BertForSequenceClassificationImpl::Run.
#ifndef BERTOLOGY_CORE_ACTIVATION_PATCH_H_
#define BERTOLOGY_CORE_ACTIVATION_PATCH_H_

#include <torch/types.h>

#include <vector>

#include "server/core/model/patch_site.h"

namespace bertology {

// The source run's activations: one input, T positions, compute dtype, on
// the model's device (a batch of one's capture_head_outputs and
// capture_hidden, squeezed).
struct ActivationPatch {
  // Per batch row, the sites patched together in that row (may be empty).
  std::vector<std::vector<PatchSite>> row_sites;
  torch::Tensor head_outputs;  // [L, T, D]: layer l's per-head outputs
  torch::Tensor layer_inputs;  // [L + 1, T, D]: layer l's input hidden state
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ACTIVATION_PATCH_H_
