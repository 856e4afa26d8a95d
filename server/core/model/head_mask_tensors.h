// A request's head masks as tensors, and every formula that applies them:
// the one place where an AblationMode (common/head_mask.h) becomes numbers.
//
//   HeadMask (per row, host)  --MakeBatchHeadMask-->  BatchHeadMask [B, L, H]
//   HeadMaskTensor (autograd) --TensorHeadMask----->  BatchHeadMask
//   BatchHeadMask.ForLayer(l) -> LayerMask [B, H]    (bert_model.cc, per layer)
//   LayerMask + AblationFills -> ApplyHeadMask (probabilities),
//                                MaskFusedOutputs (fused kernel's outputs),
//                                ApplyOutputFill (reference outputs),
//                                MaskHeadOutputs (cached outputs)
//
// A new AblationMode is its enum value plus its case in MakeAblationFills
// (a probability target) or in MakeBatchHeadMask (an output fill).
//
// Core only (libtorch). Tensors are on the model's device in the compute
// dtype unless said otherwise. Throws c10::Error on what the Engine should
// have refused first.
#ifndef BERTOLOGY_CORE_HEAD_MASK_TENSORS_H_
#define BERTOLOGY_CORE_HEAD_MASK_TENSORS_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/head_mask.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/packed_tokens.h"

namespace bertology {

// What ablated heads' probabilities move to, for the rows of one mode other
// than kZero (kUniform: uniform over the row's real tokens).
struct AblationFill {
  AblationMode mode;
  torch::Tensor rows;    // [B, 1, 1, 1]: 1 for the rows in `mode`, else 0
  torch::Tensor target;  // broadcastable to [B, H, Q, T]; rows sum to 1
};

// The fills for a batch whose row r runs in `row_modes[r]`, one per mode
// with a probability target, in enum order. `attention_mask` is
// [B, 1, 1, T] in the compute dtype, 1 = real token.
std::vector<AblationFill> MakeAblationFills(
    const std::vector<AblationMode>& row_modes,
    const torch::Tensor& attention_mask);

// What a request changes in one layer, for the batch. Every member may be
// undefined (nothing changed there).
struct LayerMask {
  // [B, H] mask values in [0, 1]; undefined: all heads kept (the
  // probabilities are then untouched).
  torch::Tensor values;
  // [B, H, 1, d], or [B, H, T, d] per position: what ablated heads'
  // outputs move to in kMean / kMeanByRole / kResample (zero for rows in
  // other modes): o' = o + (1 - m) * output_fill, with o computed from the
  // m-scaled probabilities. Needs `values`.
  torch::Tensor output_fill;
  // output_fill is [B, H, T, d] (a value per position).
  bool positional_fill = false;
  // Activation patching (activation_patch.h): where `patch_where` (bool
  // [B, H, T, 1]) is true the head output is replaced by `patch_values`
  // ([1, H, T, d]), exactly.
  torch::Tensor patch_where;
  torch::Tensor patch_values;
};

// Post-softmax probabilities `probs` [B, H, Q, T] under `mask`:
//   p' = m * p + sum over fills f of f.rows * (1 - m) * f.target,
// i.e. m * p in zero mode and m * p + (1 - m) * u in uniform mode.
torch::Tensor ApplyHeadMask(const torch::Tensor& probs, const LayerMask& mask,
                            const std::vector<AblationFill>& fills);

// The fused kernel's unmasked outputs `out` [B, H, Q, d] (no probabilities
// exist) under `mask`, `v` [B, H, T, d] the values:
//   zero:    o' = m * o
//   uniform: o' = m * o + (1 - m) * (u @ V)
// Equal to ApplyHeadMask(p) @ V by linearity; rounds differently.
torch::Tensor MaskFusedOutputs(const torch::Tensor& out, const torch::Tensor& v,
                               const LayerMask& mask,
                               const std::vector<AblationFill>& fills);

// kMean / kMeanByRole / kResample: o' = m * o + (1 - m) * fill on the heads'
// outputs `out` [B, H, Q, d], whose m * o part came from the m-scaled
// probabilities (or MaskFusedOutputs); a positional fill is cut to the
// first `query_rows` positions. Unchanged without an output fill.
torch::Tensor ApplyOutputFill(const torch::Tensor& out, const LayerMask& mask,
                              int64_t query_rows);

// Unmasked heads' outputs `outputs` (a layer's query positions: [B, Q, D],
// packed [N, D] or [B, D]; D = heads * head_size) under `mask`:
// o' = m * o + (1 - m) * output_fill per head. Equal to the masked
// attention for values 0 and 1 (m * (p @ V) = (m * p) @ V exactly then);
// rounds differently for fractional ones. Not for rows with a probability
// fill (kUniform: their outputs need the values V) or patches.
torch::Tensor MaskHeadOutputs(const torch::Tensor& outputs,
                              const LayerMask& mask,
                              const std::vector<AblationFill>& fills,
                              const PackedTokens* packed, int heads,
                              int head_size);

// The rows' head masks as tensors for one pass.
struct BatchHeadMask {
  // [B, L, H] on the device in the compute dtype (nullptr rows all 1);
  // undefined when no row masks any head.
  torch::Tensor values;
  // [B, L, H, 1, d], or [B, L, H, T, d] when some row's fill differs by
  // position: kMean / kMeanByRole / kResample rows' reference outputs
  // (zeros for the other rows); undefined when no masked row is in those
  // modes.
  torch::Tensor output_fill;
  bool positional_fill = false;
  std::vector<bool> masked_layers;      // [L]: some row masks some head there
  std::vector<AblationMode> row_modes;  // [B]: kZero for rows without a mask

  // Layer `l`'s part (undefined members where nothing is masked there).
  LayerMask ForLayer(int l) const;
};

// Shapes of one pass, for the builders below.
struct MaskShape {
  int64_t rows = 0, positions = 0;  // B, T
  int layers = 0, heads = 0, head_size = 0;
};

// What positional fills (kMeanByRole, kResample) need of each row, from
// the host: its token layout, and for kResample which draw it runs (empty:
// draw 0 for every row).
struct RowPositions {
  std::vector<TokenLayout> layouts;  // one per row
  std::vector<int> draws;
};

// From per-row HeadMasks (nullptr: no mask). Which layers are masked comes
// from HeadMask::AffectedHeads on the host, so the pass never reads a
// tensor back to learn it. Masks needing a reference have it (checked by
// Model::CheckHeadMask); positional ones need `positions`.
BatchHeadMask MakeBatchHeadMask(const std::vector<const HeadMask*>& masks,
                                const RowPositions* positions,
                                const MaskShape& shape,
                                const torch::Device& device,
                                torch::ScalarType dtype);

// From a mask tensor `mask_tensor` ([B, L, H] or [L, H], any float dtype on
// the device) applied in `mode` to every row of every layer, kept in the
// autograd graph (head importance). Every layer is masked, so the graph
// reaches every head's value even where it is 1. kZero, kUniform, or kMean
// with `mean` ([L, H, d], ReferenceTensors::mean).
BatchHeadMask TensorHeadMask(const torch::Tensor& mask_tensor,
                             AblationMode mode, const torch::Tensor& mean,
                             const MaskShape& shape, torch::ScalarType dtype);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_HEAD_MASK_TENSORS_H_
