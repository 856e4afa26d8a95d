// Token attribution: which input tokens one prediction rests on, in the
// model as a head mask leaves it. Six methods (attribution.proto defines
// each): gradient saliency, gradient x input, integrated gradients on the
// word embeddings (with its completeness gap), attention rollout and flow
// (Abnar & Zuidema 2020), attention x gradient (Chefer et al. 2021).
//
// Every gradient is taken through the model's own modules
// (Engine::RunWithGrad from Engine::EmbedWords' output), so the head mask,
// in any mode Engine::Run takes, acts exactly as it does in Classify. The
// integration points of integrated gradients are rows of batched passes.
//
// Thread-safe: AttributeTokens keeps no state; the Model must outlive it.
// No torch in this header.
#ifndef BERTOLOGY_CORE_TOKEN_ATTRIBUTION_H_
#define BERTOLOGY_CORE_TOKEN_ATTRIBUTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "server/core/model/model.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

enum class AttributionMethod {
  kSaliency,
  kGradientXInput,
  kIntegratedGradients,
  kAttentionRollout,
  kAttentionFlow,
  kAttentionXGradient,
};

// The six, in the order above.
const std::vector<AttributionMethod>& AllAttributionMethods();

enum class AttributionOutput { kLogit, kProbability };

// Integrated gradients' baseline word embedding; the tokens the tokenizer
// added ([CLS], [SEP]: Token::word_index -1) keep their own.
enum class AttributionBaseline { kPad, kZero, kMask };

enum class IntegrationRule { kGaussLegendre, kRiemannTrapezoid };

struct AttributionOptions {
  std::vector<AttributionMethod> methods;  // empty: all six
  // The class explained; unset: the predicted one under the mask.
  std::optional<int> target;
  // Token classifiers (required there): the token explained. A sequence
  // classifier reads position 0 ([CLS]); giving one is refused.
  std::optional<int> target_position;
  AttributionOutput output = AttributionOutput::kLogit;
  AttributionBaseline baseline = AttributionBaseline::kPad;
  IntegrationRule rule = IntegrationRule::kGaussLegendre;
  int steps = 50;           // integrated gradients' points, [1, 1024]
  int max_batch_rows = 32;  // integration points per forward pass
};

struct MethodScores {
  AttributionMethod method;
  std::vector<double> scores;  // one per token
  // Integrated gradients: |sum(scores) - (f(x) - f(baseline))|, f(baseline).
  std::optional<double> completeness_gap;
  std::optional<double> baseline_output;
  int steps = 0;
};

struct TokenAttribution {
  int target = 0;
  int target_position = 0;
  double output_value = 0;            // f(x) under the mask
  std::vector<float> logits;          // [C], at target_position
  std::vector<MethodScores> methods;  // in options.methods' order
};

struct AttributionCallbacks {
  // Forward passes done of those this input needs.
  std::function<void(int64_t done, int64_t total)> on_progress;
  std::function<bool()> is_cancelled;  // checked between passes
};

// Checks `options` against `model` (before any pass): INVALID_ARGUMENT
// naming "target", "target_position", "steps", "methods"; FAILED_PRECONDITION
// for a model without a classifier.
absl::Status CheckAttributionOptions(const Model& model,
                                     const AttributionOptions& options);

// The attributions of `encoding`'s prediction under `mask` (null: none; mode
// resample refused). INVALID_ARGUMENT for a target out of range (naming
// "target") or target_position beyond the tokens; CANCELLED when
// is_cancelled says so.
absl::StatusOr<TokenAttribution> AttributeTokens(
    const Model& model, const Encoding& encoding, const HeadMask* mask,
    const AttributionOptions& options,
    const AttributionCallbacks& callbacks = {});

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKEN_ATTRIBUTION_H_
