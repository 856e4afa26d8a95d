#include "server/train/train_data.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bertology {

std::vector<std::string> LabelSet(const std::vector<PairExample>& rows) {
  std::vector<std::string> labels;
  for (const auto& r : rows) labels.push_back(r.label);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  bool numeric = std::all_of(labels.begin(), labels.end(), [](auto& l) {
    long long v;
    return absl::SimpleAtoi(l, &v);
  });
  if (numeric) {
    std::sort(labels.begin(), labels.end(), [](auto& a, auto& b) {
      long long x = 0, y = 0;
      (void)absl::SimpleAtoi(a, &x);
      (void)absl::SimpleAtoi(b, &y);
      return x < y;
    });
  }
  return labels;
}

absl::StatusOr<std::vector<Encoded>> EncodeAll(
    const std::vector<PairExample>& rows, const Tokenizer& tokenizer,
    const std::map<std::string, int>& label_ids, int max_len,
    const std::string& path) {
  std::vector<Encoded> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    auto it = label_ids.find(r.label);
    if (it == label_ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", r.line, ": label '", r.label,
                       "' not in the training set"));
    }
    std::optional<std::string_view> b;
    if (!r.text_b.empty()) b = r.text_b;
    auto enc = tokenizer.Encode(r.text_a, b, max_len);
    if (!enc.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", r.line, ": ", enc.status().message()));
    }
    Encoded e;
    for (const Token& t : enc->tokens) {
      e.ids.push_back(t.id);
      e.segments.push_back(t.segment);
    }
    e.label = it->second;
    out.push_back(std::move(e));
  }
  return out;
}

Batch MakeBatch(const std::vector<Encoded>& data,
                const std::vector<size_t>& index, size_t begin, size_t end) {
  size_t t = 0;
  for (size_t i = begin; i < end; ++i)
    t = std::max(t, data[index[i]].ids.size());
  const int64_t b = static_cast<int64_t>(end - begin);
  Batch batch;
  batch.ids = torch::zeros({b, static_cast<int64_t>(t)}, torch::kLong);
  batch.segments = torch::zeros_like(batch.ids);
  batch.mask = torch::zeros_like(batch.ids);
  batch.labels = torch::empty({b}, torch::kLong);
  auto ids = batch.ids.accessor<int64_t, 2>();
  auto seg = batch.segments.accessor<int64_t, 2>();
  auto mask = batch.mask.accessor<int64_t, 2>();
  for (int64_t r = 0; r < b; ++r) {
    const Encoded& e = data[index[begin + r]];
    for (size_t j = 0; j < e.ids.size(); ++j) {
      ids[r][j] = e.ids[j];
      seg[r][j] = e.segments[j];
      mask[r][j] = 1;
    }
    batch.labels[r] = e.label;
  }
  return batch;
}

std::vector<std::vector<size_t>> LengthBucketedBatches(
    const std::vector<Encoded>& data, int batch_size, std::mt19937_64& rng) {
  std::vector<size_t> index(data.size());
  std::iota(index.begin(), index.end(), 0);
  std::shuffle(index.begin(), index.end(), rng);
  const size_t window = static_cast<size_t>(batch_size) * 64;
  std::vector<std::vector<size_t>> batches;
  for (size_t w = 0; w < index.size(); w += window) {
    auto first = index.begin() + w;
    auto last = index.begin() + std::min(index.size(), w + window);
    std::stable_sort(first, last, [&](size_t a, size_t b) {
      return data[a].ids.size() < data[b].ids.size();
    });
    for (auto it = first; it < last;
         it += std::min<ptrdiff_t>(batch_size, last - it)) {
      batches.emplace_back(it, it + std::min<ptrdiff_t>(batch_size, last - it));
    }
  }
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

}  // namespace bertology
