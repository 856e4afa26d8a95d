// Ablation sweeps: many head masks scored over one labelled example set.
//
// The executor computes the unmasked baseline once and, for a mask whose
// first affected layer is l, starts the forward pass at layer l from the
// baseline's cached input hidden state of layer l (layers below l compute
// exactly what the unmasked model computes), and its head outputs there
// (layer l's attention changes only by the masked heads, so it is not
// recomputed). (mask, example) pairs are packed densely into batches of rows
// with per-row masks, grouped by sequence length and start layer, and each
// batch runs on its real tokens only (no padding). Memory for cached hidden
// states is bounded by SweepOptions::cache_budget_bytes: examples are processed
// in chunks small enough that one chunk's cache fits.
#ifndef BERTOLOGY_CORE_SWEEP_H_
#define BERTOLOGY_CORE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "common/intervals.h"
#include "common/mask_generators.h"  // SweepMask and the generators
#include "server/core/model/model.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

// A token_labels entry that is not scored (special tokens, pieces after a
// word's first, unlabelled words).
inline constexpr int kUnscoredToken = -1;

struct SweepExample {
  Encoding encoding;
  // Sequence classifier: the class index, in [0, num_labels).
  int label = 0;
  // Token classifier: one entry per token of `encoding`, a class index or
  // kUnscoredToken. Ignored (may be empty) for a sequence classifier.
  std::vector<int> token_labels;
};

struct SweepOptions {
  int max_batch_rows = 32;  // rows (mask x example pairs) per forward pass
  // Bytes of cached baseline hidden states (one [T, D] per example per
  // distinct start layer > 0) held at once; estimated from token counts and
  // the model's dtype. A chunk always holds at least one example.
  int64_t cache_budget_bytes = 256 << 20;
  // Threads running forward passes side by side, each with one intra-op
  // thread (and OpenBLAS single-threaded for the run). Pays where a model is
  // too small for one GEMM to use every core. Same batches, scores added in
  // the same order: results are bit-identical to workers = 1 on one thread
  // per pool (wider pools round differently, ~1e-7 relative). The
  // callbacks' is_cancelled is then called from these threads; the others
  // from one thread at a time.
  int workers = 1;
  // Rows run packed, without padding (ForwardOptions::pack_tokens).
  bool pack_tokens = true;
  // A mask's first masked layer starts from the baseline's head outputs
  // there (cached beside its input hidden state), skipping that layer's
  // queries, keys, values and attention (ModelInput::start_head_outputs);
  // not for masks in mode uniform, nor at a sequence classifier's last layer
  // (capturing head outputs there would run the baseline's last layer in
  // full, not for [CLS] alone, and move its bits with the masks it runs
  // beside).
  bool reuse_head_outputs = true;
  // Device memory the sweep's forward passes may use at once, in bytes
  // (0: no limit, max_batch_rows alone decides). Batches then hold at most
  // as many rows as fit by EstimateRowBytes at their chunk's longest
  // example, and never fewer than 1. On CUDA the caller sets it from the
  // device's free memory.
  int64_t device_memory_bytes = 0;
  // For tests: called before each forward pass with its row count; a
  // non-OK status becomes that pass's result (RESOURCE_EXHAUSTED exercises
  // the out-of-memory split). Unset in production.
  std::function<absl::Status(int rows)> inject_before_forward;
  // Both are true by default and exist to measure each one's share
  // (bench/core_bench.cc); results agree with them off to float rounding.
};

// Units scored: examples for a sequence classifier, labelled tokens for a
// token classifier.
// A mask in kResample runs each example once per draw (ModelRow::draw);
// its counts add over the draws, so accuracy and mean loss are their means
// over draws (the metric averaged, as resample ablation defines it).
struct MaskResult {
  int mask_index = -1;  // index into the masks passed to Run; -1 = baseline
  int examples = 0;
  int draws = 1;        // rows per example
  int64_t scored = 0;   // units scored, over every draw
  int correct = 0;      // units right, over every draw
  double loss_sum = 0;  // sum of per-unit cross-entropy (natural log)
  double accuracy = 0;  // correct / scored (0 when nothing is scored)
  // kResample: units right in each draw (draw k of every example), the
  // spread over draws; empty otherwise.
  std::vector<int64_t> draw_correct;
  // Per example against the baseline (intervals.h): n_i its units, d_i its
  // correct units under the mask (mean over draws) minus the baseline's.
  // The baseline's own has every d_i = 0.
  PairedSums paired;
};

struct SweepCallbacks {
  // After the baseline has been scored (before any mask result).
  std::function<void(const MaskResult&)> on_baseline;
  // Once per mask, when all its examples are scored (any order).
  std::function<void(const MaskResult&)> on_result;
  // After each forward pass; units are (mask, example) pairs, baseline
  // included in `total`.
  std::function<void(int64_t done, int64_t total)> on_progress;
  // Polled between forward passes; true stops the run with CANCELLED.
  std::function<bool()> is_cancelled;
  // Each time a forward pass ran out of device memory and is run again as
  // two halves (from the workers' threads, like is_cancelled).
  std::function<void()> on_batch_split;
};

// What SweepExecutor::Run (and head importance) refuse in examples: an
// empty encoding, a label out of range ("examples[i].label",
// "examples[i].token_labels[t]"), token_labels not one per token (token
// classifier). INVALID_ARGUMENT naming the field.
absl::Status CheckSweepExamples(const Model& model,
                                const std::vector<SweepExample>& examples);

// SweepOptions::workers for `model` when the caller has no preference: one
// on a GPU (one stream does the work), one per usable core on a CPU
// (UsableCpus: affinity and cgroup CPU quota). Measured on 2 cores
// (bench/RESULTS.md, "Parallel sweep workers"): 2.1-2.3x one worker on the
// shipped model (d=96, whose GEMMs cannot use two cores), 1.1-1.2x on a
// BERT-base-shaped one (d=768).
int AutoSweepWorkers(const Model& model);

// Device memory, in bytes, one row of a sweep's forward pass over `tokens`
// tokens takes at its peak, estimated from the model's shape and compute
// dtype (SweepOptions::device_memory_bytes).
int64_t EstimateRowBytes(const Model& model, int tokens);

// Thread-compatible: one Run at a time per executor; the Model may be shared.
class SweepExecutor {
 public:
  SweepExecutor(const Model* model, SweepOptions options)
      : model_(model), options_(options) {}
  // FAILED_PRECONDITION if the model has no classifier; INVALID_ARGUMENT for
  // a label out of range ("examples[i].label", "examples[i].token_labels[t]"),
  // token_labels not one per token (token classifier), an empty encoding or
  // a mask of the wrong shape ("masks[i]"); CANCELLED when is_cancelled said
  // so. Errors from the model are returned as they are.
  absl::Status Run(const std::vector<SweepExample>& examples,
                   const std::vector<SweepMask>& masks,
                   const SweepCallbacks& callbacks) const;

 private:
  const Model* model_;
  SweepOptions options_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_SWEEP_H_
