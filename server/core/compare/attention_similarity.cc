#include "server/core/compare/attention_similarity.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace bertology {

double MapCosine(const float* a, int64_t a_padded, const float* b,
                 int64_t b_padded, int t) {
  double dot = 0, aa = 0, bb = 0;
  for (int i = 0; i < t; ++i) {
    const float* ra = a + i * a_padded;
    const float* rb = b + i * b_padded;
    for (int j = 0; j < t; ++j) {
      const double x = ra[j], y = rb[j];
      dot += x * y;
      aa += x * x;
      bb += y * y;
    }
  }
  if (aa == 0 || bb == 0) return std::numeric_limits<double>::quiet_NaN();
  return dot / (std::sqrt(aa) * std::sqrt(bb));
}

AttentionSimilarityAccumulator::AttentionSimilarityAccumulator(int num_layers,
                                                               int num_heads)
    : num_layers_(num_layers),
      num_heads_(num_heads),
      sums_(static_cast<size_t>(num_layers) * num_heads, 0.0) {}

absl::Status AttentionSimilarityAccumulator::Add(
    const std::vector<const float*>& maps_a, int64_t a_padded,
    const std::vector<const float*>& maps_b, int64_t b_padded, int t) {
  if (static_cast<int>(maps_a.size()) != num_layers_ ||
      static_cast<int>(maps_b.size()) != num_layers_) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected maps of ", num_layers_, " layers, got ",
                     maps_a.size(), " and ", maps_b.size()));
  }
  if (t < 1 || t > a_padded || t > b_padded) {
    return absl::InvalidArgumentError(
        absl::StrCat("t=", t, " is not in [1, padded lengths ", a_padded,
                     " and ", b_padded, "]"));
  }
  const int64_t a_stride = a_padded * a_padded, b_stride = b_padded * b_padded;
  for (int l = 0; l < num_layers_; ++l) {
    for (int h = 0; h < num_heads_; ++h) {
      sums_[l * num_heads_ + h] +=
          MapCosine(maps_a[l] + h * a_stride, a_padded,
                    maps_b[l] + h * b_stride, b_padded, t);
    }
  }
  ++examples_;
  return absl::OkStatus();
}

std::vector<double> AttentionSimilarityAccumulator::Mean() const {
  std::vector<double> out(sums_.size(),
                          std::numeric_limits<double>::quiet_NaN());
  if (examples_ == 0) return out;
  for (size_t k = 0; k < sums_.size(); ++k) out[k] = sums_[k] / examples_;
  return out;
}

}  // namespace bertology
