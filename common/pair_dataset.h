// Labelled text pairs from TSV (GLUE style), CSV or JSONL files.
//
// Used by the trainer and by the CLI's sweeps, so it depends on nothing but
// abseil and nlohmann-json (no libtorch, no gRPC). Columns are chosen by name
// (when the file has a header) or by 0-based index; every bad row is an error
// naming the file and its line.
#ifndef BERTOLOGY_COMMON_PAIR_DATASET_H_
#define BERTOLOGY_COMMON_PAIR_DATASET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

struct PairExample {
  std::string text_a;
  std::string text_b;  // empty when the dataset has no second text
  std::string label;   // as written in the file; empty when unlabelled
  int line = 0;        // 1-based line in the file, for messages
};

struct PairDatasetOptions {
  enum class Format { kAuto, kTsv, kCsv, kJsonl };
  Format format = Format::kAuto;  // kAuto: from the extension
  // Column names (header or JSON keys) or decimal 0-based indices. text_b and
  // label may be empty (absent).
  std::string text_a = "0";
  std::string text_b = "1";
  std::string label = "2";
  // TSV/CSV: whether the first line is a header. kAuto: a header when every
  // column spec is a name rather than an index.
  enum class Header { kAuto, kYes, kNo };
  Header header = Header::kAuto;
  int limit = 0;  // read at most this many rows (0: all)
};

absl::StatusOr<std::vector<PairExample>> ReadPairDataset(
    const std::string& path, const PairDatasetOptions& options);

// Splits one CSV record (RFC 4180 quoting, no embedded newlines).
absl::StatusOr<std::vector<std::string>> SplitCsvLine(const std::string& line);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_PAIR_DATASET_H_
