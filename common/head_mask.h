// Request-scoped attention-head masks.
//
// A mask holds one value per (layer, head) in [0, 1]: 1 keeps the head, 0
// ablates it. It is applied to the head's attention probabilities after the
// softmax (HF's `head_mask` semantics), or to the head's output, in one of
// five modes:
//   kZero:       p' = m * p                  (m = 0: the head outputs 0)
//   kUniform:    p' = m * p + (1 - m) * u    (u: uniform over the row's
//                real, non-padding tokens; Kovaleva et al. 2019)
//   kMean:       o' = m * o + (1 - m) * mean (o = p @ V, the head's output
//                before the output projection; mean: its average over every
//                real token of a reference set, HeadReference)
//   kMeanByRole: o'[t] = m * o[t] + (1 - m) * mean[role(t)], role one of
//                [CLS], the first [SEP], the second [SEP], text_a's tokens,
//                text_b's tokens (the head's average over the reference
//                set's tokens of that role)
//   kResample:   o'[t] = m * o[t] + (1 - m) * o_r[align(t)] (resample
//                ablation as Chan et al. 2022 and Heimersheim & Nanda 2024
//                define it: o_r is the head's output on reference input r
//                in the unmasked model, position by position; r is drawn
//                per input and per draw, independently; every ablated head
//                of a row takes the same r). A row runs one draw
//                (ModelRow::draw); callers average their metric over draws
//                (server/core/model/head_reference.h has the draw rule).
// kMean, kMeanByRole and kResample read reference statistics (the mask's
// reference()),
// computed from the unmasked model (server/core/model/head_reference.h).
// Masks are plain values: the shared model is never mutated by a request.
//
// One type from the wire to the layer: a handler parses the request into a
// HeadMask (ParseHeadMask, shape checked there against the model), rows
// carry a `const HeadMask*` through the batcher into Model::Forward, and
// the engine turns the batch's masks into tensors [B, L, H], then [B, H]
// per layer. Those tensors and every formula above live in one place,
// server/core/model/head_mask_tensors.cc: a new mode is an AblationMode
// value plus its case there.
#ifndef BERTOLOGY_COMMON_HEAD_MASK_H_
#define BERTOLOGY_COMMON_HEAD_MASK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

enum class AblationMode { kZero, kUniform, kMean, kResample, kMeanByRole };

// "zero", "uniform", "mean", "resample", "mean_by_role".
const char* AblationModeName(AblationMode mode);
// The mode AblationModeName calls `name`, or nullopt.
std::optional<AblationMode> AblationModeFromName(const std::string& name);
// True for the modes that read reference statistics (kMean, kMeanByRole,
// kResample).
inline bool ModeNeedsReference(AblationMode mode) {
  return mode == AblationMode::kMean || mode == AblationMode::kMeanByRole ||
         mode == AblationMode::kResample;
}
// True for the modes whose fill differs by position (kMeanByRole,
// kResample): the row's token layout decides it.
inline bool ModeFillsByPosition(AblationMode mode) {
  return mode == AblationMode::kMeanByRole || mode == AblationMode::kResample;
}

// Per-head reference outputs (mean and per-example), defined in the core
// (server/core/model/head_reference.h, its tensors in reference_tensors.h);
// opaque here.
struct HeadReference;

// How kResample lines a reference input's positions up with the row's.
enum class ResampleAlignment {
  // Drawn only from reference inputs with the row's segment lengths, so
  // position t takes the reference's position t.
  kMatchedLengths,
  // Drawn from reference inputs with as many segments; [CLS] and each [SEP]
  // take their counterpart, token i of a segment of n tokens takes token
  // floor(i * m / n) of the reference's segment of m tokens.
  kScaled,
};
// "matched_lengths", "scaled".
const char* ResampleAlignmentName(ResampleAlignment alignment);

// kResample's draws (the rule: head_reference.h, ResampleSource).
struct ResampleDraws {
  static constexpr int kMaxCount = 64;
  int count = 1;
  uint64_t seed = 0;
  ResampleAlignment alignment = ResampleAlignment::kMatchedLengths;
};

struct LayerHead {
  int layer = 0;
  int head = 0;
  bool operator==(const LayerHead& o) const {
    return layer == o.layer && head == o.head;
  }
};

class HeadMask {
 public:
  // All heads kept (the identity mask).
  static HeadMask Identity(int layers, int heads,
                           AblationMode mode = AblationMode::kZero);
  // The listed heads set to 0, all others 1. Errors name the offending
  // entry ("ablate[3].layer=14 out of range [0, 12)").
  static absl::StatusOr<HeadMask> Ablate(
      int layers, int heads, const std::vector<LayerHead>& ablate,
      AblationMode mode = AblationMode::kZero);
  // Only the listed heads kept, all others 0.
  static absl::StatusOr<HeadMask> KeepOnly(
      int layers, int heads, const std::vector<LayerHead>& keep,
      AblationMode mode = AblationMode::kZero);
  // Row-major [layers x heads] values, each finite and in [0, 1].
  static absl::StatusOr<HeadMask> Dense(
      int layers, int heads, std::vector<float> values,
      AblationMode mode = AblationMode::kZero);

  int layers() const { return layers_; }
  int heads() const { return heads_; }
  AblationMode mode() const { return mode_; }
  float value(int layer, int head) const {
    return values_[layer * heads_ + head];
  }
  const std::vector<float>& values() const { return values_; }

  bool IsIdentity() const;
  // The lowest layer with a value != 1, or layers() for the identity. Layers
  // below it compute exactly what the unmasked model computes.
  int FirstAffectedLayer() const;
  // Heads with value != 1, in (layer, head) order.
  std::vector<LayerHead> AffectedHeads() const;
  // Short human-readable form, e.g. "ablate L3H7,L4H0 (zero)".
  std::string DebugString() const;

  // The reference statistics kMean, kMeanByRole and kResample read (ignored
  // by the other modes), and kResample's draws. A mask in those modes needs a
  // reference before it reaches the model (Model refuses it otherwise).
  void set_reference(std::shared_ptr<const HeadReference> reference,
                     ResampleDraws draws = {}) {
    reference_ = std::move(reference);
    draws_ = draws;
  }
  const std::shared_ptr<const HeadReference>& reference() const {
    return reference_;
  }
  const ResampleDraws& draws() const { return draws_; }

 private:
  HeadMask(int layers, int heads, std::vector<float> values, AblationMode mode)
      : layers_(layers),
        heads_(heads),
        values_(std::move(values)),
        mode_(mode) {}
  int layers_ = 0;
  int heads_ = 0;
  std::vector<float> values_;
  AblationMode mode_ = AblationMode::kZero;
  std::shared_ptr<const HeadReference> reference_;
  ResampleDraws draws_;
};

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_HEAD_MASK_H_
