// The engine behind a Model (model.h): its tensor face, for the core only
// (the sweep executor, patching, head statistics and importance, the
// trainer's tests, benchmarks). Padded batches go in; tensors come out,
// including the hidden states a sweep caches and resumes from, and the
// options only a tensor caller can use (EngineOptions) live here, not on
// Model::Forward's ForwardOptions. server/service/ never includes this
// (tests/layering checks): it uses Model::Forward's plain arrays.
//
// Thread safety: as Model; an Engine is immutable once its Model is loaded.
// It never throws: libtorch's exceptions come back as status.
#ifndef BERTOLOGY_CORE_ENGINE_H_
#define BERTOLOGY_CORE_ENGINE_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/core/model/activation_patch.h"
#include "server/core/model/forward_options.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"

namespace bertology {

// A padded batch on the model's device. B rows, T positions.
struct ModelInput {
  torch::Tensor input_ids;       // [B, T] int64
  torch::Tensor token_type_ids;  // [B, T] int64
  torch::Tensor attention_mask;  // [B, T] int64, 1 = real token, 0 = padding
  // [B, T, D], any device and float dtype (moved to the model's): the input
  // hidden state of layer EngineOptions::start_layer, e.g. captured by an
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
  // Each row's token layout (Engine::MakeBatch sets them from the
  // encodings): what kMeanByRole and kResample fill position by position.
  std::vector<TokenLayout> layouts;
  // kResample rows: the draw each row runs (empty: draw 0 for every row).
  std::vector<int> draws;
  // Set by Engine::MakeBatch, which checks the ids' ranges on the host;
  // otherwise Engine::Run checks the tensors (a device sync on CUDA).
  bool ranges_checked = false;
};

// The smallest and largest of some ids, and the range check on them that
// Engine::MakeBatch makes on the host and Engine::Run on input tensors
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

// A head mask as a tensor (Engine::RunWithGrad): every row of the batch
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

class BertForSequenceClassificationImpl;  // bert_model.h

// The module of one Model on its device, and every pass over it. Made by
// Model::Load; reached through Model::engine().
class Engine {
 public:
  Engine(const Model& model,
         std::shared_ptr<BertForSequenceClassificationImpl> module,
         ModelPlacement placement);
  ~Engine();

  const ModelPlacement& placement() const { return placement_; }

  // Pads `encodings` to the longest and moves them to the device, with each
  // row's token layout. INVALID_ARGUMENT for no encodings, an empty or too
  // long one, or ids out of the vocabulary.
  absl::StatusOr<ModelInput> MakeBatch(
      const std::vector<const Encoding*>& encodings) const;

  // One pass under InferenceMode over a padded batch; `masks` is empty or
  // one per row (nullptr: no mask). Refuses what Model::Forward refuses
  // (model.h), and validates input shapes and ranges, start_hidden ([B, T,
  // D] when options.start_layer > 0 or given), start_head_outputs and the
  // patch. Logits and attentions come back float32 on the CPU; hidden
  // states and head outputs on the device in the compute dtype.
  absl::StatusOr<TensorOutput> Run(const ModelInput& input,
                                   const std::vector<const HeadMask*>& masks,
                                   const EngineOptions& options) const;

  // As Run, with autograd: one pass under `mask` (a tensor, e.g. one that
  // requires grad) with grad mode on instead of InferenceMode, so the
  // outputs stay in the graph and d(logits)/d(mask) exists (head
  // importance). Logits are float32 on the CPU, converted differentiably.
  // The same module code as every other pass. FAILED_PRECONDITION when
  // called under InferenceMode (there would be no graph); INVALID_ARGUMENT
  // for a mask not [B, L, H] or [L, H] floats, or for start_layer or
  // capture_hidden. The module's parameters are shared: take gradients with
  // torch::autograd::grad on the mask (never backward(), which would
  // accumulate into the parameters' .grad).
  absl::StatusOr<TensorOutput> RunWithGrad(const ModelInput& input,
                                           const HeadMaskTensor& mask,
                                           const EngineOptions& options) const;

  // As Run (any mask Run takes, one per row, and start_hidden at layer 0
  // in place of the embeddings, e.g. EmbedWords' output), with autograd:
  // gradients flow to start_hidden and to the captured tensors, which are
  // the ones the pass used (attentions, hidden states, head outputs: on the
  // device in the compute dtype, not converted). Logits as Run. Token
  // packing is off. FAILED_PRECONDITION under InferenceMode; take
  // gradients with torch::autograd::grad (see the other RunWithGrad).
  absl::StatusOr<TensorOutput> RunWithGrad(
      const ModelInput& input, const std::vector<const HeadMask*>& masks,
      const EngineOptions& options) const;

  // The word-embedding rows of `input_ids` [B, T] int64: [B, T, E] on the
  // device in the compute dtype, a copy outside any graph (so a caller can
  // make it require grad, or interpolate it, without touching the
  // parameters).
  absl::StatusOr<torch::Tensor> WordEmbeddings(
      const torch::Tensor& input_ids) const;
  // The embeddings module's output from word embeddings [B, T, E] (the
  // positions of `input`'s input_ids and its token_type_ids added, then
  // LayerNorm and ELECTRA's projection): what RunWithGrad takes as
  // start_hidden at layer 0. Differentiable in `words` under grad mode;
  // INVALID_ARGUMENT for shapes that do not match.
  absl::StatusOr<torch::Tensor> EmbedWords(const torch::Tensor& words,
                                           const ModelInput& input) const;

 private:
  // options.attention_kernel with kAuto replaced by the model's default.
  EngineOptions Resolved(const EngineOptions& options) const;
  // What Run refuses before running.
  absl::Status CheckRun(const ModelInput& input,
                        const std::vector<const HeadMask*>& masks,
                        const EngineOptions& options) const;
  // CheckRun's part for ModelInput::start_head_outputs.
  absl::Status CheckStartHeadOutputs(const ModelInput& input,
                                     const std::vector<const HeadMask*>& masks,
                                     const EngineOptions& options) const;
  // What RunWithGrad refuses of `mask` for a batch of `rows`; in kMean, the
  // reference's mean [L, H, d] as a tensor autograd can save (else
  // undefined).
  absl::StatusOr<torch::Tensor> CheckMaskTensor(const HeadMaskTensor& mask,
                                                int64_t rows) const;

  const Model& model_;
  std::shared_ptr<BertForSequenceClassificationImpl> module_;
  const ModelPlacement placement_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ENGINE_H_
