// Per-head cosine similarity of two models' attention maps on the same
// inputs (Kovaleva et al. 2019, "Revealing the Dark Secrets of BERT",
// Figure 3: how much fine-tuning changed each head). Plain floats in, no
// libtorch, no gRPC.
//
// Per example and head, with a and b the head's post-mask [T x T] maps of
// the two models over the example's T real tokens (padding rows and columns
// excluded, since they depend on the batch, not the model):
//   cos = sum(a * b) / (|a| |b|)   over the flattened T*T values.
// Over a dataset: the mean of the per-example values, each example weighing
// the same. Undefined (NaN) when a map is all zero, which only a head
// zero-masked in both models is: a NaN in any example makes the head's mean
// NaN rather than silently averaging over fewer examples.
#ifndef BERTOLOGY_CORE_COMPARE_ATTENTION_SIMILARITY_H_
#define BERTOLOGY_CORE_COMPARE_ATTENTION_SIMILARITY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace bertology {

// Cosine of one head's maps: the [t x t] top-left blocks of the row-major
// [padded x padded] arrays `a` (row stride `a_padded`) and `b`. Accumulates
// in double.
double MapCosine(const float* a, int64_t a_padded, const float* b,
                 int64_t b_padded, int t);

class AttentionSimilarityAccumulator {
 public:
  AttentionSimilarityAccumulator(int num_layers, int num_heads);

  // One example of `t` real tokens: per layer, that example's [H, P, P]
  // maps of each model (P = that model's padded length, >= t).
  absl::Status Add(const std::vector<const float*>& maps_a, int64_t a_padded,
                   const std::vector<const float*>& maps_b, int64_t b_padded,
                   int t);

  int examples() const { return examples_; }
  // Row-major [layers x heads] means; NaN before any example.
  std::vector<double> Mean() const;

 private:
  int num_layers_, num_heads_;
  int examples_ = 0;
  std::vector<double> sums_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_COMPARE_ATTENTION_SIMILARITY_H_
