// The trainer's data side: labelled pairs encoded once into token ids, and
// cut into padded batches of similar length. Internal to bertology-train.
#ifndef BERTOLOGY_TRAIN_TRAIN_DATA_H_
#define BERTOLOGY_TRAIN_TRAIN_DATA_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/pair_dataset.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

struct Encoded {
  std::vector<int64_t> ids, segments;
  int label = 0;
};

// Labels sorted numerically when all are integers ("0".."4" -> 0..4), else
// lexicographically, so the mapping does not depend on row order.
std::vector<std::string> LabelSet(const std::vector<PairExample>& rows);

// Tokenizes every row (truncated to max_len); INVALID_ARGUMENT naming
// path:line for a label outside `label_ids` or a row that cannot be encoded.
absl::StatusOr<std::vector<Encoded>> EncodeAll(
    const std::vector<PairExample>& rows, const Tokenizer& tokenizer,
    const std::map<std::string, int>& label_ids, int max_len,
    const std::string& path);

// [B, T] int64 tensors (T = the longest row, zero-padded) and [B] labels.
struct Batch {
  torch::Tensor ids, segments, mask, labels;
};

// Rows data[index[begin]] .. data[index[end - 1]].
Batch MakeBatch(const std::vector<Encoded>& data,
                const std::vector<size_t>& index, size_t begin, size_t end);

// Batches of similar length, in random order: the index is shuffled, cut
// into windows of 64 batches, each window sorted by length and cut into
// batches, and the batches shuffled. Padding falls from about a quarter of
// the tokens to almost none, and each batch is still a random draw.
std::vector<std::vector<size_t>> LengthBucketedBatches(
    const std::vector<Encoded>& data, int batch_size, std::mt19937_64& rng);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_TRAIN_DATA_H_
