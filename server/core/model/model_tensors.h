// The tensor face of Model (model.h), for the core only: the sweep executor,
// tests and benchmarks. Padded batches go in; tensors come out, including
// the hidden states a sweep caches and resumes from. server/service/ never
// includes this: it uses Model::Forward's plain arrays.
#ifndef BERTOLOGY_CORE_MODEL_TENSORS_H_
#define BERTOLOGY_CORE_MODEL_TENSORS_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/core/model/activation_patch.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"

namespace bertology {

// A padded batch on the model's device. B rows, T positions.
struct ModelInput {
  torch::Tensor input_ids;       // [B, T] int64
  torch::Tensor token_type_ids;  // [B, T] int64
  torch::Tensor attention_mask;  // [B, T] int64, 1 = real token, 0 = padding
  // [B, T, D], any device and float dtype (moved to the model's): the input
  // hidden state of layer ForwardOptions::start_layer, e.g. captured by an
  // unmasked pass (capture_hidden). Needed when start_layer > 0; at 0 it
  // replaces the embeddings.
  torch::Tensor start_hidden;
  // [B, T, D] or undefined: layer start_layer's head outputs under no mask
  // (capture_head_outputs of an unmasked pass). With them that layer skips
  // its queries, keys, values and attention, and masks these instead: the
  // same outputs (bit for bit for mask values 0 and 1). Needs start_hidden;
  // refused with a row in mode uniform, a patch, or attention or head
  // outputs asked of that layer.
  torch::Tensor start_head_outputs;
  // Activation patching (activation_patch.h): one site list per row, the
  // source's activations on the model's device in the compute dtype. Null:
  // nothing patched. Not with masks.
  std::shared_ptr<const ActivationPatch> patch;
  // Each row's token layout (Model::MakeBatch sets them from the
  // encodings): what kMeanByRole and kResample fill position by position.
  std::vector<TokenLayout> layouts;
  // kResample rows: the draw each row runs (empty: draw 0 for every row).
  std::vector<int> draws;
  // Set by Model::MakeBatch, which checks the ids' ranges on the host;
  // otherwise ForwardTensors checks the tensors (a device sync on CUDA).
  bool ranges_checked = false;
};

// The smallest and largest of some ids, and the range check on them that
// Model::MakeBatch makes on the host and ForwardTensors on input tensors
// from elsewhere: INVALID_ARGUMENT "<field> values must be in [0, end), got
// [lo, hi]".
struct IdRange {
  int64_t lo, hi;
  explicit IdRange(int64_t first) : lo(first), hi(first) {}
  void Add(int64_t v) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  absl::Status Check(int64_t end, const char* field) const {
    if (lo >= 0 && hi < end) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        field, " values must be in [0, ", end, "), got [", lo, ", ", hi, "]"));
  }
};

struct TensorOutput {
  torch::Tensor logits;  // [B, C] float32, CPU; undefined without logits
  std::map<int, torch::Tensor>
      attentions;  // layer -> [B, H, T, T] float32, CPU
  std::map<int, torch::Tensor>
      hidden;  // layer -> [B, T, D], model device/dtype
  // ForwardOptions::capture_head_outputs: layer -> [B, T, D], model
  // device/dtype.
  std::map<int, torch::Tensor> head_outputs;
};

// A head mask as a tensor (Model::ForwardWithGrad): every row of the batch
// in `mode`, every layer masked by `values`. kZero, kUniform, or kMean with
// `reference` (its per-head means; kMeanByRole and kResample have no tensor
// form).
struct HeadMaskTensor {
  torch::Tensor values;  // [B, L, H] or [L, H], float, on any device
  AblationMode mode = AblationMode::kZero;
  std::shared_ptr<const HeadReference> reference;  // kMean
};

// Where a Model computes.
struct ModelPlacement {
  torch::Device device{torch::kCPU};
  torch::ScalarType dtype = torch::kFloat;  // the compute dtype
  // What ForwardOptions::attention_kernel kAuto runs: kExplicit or kFused.
  AttentionKernel attention = AttentionKernel::kExplicit;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_MODEL_TENSORS_H_
