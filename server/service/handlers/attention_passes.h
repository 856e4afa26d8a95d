// Inputs through one or two models in all-layer attention passes
// (AnalyzeHeads, SegmentWords: one model; CompareAttention: two, row for
// row). Such a pass returns rows x L x H x T^2 floats per model, and
// BERT-base at T = 512 is 150 MB a row, so rows join a pass only while its
// maps stay under a budget. No tensors.
#ifndef BERTOLOGY_SERVICE_HANDLERS_ATTENTION_PASSES_H_
#define BERTOLOGY_SERVICE_HANDLERS_ATTENTION_PASSES_H_

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

// One model of a run and its encodings of the inputs (the same count for
// every model, input i of each the same text).
struct AttentionPassModel {
  const Model* model = nullptr;
  const std::vector<Encoding>* encodings = nullptr;
};

// One input's post-mask maps from a pass, per model: maps[m][l] points at
// head 0 of layer l, [H, padded[m], padded[m]] row-major; the input's own
// T x T block is the top-left corner of each head's map.
struct AttentionPassRow {
  int input = 0;
  std::vector<std::vector<const float*>> maps;
  std::vector<int64_t> padded;
};
using AttentionRowFn = std::function<absl::Status(const AttentionPassRow&)>;

// How a run reports to its call.
struct AttentionPassCall {
  std::string rpc;                     // names the call in CANCELLED
  std::string units = "examples";      // what the inputs are, in CANCELLED
  int max_rows = 1;                    // rows a pass at most
  std::function<bool()> is_cancelled;  // polled between passes; may be empty
  // After every pass, (inputs done, total); false: the client went away.
  std::function<bool(int done, int total)> on_progress;
};

// Every input through every model in all-layer attention passes under
// `mask` (no logits, so any head kind serves), each pass at most
// call.max_rows rows and AttentionPassEnd's budget for all the models'
// maps: `on_row` for each input in order. Between passes a cancelled call
// stops the run with CANCELLED ("<rpc> cancelled after <done> of <total>
// <units>"), and a client gone with CANCELLED "the client went away".
absl::Status RunAttentionPasses(const std::vector<AttentionPassModel>& models,
                                const HeadMask& mask,
                                const AttentionPassCall& call,
                                const AttentionRowFn& on_row);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_HANDLERS_ATTENTION_PASSES_H_
