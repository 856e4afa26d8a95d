// Turns request messages into core values, refusing bad input with
// INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for a limit) and a message that
// names the offending field, e.g. "head_mask.dense.values[4]=nan is not in
// [0, 1]". No tensors here: these run before any model work.
#ifndef BERTOLOGY_SERVICE_CONVERT_REQUEST_VALIDATION_H_
#define BERTOLOGY_SERVICE_CONVERT_REQUEST_VALIDATION_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "common/head_mask.h"
#include "common/utf8.h"
#include "server/core/tokenizer/tokenizer.h"
#include "server/service/registry/reference_store.h"
#include "server/service/registry/service_limits.h"

namespace bertology {

// UNSPECIFIED maps to `fallback`; an unknown number is INVALID_ARGUMENT.
absl::StatusOr<AblationMode> ParseAblationMode(v1::AblationMode mode,
                                               AblationMode fallback,
                                               const std::string& field);

// Where a mask in mode MEAN, MEAN_BY_ROLE or RESAMPLE finds its reference
// statistics.
struct MaskReferences {
  // The model's statistics, looked up by HeadMask.statistics; null: the
  // call takes no statistics and refuses those modes.
  const ReferenceStore* store = nullptr;
  // For a mask that names none (a sweep's own statistics); may be null.
  std::shared_ptr<const HeadReference> fallback;
  ResampleDraws fallback_draws;  // for a mask without `resample`
  // RESAMPLE averages a metric over draws: only a call that scores one
  // (SweepAblation) sets this; the others refuse the mode naming the field.
  bool allow_resample = false;
};

// The statistics `id` names on this model, for a call in mode `mode`:
// INVALID_ARGUMENT "<field> is empty: mode ... needs the id" without an id,
// FAILED_PRECONDITION naming `field` when this replica does not hold it.
absl::StatusOr<std::shared_ptr<const HeadReference>> RequireStatistics(
    const ReferenceStore& store, const std::string& id,
    const std::string& field, AblationMode mode);

// ResampleOptions as draws: 0 means 1; more than ResampleDraws::kMaxCount
// (or negative) is INVALID_ARGUMENT naming "<field>.draws"; an unknown
// alignment names "<field>.alignment".
absl::StatusOr<ResampleDraws> ParseResampleDraws(
    const v1::ResampleOptions& proto, const std::string& field);

// A mask for a [layers x heads] model. No oneof set: the identity mask.
// The mode is the message's, or `default_mode` when unspecified. A mask in
// MEAN or RESAMPLE gets its statistics from `references` (errors name
// "<field>.statistics"): the ones it names, else the fallback; only the
// identity mask may have none (it ablates nothing; a gradient taken at it,
// HeadImportance, still needs them).
absl::StatusOr<HeadMask> ParseHeadMask(const v1::HeadMask& proto, int layers,
                                       int heads, AblationMode default_mode,
                                       const std::string& field,
                                       const MaskReferences& references = {});

// (layer, head) pairs, each in range; errors name "field[i].layer".
absl::StatusOr<std::vector<LayerHead>> ParseLayerHeads(
    const google::protobuf::RepeatedPtrField<v1::LayerHead>& list, int layers,
    int heads, const std::string& field);

// UTF-8 (common/utf8.h), at most limits.max_text_bytes, and non-empty unless
// `allow_empty`.
absl::Status ValidateText(std::string_view text, const std::string& field,
                          const ServiceLimits& limits, bool allow_empty);

// Validates and tokenizes one input for a model of `max_seq_len` tokens
// (truncating longest-first; the encoding says when it did).
absl::StatusOr<Encoding> EncodeText(const Tokenizer& tokenizer, int max_seq_len,
                                    std::string_view text_a,
                                    std::string_view text_b,
                                    const std::string& field,
                                    const ServiceLimits& limits);
absl::StatusOr<Encoding> EncodeInput(const Tokenizer& tokenizer,
                                     int max_seq_len,
                                     const v1::TextInput& input,
                                     const std::string& field,
                                     const ServiceLimits& limits);

// Validates the `layers` or `heads` selection of GetAttention: each in
// [0, n), no duplicates. Empty selects all of [0, n).
absl::StatusOr<std::vector<int>> ParseIndexSelection(
    const google::protobuf::RepeatedField<int32_t>& list, int n,
    const std::string& field);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_CONVERT_REQUEST_VALIDATION_H_
