// Examples for `classify` and `sweep` from a dataset file (TSV, CSV, JSONL
// through bertology_data), with labels mapped to the model's class indices.
#ifndef BERTOLOGY_CLIENT_CLI_LABELED_DATA_H_
#define BERTOLOGY_CLIENT_CLI_LABELED_DATA_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "client/cli/args.h"
#include "client/cli/exit_codes.h"

namespace bertology {
namespace client {

// --data, --format, --header, --text-a, --text-b, --label, --label-map,
// --limit.
std::vector<FlagSpec> DatasetFlags();

// "neg=0,pos=1" (indices) or "neg=negative,..." (label names) into
// label string -> class index. INVALID_ARGUMENT for a bad entry.
absl::StatusOr<std::map<std::string, int>> ParseLabelMap(
    const std::string& spec, const std::vector<std::string>& label_names);

// A label as written in the file -> class index: through `label_map` when it
// is not empty, else the model's label name (exact, then ignoring case), else
// a decimal index in range. INVALID_ARGUMENT saying what was tried.
absl::StatusOr<int> MapLabel(const std::string& label,
                             const std::map<std::string, int>& label_map,
                             const std::vector<std::string>& label_names);

struct LoadedData {
  std::vector<v1::LabeledExample> examples;
  bool has_labels = false;
};

// What the --label column holds.
enum class LabelKind {
  kSequence,  // one label per row (a sequence classifier)
  // One label per word, separated by spaces ("O B-PER I-PER O"), each
  // mapped as MapLabel does; "-" for a word not scored. For a token
  // classifier: LabeledExample.word_labels.
  kPerWord,
};

// `argv` with "--label=" (no label column) put first unless it gives
// --label itself: for commands that need no labels (analyze, segment), so a
// dataset's label column is not mapped and refused by a model with no
// classifier; giving --label still reads and checks one.
std::vector<std::string> WithNoLabelByDefault(std::vector<std::string> argv);

// kPerWord for a token classifier, else kSequence.
LabelKind LabelKindOf(const v1::ModelInfo& model);

// Reads --data with the column flags. `require_labels`: a missing --label
// column is an error. Errors (DATA_LOSS / INVALID_ARGUMENT) name the file
// and line.
absl::StatusOr<LoadedData> LoadLabeledData(
    const Args& args, const std::vector<std::string>& label_names,
    bool require_labels, LabelKind kind = LabelKind::kSequence);

// The inputs of a dataset file with the labels ignored (mean/resample
// ablation's reference set). `column_flags`: read --format, --header,
// --text-a and --text-b as for --data (the reference file then has the
// layout of the dataset); otherwise the defaults (columns 0 and 1), for
// commands whose --text-a is a text, not a column. DATA_LOSS naming the
// file for an unreadable or empty one.
absl::StatusOr<std::vector<v1::TextInput>> LoadTextInputs(
    const std::string& path, const Args& args, bool column_flags);

// The exit code of an error from LoadLabeledData: kExitUsage for a flag
// (INVALID_ARGUMENT with no "file:line: " or "--flag: " prefix, e.g.
// "--data is required"), kExitData for the dataset and everything else.
ExitCode LoadExitCode(const absl::Status& status);

// The inputs of a command that takes either --data (with the column flags;
// labels mapped with `label_names` only where --label names a column) or
// one text: --text-a/--text-b, or the first two positional arguments.
// Errors carry their exit code (exit_codes.h): LoadExitCode's for --data,
// kExitUsage for a missing text ("give --text-a or --data").
absl::StatusOr<std::vector<v1::TextInput>> CommandInputs(
    const Args& args, const std::vector<std::string>& label_names);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_LABELED_DATA_H_
