// How many inputs one all-layer attention pass takes (AnalyzeHeads,
// CompareAttention, SegmentWords): such a pass returns rows x L x H x T^2
// floats per model, and BERT-base at T = 512 is 150 MB a row, so rows join
// a pass only while its maps stay under a budget. No tensors.
#ifndef BERTOLOGY_SERVICE_ATTENTION_PASSES_H_
#define BERTOLOGY_SERVICE_ATTENTION_PASSES_H_

#include <cstdint>
#include <vector>

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

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_ATTENTION_PASSES_H_
