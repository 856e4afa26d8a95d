#include "bench/bench_util.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/pair_dataset.h"

namespace bertology::bench {

absl::StatusOr<std::vector<SweepExample>> LoadExamples(const Model& model,
                                                       const std::string& path,
                                                       int limit) {
  PairDatasetOptions options;
  options.format = PairDatasetOptions::Format::kTsv;
  options.header = PairDatasetOptions::Header::kNo;
  options.limit = limit;
  auto rows = ReadPairDataset(path, options);
  if (!rows.ok()) return rows.status();
  const std::vector<std::string>& names = model.config().id2label;
  std::vector<SweepExample> examples;
  for (const PairExample& row : *rows) {
    SweepExample example;
    auto name = std::find(names.begin(), names.end(), row.label);
    if (name != names.end()) {
      example.label = static_cast<int>(name - names.begin());
    } else if (!absl::SimpleAtoi(row.label, &example.label)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", row.line, ": label '", row.label, "' is not a class"));
    }
    auto encoding = model.tokenizer().Encode(
        row.text_a,
        row.text_b.empty() ? std::nullopt
                           : std::optional<std::string_view>(row.text_b),
        model.max_seq_len());
    if (!encoding.ok()) return encoding.status();
    example.encoding = *std::move(encoding);
    examples.push_back(std::move(example));
  }
  return examples;
}

}  // namespace bertology::bench
