// The tensors of reference statistics (head_reference.h), for the core only:
// what kMean, kMeanByRole and kResample rows take a head's output from
// (head_mask_tensors.h reads them).
#ifndef BERTOLOGY_CORE_REFERENCE_TENSORS_H_
#define BERTOLOGY_CORE_REFERENCE_TENSORS_H_

#include <torch/types.h>

#include "server/core/model/head_reference.h"

namespace bertology {

// Compute dtype, on the model's device. d = head size. Immutable once made.
struct ReferenceTensors {
  torch::Tensor mean;        // [L, H, d]
  torch::Tensor role_means;  // [kNumTokenRoles, L, H, d]; zero where no token
  // [tokens, L, H, d], example e's real tokens at rows [offsets[e],
  // offsets[e + 1]) (HeadReference::offsets); undefined when over the
  // budget (HeadReference::token_output_bytes says what they would take).
  torch::Tensor token_outputs;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_REFERENCE_TENSORS_H_
