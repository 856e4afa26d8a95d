#include "common/pair_dataset.h"

#include <fstream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace {

using Format = PairDatasetOptions::Format;

bool IsIndex(const std::string& spec, int* index) {
  return !spec.empty() && absl::SimpleAtoi(spec, index) && *index >= 0;
}

// Resolves a column spec against a header (or, without one, as an index).
absl::StatusOr<int> ResolveColumn(const std::string& spec,
                                  const std::vector<std::string>* header,
                                  const std::string& flag,
                                  const std::string& path) {
  if (spec.empty()) return -1;
  int index = 0;
  if (header != nullptr) {
    for (size_t i = 0; i < header->size(); ++i) {
      if ((*header)[i] == spec) return static_cast<int>(i);
    }
    if (IsIndex(spec, &index)) return index;
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": column '", spec, "' (", flag,
                     ") is not in the header: ", absl::StrJoin(*header, ", ")));
  }
  if (IsIndex(spec, &index)) return index;
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": column '", spec, "' (", flag,
      ") is a name but the file has no header; give a 0-based index"));
}

Format DetectFormat(const std::string& path, Format format) {
  if (format != Format::kAuto) return format;
  std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".csv")) return Format::kCsv;
  if (absl::EndsWith(lower, ".jsonl") || absl::EndsWith(lower, ".json")) {
    return Format::kJsonl;
  }
  return Format::kTsv;
}

absl::StatusOr<std::string> JsonField(const nlohmann::json& row,
                                      const std::string& key,
                                      const std::string& where) {
  auto it = row.find(key);
  if (it == row.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no field '", key, "'"));
  }
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<long long>());
  if (it->is_boolean()) return std::string(it->get<bool>() ? "1" : "0");
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": field '", key, "' is not a string or integer"));
}

absl::StatusOr<std::vector<PairExample>> ReadJsonl(
    std::istream& in, const std::string& path,
    const PairDatasetOptions& options) {
  std::vector<PairExample> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::string where = absl::StrCat(path, ":", n);
    nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": not a JSON object"));
    }
    PairExample ex;
    ex.line = n;
    auto a = JsonField(row, options.text_a, where);
    if (!a.ok()) return a.status();
    ex.text_a = *a;
    if (!options.text_b.empty()) {
      auto b = JsonField(row, options.text_b, where);
      if (!b.ok()) return b.status();
      ex.text_b = *b;
    }
    if (!options.label.empty()) {
      auto l = JsonField(row, options.label, where);
      if (!l.ok()) return l.status();
      ex.label = *l;
    }
    out.push_back(std::move(ex));
    if (options.limit > 0 && static_cast<int>(out.size()) >= options.limit) {
      break;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return absl::InvalidArgumentError("unterminated quoted field");
  return fields;
}

absl::StatusOr<std::vector<PairExample>> ReadPairDataset(
    const std::string& path, const PairDatasetOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open dataset"));
  }
  const Format format = DetectFormat(path, options.format);
  if (format == Format::kJsonl) return ReadJsonl(in, path, options);

  bool has_header = options.header == PairDatasetOptions::Header::kYes;
  if (options.header == PairDatasetOptions::Header::kAuto) {
    int unused = 0;
    has_header = !IsIndex(options.text_a, &unused);
  }
  auto split =
      [&](const std::string& line) -> absl::StatusOr<std::vector<std::string>> {
    if (format == Format::kCsv) return SplitCsvLine(line);
    return std::vector<std::string>(absl::StrSplit(line, '\t'));
  };

  std::string line;
  int n = 0;
  std::optional<std::vector<std::string>> header;
  if (has_header) {
    if (!std::getline(in, line)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
    }
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto h = split(line);
    if (!h.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":1: ", h.status().message()));
    header = *h;
  }
  const std::vector<std::string>* hp = header ? &*header : nullptr;
  auto col_a = ResolveColumn(options.text_a, hp, "--text-a", path);
  if (!col_a.ok()) return col_a.status();
  auto col_b = ResolveColumn(options.text_b, hp, "--text-b", path);
  if (!col_b.ok()) return col_b.status();
  auto col_l = ResolveColumn(options.label, hp, "--label", path);
  if (!col_l.ok()) return col_l.status();
  const int need = std::max({*col_a, *col_b, *col_l}) + 1;

  std::vector<PairExample> out;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = split(line);
    if (!fields.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", n, ": ", fields.status().message()));
    }
    if (static_cast<int>(fields->size()) < need) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", n, ": ", fields->size(), " columns, need ", need));
    }
    PairExample ex;
    ex.line = n;
    ex.text_a = (*fields)[*col_a];
    if (*col_b >= 0) ex.text_b = (*fields)[*col_b];
    if (*col_l >= 0) ex.label = (*fields)[*col_l];
    out.push_back(std::move(ex));
    if (options.limit > 0 && static_cast<int>(out.size()) >= options.limit) {
      break;
    }
  }
  return out;
}

}  // namespace bertology
