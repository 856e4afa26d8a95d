#include "server/core/model/packed_tokens.h"

#include <torch/torch.h>

#include <vector>

namespace bertology {

PackedTokens PackedTokens::Make(const torch::Tensor& attention_mask,
                                double min_padding) {
  TORCH_CHECK(attention_mask.dim() == 2, "attention_mask must be [B, T]");
  const torch::Tensor mask =
      attention_mask.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t b = mask.size(0), t = mask.size(1);
  const int64_t* m = mask.data_ptr<int64_t>();
  std::vector<int64_t> index, row, first;
  index.reserve(b * t);
  row.reserve(b * t);
  for (int64_t r = 0; r < b; ++r) {
    if (m[r * t] == 0) return PackedTokens();  // no first token to read
    first.push_back(static_cast<int64_t>(index.size()));
    for (int64_t p = 0; p < t; ++p) {
      if (m[r * t + p] == 0) continue;
      index.push_back(r * t + p);
      row.push_back(r);
    }
  }
  const double real = static_cast<double>(index.size());
  if (b * t - real <= min_padding * real) return PackedTokens();
  const torch::Device device = attention_mask.device();
  auto to_tensor = [&](const std::vector<int64_t>& v) {
    return torch::tensor(v, torch::kLong).to(device);
  };
  PackedTokens packed;
  packed.index_ = to_tensor(index);
  packed.row_ = to_tensor(row);
  packed.first_ = to_tensor(first);
  packed.rows_ = b;
  packed.positions_ = t;
  packed.tokens_ = static_cast<int64_t>(index.size());
  return packed;
}

torch::Tensor PackedTokens::Pack(const torch::Tensor& padded) const {
  TORCH_CHECK(padded.dim() >= 2 && padded.size(0) == rows_ &&
                  padded.size(1) == positions_,
              "PackedTokens::Pack: expected [", rows_, ", ", positions_,
              ", ...], got ", padded.sizes());
  return padded.flatten(0, 1).index_select(0, index_);
}

torch::Tensor PackedTokens::Unpack(const torch::Tensor& packed) const {
  TORCH_CHECK(packed.dim() >= 1 && packed.size(0) == tokens_,
              "PackedTokens::Unpack: expected ", tokens_, " tokens, got ",
              packed.sizes());
  std::vector<int64_t> shape(packed.sizes().begin(), packed.sizes().end());
  shape[0] = rows_ * positions_;
  // index_copy (not its in-place form) keeps autograd's view of `packed`.
  torch::Tensor out =
      torch::zeros(shape, packed.options()).index_copy(0, index_, packed);
  shape[0] = positions_;
  shape.insert(shape.begin(), rows_);
  return out.view(shape);
}

torch::Tensor PackedTokens::FirstTokens(const torch::Tensor& packed) const {
  return packed.index_select(0, first_);
}

torch::Tensor PackedTokens::PerToken(const torch::Tensor& per_row) const {
  return per_row.index_select(0, row_);
}

}  // namespace bertology
