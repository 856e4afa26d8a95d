// A padded batch's real tokens laid end to end, for position-wise work.
//
// Every layer's matrix products (queries, keys, values, the attention output
// projection and the feed-forward) and its layer norms act on each token
// alone, so they need not run on padding. A batch of rows of different
// lengths, packed, runs them on N real tokens instead of B x T positions;
// only the attention itself, which mixes tokens within a row, unpacks its
// queries, keys and values into the padded [B, T, .] layout (padding
// positions are zero there and masked out as before). Measured on a
// BERT-base sweep (bench/RESULTS.md): padding of 1.11 padded/real tokens
// is most of what packing saves.
#ifndef BERTOLOGY_CORE_PACKED_TOKENS_H_
#define BERTOLOGY_CORE_PACKED_TOKENS_H_

#include <torch/types.h>

namespace bertology {

// Immutable after MakePackedTokens; shared by the layers of one pass.
class PackedTokens {
 public:
  PackedTokens() = default;
  // Undefined (do not pack) when padding positions are at most
  // `min_padding` of the real tokens (packing's gathers and scatters would
  // cost more than they save), or when a row's position 0 is padding (a
  // row's first token must be real: a [CLS]-only layer reads it).
  // `attention_mask`: [B, T], 1 = real token, any device; read back to the
  // host once.
  static PackedTokens Make(const torch::Tensor& attention_mask,
                           double min_padding = 0.0);

  bool defined() const { return index_.defined(); }
  int64_t rows() const { return rows_; }            // B
  int64_t positions() const { return positions_; }  // T
  int64_t tokens() const { return tokens_; }        // N

  // [B, T, ...] -> [N, ...]: the real tokens, row by row.
  torch::Tensor Pack(const torch::Tensor& padded) const;
  // [N, ...] -> [B, T, ...], zero at padding positions.
  torch::Tensor Unpack(const torch::Tensor& packed) const;
  // [N, ...] -> [B, ...]: each row's first token (position 0).
  torch::Tensor FirstTokens(const torch::Tensor& packed) const;
  // [B, ...] -> [N, ...]: each token gets its row's value.
  torch::Tensor PerToken(const torch::Tensor& per_row) const;

 private:
  torch::Tensor index_;  // [N] int64: b * T + t of each real token
  torch::Tensor row_;    // [N] int64: b of each real token
  torch::Tensor first_;  // [B] int64: where row b's position 0 is in [N]
  int64_t rows_ = 0, positions_ = 0, tokens_ = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PACKED_TOKENS_H_
