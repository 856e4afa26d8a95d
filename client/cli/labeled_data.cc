#include "client/cli/labeled_data.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/pair_dataset.h"

namespace bertology {
namespace client {

std::vector<FlagSpec> DatasetFlags() {
  return {
      {"data", true, "dataset file (.tsv, .csv, .jsonl)", "FILE"},
      {"format", true, "auto (from the extension), tsv, csv or jsonl", "FMT"},
      {"header", true, "auto, yes or no: the first TSV/CSV line is a header",
       "H"},
      {"text-a", true,
       "column (header name, JSON key or 0-based index) of the first text "
       "(default 0)",
       "COL"},
      {"text-b", true,
       "column of the second text (default 1; empty: single texts)", "COL"},
      {"label", true, "column of the label (default 2; empty: none)", "COL"},
      {"label-map", true,
       "label strings to classes, e.g. neg=0,pos=1 (default: the model's "
       "label names, or integers as indices)",
       "MAP"},
      {"limit", true, "read at most N examples", "N"},
  };
}

absl::StatusOr<std::map<std::string, int>> ParseLabelMap(
    const std::string& spec, const std::vector<std::string>& label_names) {
  std::map<std::string, int> out;
  if (spec.empty()) return out;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    std::vector<std::string> kv =
        absl::StrSplit(entry, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--label-map entry '", entry, "' is not LABEL=CLASS"));
    }
    int index = -1;
    for (size_t i = 0; i < label_names.size(); ++i) {
      if (label_names[i] == kv[1]) index = static_cast<int>(i);
    }
    if (index < 0 && !absl::SimpleAtoi(kv[1], &index)) index = -1;
    if (index < 0 || index >= static_cast<int>(label_names.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--label-map: '", kv[1], "' is neither a label of the model (",
          absl::StrJoin(label_names, ", "), ") nor an index below ",
          label_names.size()));
    }
    out[kv[0]] = index;
  }
  return out;
}

absl::StatusOr<int> MapLabel(const std::string& label,
                             const std::map<std::string, int>& label_map,
                             const std::vector<std::string>& label_names) {
  if (!label_map.empty()) {
    auto it = label_map.find(label);
    if (it != label_map.end()) return it->second;
    return absl::InvalidArgumentError(
        absl::StrCat("label '", label, "' is not in --label-map"));
  }
  for (size_t i = 0; i < label_names.size(); ++i) {
    if (label_names[i] == label) return static_cast<int>(i);
  }
  for (size_t i = 0; i < label_names.size(); ++i) {
    if (absl::EqualsIgnoreCase(label_names[i], label)) {
      return static_cast<int>(i);
    }
  }
  int index;
  if (absl::SimpleAtoi(label, &index) && index >= 0 &&
      index < static_cast<int>(label_names.size())) {
    return index;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("label '", label, "' is neither a label of the model (",
                   absl::StrJoin(label_names, ", "), ") nor an index below ",
                   label_names.size(), "; pass --label-map"));
}

namespace {

// "O B-PER -" -> word labels (-1 for "-").
absl::StatusOr<std::vector<int>> MapWordLabels(
    const std::string& labels, const std::map<std::string, int>& label_map,
    const std::vector<std::string>& label_names) {
  std::vector<int> out;
  for (absl::string_view word :
       absl::StrSplit(labels, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    if (word == "-") {
      out.push_back(-1);
      continue;
    }
    absl::StatusOr<int> label =
        MapLabel(std::string(word), label_map, label_names);
    if (!label.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("word ", out.size(), ": ", label.status().message()));
    }
    out.push_back(*label);
  }
  if (out.empty()) return absl::InvalidArgumentError("no word labels");
  return out;
}

// --format and --header into `o`.
absl::Status ReadFormatFlags(const Args& args, PairDatasetOptions* o) {
  const std::string format = absl::AsciiStrToLower(args.Get("format", "auto"));
  if (format == "tsv") {
    o->format = PairDatasetOptions::Format::kTsv;
  } else if (format == "csv") {
    o->format = PairDatasetOptions::Format::kCsv;
  } else if (format == "jsonl" || format == "json") {
    o->format = PairDatasetOptions::Format::kJsonl;
  } else if (format != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", format, " is not auto, tsv, csv or jsonl"));
  }
  const std::string header = args.Get("header", "auto");
  if (header == "yes") {
    o->header = PairDatasetOptions::Header::kYes;
  } else if (header == "no") {
    o->header = PairDatasetOptions::Header::kNo;
  } else if (header != "auto") {
    return absl::InvalidArgumentError("--header is auto, yes or no");
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> WithNoLabelByDefault(std::vector<std::string> argv) {
  if (std::none_of(argv.begin(), argv.end(), [](const std::string& a) {
        return a == "--label" || absl::StartsWith(a, "--label=");
      })) {
    argv.insert(argv.begin(), "--label=");
  }
  return argv;
}

LabelKind LabelKindOf(const v1::ModelInfo& model) {
  return model.head() == v1::MODEL_HEAD_TOKEN_CLASSIFICATION
             ? LabelKind::kPerWord
             : LabelKind::kSequence;
}

absl::StatusOr<LoadedData> LoadLabeledData(
    const Args& args, const std::vector<std::string>& label_names,
    bool require_labels, LabelKind kind) {
  const std::string path = args.Get("data");
  if (path.empty()) return absl::InvalidArgumentError("--data is required");
  PairDatasetOptions o;
  absl::Status s = ReadFormatFlags(args, &o);
  if (!s.ok()) return s;
  o.text_a = args.Get("text-a", "0");
  o.text_b = args.Get("text-b", "1");
  o.label = args.Get("label", "2");
  absl::StatusOr<int> limit = args.GetInt("limit", 0);
  if (!limit.ok()) return limit.status();
  o.limit = *limit;
  if (o.label.empty() && require_labels) {
    return absl::InvalidArgumentError("a sweep needs labels: set --label");
  }
  absl::StatusOr<std::map<std::string, int>> label_map =
      ParseLabelMap(args.Get("label-map"), label_names);
  if (!label_map.ok()) return label_map.status();
  absl::StatusOr<std::vector<PairExample>> rows = ReadPairDataset(path, o);
  if (!rows.ok()) {
    return absl::Status(absl::StatusCode::kDataLoss, rows.status().message());
  }
  if (rows->empty()) {
    return absl::DataLossError(absl::StrCat(path, " has no examples"));
  }
  LoadedData data;
  data.has_labels = !o.label.empty();
  for (PairExample& row : *rows) {
    v1::LabeledExample e;
    e.mutable_input()->set_text_a(std::move(row.text_a));
    e.mutable_input()->set_text_b(std::move(row.text_b));
    if (data.has_labels && kind == LabelKind::kPerWord) {
      absl::StatusOr<std::vector<int>> labels =
          MapWordLabels(row.label, *label_map, label_names);
      if (!labels.ok()) {
        return absl::DataLossError(
            absl::StrCat(path, ":", row.line, ": ", labels.status().message()));
      }
      e.mutable_word_labels()->Add(labels->begin(), labels->end());
    } else if (data.has_labels) {
      absl::StatusOr<int> label = MapLabel(row.label, *label_map, label_names);
      if (!label.ok()) {
        return absl::DataLossError(
            absl::StrCat(path, ":", row.line, ": ", label.status().message()));
      }
      e.set_label(*label);
    }
    data.examples.push_back(std::move(e));
  }
  return data;
}

absl::StatusOr<std::vector<v1::TextInput>> LoadTextInputs(
    const std::string& path, const Args& args, bool column_flags) {
  PairDatasetOptions o;
  if (column_flags) {
    absl::Status s = ReadFormatFlags(args, &o);
    if (!s.ok()) return s;
    o.text_a = args.Get("text-a", "0");
    o.text_b = args.Get("text-b", "1");
  }
  o.label.clear();
  absl::StatusOr<std::vector<PairExample>> rows = ReadPairDataset(path, o);
  if (!rows.ok()) {
    return absl::Status(absl::StatusCode::kDataLoss, rows.status().message());
  }
  if (rows->empty()) {
    return absl::DataLossError(absl::StrCat(path, " has no inputs"));
  }
  std::vector<v1::TextInput> inputs;
  for (PairExample& row : *rows) {
    v1::TextInput& input = inputs.emplace_back();
    input.set_text_a(std::move(row.text_a));
    input.set_text_b(std::move(row.text_b));
  }
  return inputs;
}

ExitCode LoadExitCode(const absl::Status& status) {
  return absl::IsInvalidArgument(status) &&
                 status.message().find(':') == absl::string_view::npos
             ? kExitUsage
             : kExitData;
}

absl::StatusOr<std::vector<v1::TextInput>> CommandInputs(
    const Args& args, const std::vector<std::string>& label_names) {
  std::vector<v1::TextInput> inputs;
  if (args.Has("data")) {
    absl::StatusOr<LoadedData> loaded =
        LoadLabeledData(args, label_names, /*require_labels=*/false);
    if (!loaded.ok()) {
      return CommandError(LoadExitCode(loaded.status()), loaded.status());
    }
    for (const v1::LabeledExample& e : loaded->examples) {
      inputs.push_back(e.input());
    }
    return inputs;
  }
  const std::vector<std::string>& pos = args.positional();
  v1::TextInput input;
  input.set_text_a(args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
  input.set_text_b(args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
  if (input.text_a().empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("give --text-a or --data"));
  }
  inputs.push_back(std::move(input));
  return inputs;
}

}  // namespace client
}  // namespace bertology
