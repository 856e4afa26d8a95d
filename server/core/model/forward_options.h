// What one forward pass computes besides the logits: the options of
// Model::Forward (model.h), and EngineOptions, which adds what only a
// tensor caller (Engine, engine.h) can use: resuming, capturing. No
// libtorch.
#ifndef BERTOLOGY_CORE_FORWARD_OPTIONS_H_
#define BERTOLOGY_CORE_FORWARD_OPTIONS_H_

#include <vector>

namespace bertology {

// How a layer computes attention where no probabilities leave the pass.
enum class AttentionKernel {
  kAuto,      // the model's choice (ModelOptions::attention)
  kExplicit,  // softmax(QK^T / sqrt(d) + mask) @ V, the mask on the probs
  // libtorch's scaled_dot_product_attention (>= 2.0: flash and
  // memory-efficient kernels on CUDA), the head mask applied to each head's
  // output instead (bert_layer.h, FusedAttention). Layers whose
  // probabilities are asked for run explicit. FAILED_PRECONDITION under
  // libtorch 1.x.
  kFused,
};

struct ForwardOptions {
  // Layers whose post-mask attention probabilities to return, each in
  // [0, L) (EngineOptions: [start_layer, L)).
  std::vector<int> attention_layers;
  // Run pooler + classifier (FAILED_PRECONDITION on a plain BertModel).
  bool compute_logits = true;
  // Logits read only [CLS] of the last layer, so its queries, output
  // projection and feed-forward run for that one row (keys and values for
  // all): the same logits for about a tenth of the layer's work. Applied only
  // when nothing else reads the last layer (no attention or output capture
  // there). false runs it in full, as HF does (e.g. a baseline that models
  // it, or the trainer, whose numerics predate it).
  bool cls_only_last_layer = true;
  // Run the position-wise work (every matrix product, the layer norms) on
  // the batch's real tokens only (packed_tokens.h), not on its padding.
  // Outputs are the same up to float rounding (about 1e-6 relative); the
  // padded layout is the default because results are then bit-identical to
  // those of earlier releases. Captured hidden states and head outputs are
  // zero at padding positions. Ignored with an activation patch or when
  // attention probabilities are asked for (their rows at padding queries,
  // which HF returns, need the padded pass), and on CUDA (building the
  // index would read the mask back from the device every pass).
  bool pack_tokens = false;
  // Explicit or fused attention (kAuto: the model's default; see
  // ModelOptions::attention). Same numbers to float rounding: 1e-5 on the
  // golden model's logits (fused_attention_test), 1.0e-5 measured on the
  // shipped 12-layer model's probabilities (cuda_link_test).
  AttentionKernel attention_kernel = AttentionKernel::kAuto;
};

// ForwardOptions plus what only a caller holding tensors can use: resuming
// from a cached hidden state, and capturing hidden states and head outputs
// to resume from or patch with.
struct EngineOptions : ForwardOptions {
  EngineOptions() = default;
  explicit EngineOptions(const ForwardOptions& base) : ForwardOptions(base) {}
  // Run only layers [start_layer, L), starting from the input hidden state
  // of layer `start_layer` (ModelInput::start_hidden, engine.h, e.g.
  // taken from a cached unmasked pass). 0: start from the embeddings.
  int start_layer = 0;
  // Layers whose *input* hidden state ([B, T, D]) to return, each in
  // [start_layer, L]; layer L means the encoder output.
  std::vector<int> capture_hidden;
  // Layers whose head outputs (the attention context p @ V after the mask,
  // before the output projection) to return, [B, T, D] each, in
  // [start_layer, L); heads are D's consecutive slices of head_size. The
  // last layer among them runs in full.
  std::vector<int> capture_head_outputs;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_FORWARD_OPTIONS_H_
