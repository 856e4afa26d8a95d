// `bertology attention` output: the GetAttention response as JSON (for
// scripts and notebooks) and as render::AttentionData (for the HTML head
// view and the per-head SVGs). Maps arrive as little-endian FLOAT32 or
// FLOAT16 bytes; both decode to float here (common/float_codec.h).
#ifndef BERTOLOGY_CLIENT_CLI_ATTENTION_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_ATTENTION_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "client/render/attention_page.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

// One map's [size x size] weights, row-major. DATA_LOSS when the byte count
// does not match `size` and `encoding`.
absl::StatusOr<std::vector<float>> DecodeAttentionMap(
    const std::string& bytes, int size, v1::AttentionEncoding encoding);

// {model, granularity, tokens, units, size, truncated, maps: [{layer, head,
// attention[from][to]}], prediction}. DATA_LOSS for a malformed map.
absl::StatusOr<nlohmann::json> AttentionJson(
    const v1::GetAttentionResponse& response);

// Rows/columns are the units (pieces, or words at word granularity); the
// title names the model and the input, the prediction line its label.
absl::StatusOr<render::AttentionData> ToAttentionData(
    const v1::GetAttentionResponse& response, const v1::TextInput& input);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_ATTENTION_OUTPUT_H_
