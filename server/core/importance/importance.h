// Head importance (Michel, Levy and Neubig 2019, "Are Sixteen Heads Really
// Better than One?") and the pruning curve of HF's run_bertology.py
// (examples/research_projects/bertology: compute_heads_importance and
// mask_heads), on a Model through its tensor face.
//
// Importance of head h under a mask m: I_h = sum over examples x of
// |d loss(x) / d m_h|, loss = cross-entropy with the gold label (natural
// log; a token classifier sums it over the example's labelled tokens). This
// is HF's procedure at its default --batch_size 1: HF takes the absolute
// gradient per batch, and a batch of one is an example. Batches here are
// only for speed: each row gets its own copy of the mask, so one backward
// pass yields every example's gradient separately and the result does not
// depend on the batching. Deliberately not copied from HF: its head_mask
// .grad is never zeroed between batches (batch k adds |g_1 + ... + g_k|),
// and it divides by the number of tokens (a constant factor that both
// normalisations cancel); `raw` is the plain sum.
//
// The pass is Engine::RunWithGrad (engine.h): the same modules, eval mode (no
// dropout), the last layer for [CLS] only where inference does it.
#ifndef BERTOLOGY_CORE_IMPORTANCE_H_
#define BERTOLOGY_CORE_IMPORTANCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "server/core/model/model.h"
#include "server/core/sweep/sweep.h"  // SweepExample, kUnscoredToken

namespace bertology {

struct ImportanceOptions {
  // HF's defaults: both on (--dont_normalize_importance_by_layer and
  // --dont_normalize_global_importance turn them off).
  bool layer_norm = true;   // per layer: I / (||I_layer||_2 + 1e-20)
  bool global_norm = true;  // all heads: (I - min) / (max - min)
  int max_batch_rows = 32;  // examples per forward+backward pass
};

struct ImportanceResult {
  int layers = 0;
  int heads = 0;
  std::vector<double> raw;         // [L * H] row-major, sum of |grad|
  std::vector<double> importance;  // raw, normalised as the options say
  // The scores of the same passes, as MaskResult's.
  int examples = 0;
  int64_t scored = 0;
  int correct = 0;
  double loss_sum = 0;
  double accuracy = 0;
};

struct ImportanceCallbacks {
  // After each forward+backward pass: examples done of `total`.
  std::function<void(int64_t done, int64_t total)> on_progress;
  // Polled between passes; true stops with CANCELLED.
  std::function<bool()> is_cancelled;
};

// HF's normalisation of `raw` ([layers * heads]). A global range of 0
// (every value equal) leaves zeros where HF would divide 0 by 0.
std::vector<double> NormalizeImportance(const std::vector<double>& raw,
                                        int layers, int heads,
                                        const ImportanceOptions& options);

// Importance at `mask` (its values and mode; HF's head_mask argument).
// FAILED_PRECONDITION without a classifier; INVALID_ARGUMENT for no
// examples, a label out of range ("examples[i].label",
// "examples[i].token_labels[t]"), token_labels not one per token, a mask
// of the wrong shape or max_batch_rows < 1; CANCELLED when asked.
// `progress_offset`/`progress_total` place this run's examples in a larger
// job's progress (0/0: its own).
absl::StatusOr<ImportanceResult> ComputeHeadImportance(
    const Model& model, const std::vector<SweepExample>& examples,
    const HeadMask& mask, const ImportanceOptions& options,
    const ImportanceCallbacks& callbacks, int64_t progress_offset = 0,
    int64_t progress_total = 0);

struct PruneOptions {
  double threshold = 0.9;      // stop below threshold * unmasked accuracy
  double step_fraction = 0.1;  // max(1, floor(step_fraction * L * H)) a step
  AblationMode mode = AblationMode::kZero;  // how masked heads are masked
  // kMean: the statistics masked heads move to (kResample is refused: its
  // draws have no gradient form for the importance of each step).
  std::shared_ptr<const HeadReference> reference;
  ImportanceOptions importance;
};

struct PruneStep {
  int step = 0;  // 0: the unmasked model
  int heads_left = 0;
  std::vector<LayerHead> masked;            // all masked so far
  std::vector<LayerHead> masked_this_step;  // added by this step
  ImportanceResult scores;                  // under this step's mask
};

struct PruneCallbacks {
  std::function<void(const PruneStep&)> on_step;
  // Units: examples over all passes; `total` is an upper bound (every step
  // run until no head is left).
  std::function<void(int64_t done, int64_t total)> on_progress;
  std::function<bool()> is_cancelled;
};

// HF's mask_heads: score and take importance unmasked; repeat: masked heads
// get +inf importance, mask the `n` least important unmasked ones (n as
// PruneOptions says, fewer when fewer are left; ties to the lower flat
// index), take importance and score again; stop after the first step whose
// accuracy is below threshold * step 0's, or when no head is left (HF's
// loop would then re-pick masked heads). Calls on_step for every step, in
// order, and returns the index of the last step at or above the threshold
// (the mask HF keeps). INVALID_ARGUMENT for threshold or step_fraction not
// in (0, 1] ("threshold", "step_fraction"), else as ComputeHeadImportance.
absl::StatusOr<int> RunPruneCurve(const Model& model,
                                  const std::vector<SweepExample>& examples,
                                  const PruneOptions& options,
                                  const PruneCallbacks& callbacks);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_IMPORTANCE_H_
