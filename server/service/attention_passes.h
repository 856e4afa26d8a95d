// How many inputs one all-layer attention pass takes (AnalyzeHeads,
// CompareAttention, SegmentWords): such a pass returns rows x L x H x T^2
// floats per model, and BERT-base at T = 512 is 150 MB a row, so rows join
// a pass only while its maps stay under a budget. No tensors.
#ifndef BERTOLOGY_SERVICE_ATTENTION_PASSES_H_
#define BERTOLOGY_SERVICE_ATTENTION_PASSES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/head_mask.h"
#include "server/core/model/model.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

// Bytes of attention maps one pass may return.
inline constexpr int64_t kMaxMapBytesPerPass = int64_t{256} << 20;

// The end of the pass starting at `begin`: at most `max_rows` rows, and no
// more than fit kMaxMapBytesPerPass with `maps_per_row` float maps per row
// (L x H, or twice that for two models) padded to the pass's longest row.
// A single row always runs (returns at least begin + 1).
int AttentionPassEnd(const std::vector<Encoding>& encodings, int begin,
                     int max_rows, int64_t maps_per_row);

// One input's post-mask maps from a pass: maps[l] points at head 0 of layer
// l, [H, padded, padded] row-major; the input's own T x T block is the
// top-left corner of each head's map.
using AttentionRowFn = std::function<absl::Status(
    int input, const std::vector<const float*>& maps, int64_t padded)>;

// Every encoding through `model` in all-layer attention passes under `mask`
// (no logits, so any head kind serves), at most `max_rows` rows a pass and
// AttentionPassEnd's budget: `on_row` for each input in order; between
// passes `is_cancelled` (may be empty) stops the run with CANCELLED naming
// `rpc`, and `on_progress(done, total)` is called at most every 100 ms and
// after the last pass (false: the client went away, CANCELLED).
absl::Status RunAttentionPasses(
    const Model& model, const std::vector<Encoding>& encodings,
    const HeadMask& mask, int max_rows, const std::string& rpc,
    const std::function<bool()>& is_cancelled, const AttentionRowFn& on_row,
    const std::function<bool(int done, int total)>& on_progress);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_ATTENTION_PASSES_H_
