// Reference statistics for mean and resample ablation (head_mask.h): every
// head's output (its context vector p @ V, before the attention output
// projection) on the unmasked model, averaged over a reference set.
//
// One mean over all positions (token-weighted over every real token of the
// set), not one per position: a mean per position index exists only up to
// the reference's lengths and mixes what a position holds across inputs of
// different lengths, while one mean serves an input of any length. The
// per-example means (over each example's real tokens) are what resample
// ablation draws from; `mean` is their token-weighted average.
//
// Immutable once built; shared by every request that names it (thread-safe
// to read from many threads).
#ifndef BERTOLOGY_CORE_HEAD_REFERENCE_H_
#define BERTOLOGY_CORE_HEAD_REFERENCE_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

class Model;

struct HeadReference {
  // "hs-" + 16 hex digits of FNV-1a 64 over the model's identity() and the
  // examples' token and type ids: the same set on the same model gives the
  // same id on every replica.
  std::string id;
  int examples = 0;
  int64_t tokens = 0;  // real tokens averaged over
  int truncated_examples = 0;
  // Compute dtype, on the model's device. d = head size.
  torch::Tensor mean;    // [L, H, d]
  torch::Tensor pooled;  // [N, L, H, d], N = examples
};

// The id ComputeHeadReference gives these encodings on `model`, without
// computing anything (to find a reference already held).
std::string HeadReferenceId(const Model& model,
                            const std::vector<const Encoding*>& encodings);

// Runs the unmasked model over `encodings` (batches of `batch_rows`, padded
// per batch) and averages every head's output in float64.
// INVALID_ARGUMENT for no encodings; errors from the model as they are.
absl::StatusOr<std::shared_ptr<const HeadReference>> ComputeHeadReference(
    const Model& model, const std::vector<const Encoding*>& encodings,
    int batch_rows = 32);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_HEAD_REFERENCE_H_
