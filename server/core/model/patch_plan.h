// An ActivationPatch (activation_patch.h) as per-layer tensors for one
// pass: where each layer's rows take the source run's values. Built by
// BertForSequenceClassificationImpl::Run; core only.
#ifndef BERTOLOGY_CORE_PATCH_PLAN_H_
#define BERTOLOGY_CORE_PATCH_PLAN_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "server/core/model/activation_patch.h"
#include "server/core/model/head_mask_tensors.h"

namespace bertology {

class PatchPlan {
 public:
  // Nothing patched.
  PatchPlan() = default;
  // `patch`'s sites for a batch of `rows` x `t` positions of a model of
  // `layers` x `heads` heads of `head_size`. c10::Error for a site out of
  // range or a site list per row missing.
  PatchPlan(const ActivationPatch& patch, int64_t rows, int64_t t, int layers,
            int heads, int head_size);

  // True when layer `l`'s input (l = L: the encoder output) is patched.
  bool Touches(int l) const {
    return l < static_cast<int>(residual_.size()) &&
           residual_[l].where.defined();
  }
  // `hidden` [B, Q, D] with layer `l`'s patched positions replaced (Q = 1
  // after a [CLS]-only last layer).
  torch::Tensor PatchResidual(int l, const torch::Tensor& hidden) const;
  // Sets `mask`'s patch_where / patch_values for layer `l`'s heads.
  void PatchHeads(int l, LayerMask* mask) const;

 private:
  struct Where {
    torch::Tensor where, values;
  };
  std::vector<Where> residual_, head_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PATCH_PLAN_H_
