// `bertology analyze`: per-head attention statistics and pattern classes
// over a dataset or one text/pair (the AnalyzeHeads RPC), printed as a
// table or written with --out-dir as head_stats.csv, head_stats.json and
// one layers x heads SVG heatmap per statistic plus the pattern grid. With
// --per-map, each head's share of maps in each class too (map_* columns,
// "map_pattern_share" in the JSON).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
#include "client/render/file_output.h"
#include "client/render/head_grid_figures.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

struct Statistic {
  const char* name;   // CSV column, JSON key, file stem
  const char* title;  // the heatmap's title
  const google::protobuf::RepeatedField<float>& (
      v1::HeadStatistics::*get)() const;
  int decimals;
  double scale_max;  // 0: the largest value (see HeadGrid)
};

const std::vector<Statistic>& Statistics() {
  using S = v1::HeadStatistics;
  static const std::vector<Statistic> kStats = {
      {"to_cls", "Mean attention to [CLS]", &S::to_cls, 2, 1},
      {"to_sep", "Mean attention to [SEP]", &S::to_sep, 2, 1},
      {"to_punctuation", "Mean attention to punctuation", &S::to_punctuation, 2,
       1},
      {"to_self", "Mean attention to the token itself", &S::to_self, 2, 1},
      {"to_previous", "Mean attention to the previous token", &S::to_previous,
       2, 1},
      {"to_next", "Mean attention to the next token", &S::to_next, 2, 1},
      {"entropy", "Mean entropy of the attention (nats)", &S::entropy, 2, 0},
      {"cross_segment_match",
       "Attention to the same token in the other segment",
       &S::cross_segment_match, 2, 1},
      {"mean_distance", "Mean attention distance (tokens)", &S::mean_distance,
       1, 0},
      {"to_own_segment", "Attention within the token's own segment",
       &S::to_own_segment, 2, 1},
      {"vertical", "V: attention to [CLS] and [SEP] (the pattern rules')",
       &S::vertical, 2, 1},
      {"diagonal",
       "D: to the previous, same and next token, not [CLS]/[SEP] (the "
       "pattern rules')",
       &S::diagonal, 2, 1},
  };
  return kStats;
}

// The per-map classes in AnalyzeHeadsResult.map_pattern_share's order
// (AttentionPattern - 1), as CSV columns and JSON keys.
constexpr const char* kMapClasses[] = {
    "vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous"};
constexpr int kNumMapClasses = 5;

// The share of head k's maps in class c (0-based), NaN when not sent.
float MapShare(const v1::AnalyzeHeadsResult& r, int k, int c) {
  const int i = k * kNumMapClasses + c;
  return i < r.map_pattern_share_size() ? r.map_pattern_share(i) : NAN;
}

std::string PatternName(v1::AttentionPattern p) {
  switch (p) {
    case v1::ATTENTION_PATTERN_VERTICAL:
      return "vertical";
    case v1::ATTENTION_PATTERN_DIAGONAL:
      return "diagonal";
    case v1::ATTENTION_PATTERN_VERTICAL_DIAGONAL:
      return "vertical+diagonal";
    case v1::ATTENTION_PATTERN_BLOCK:
      return "block";
    case v1::ATTENTION_PATTERN_HETEROGENEOUS:
      return "heterogeneous";
    default:
      return "unspecified";
  }
}

// Round-trippable float text, "nan" for NaN (CSV has no null).
std::string Number(float v) {
  return std::isnan(v) ? "nan" : absl::StrFormat("%.9g", v);
}

std::string Csv(const v1::AnalyzeHeadsResult& r) {
  std::string out = "layer,head";
  for (const Statistic& s : Statistics()) absl::StrAppend(&out, ",", s.name);
  absl::StrAppend(&out, ",pattern");
  const bool per_map = r.map_pattern_share_size() > 0;
  if (per_map) {
    for (const char* c : kMapClasses) absl::StrAppend(&out, ",map_", c);
  }
  absl::StrAppend(&out, "\n");
  const v1::HeadStatistics& st = r.stats();
  for (int l = 0; l < r.num_layers(); ++l) {
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      absl::StrAppend(&out, l, ",", h);
      for (const Statistic& s : Statistics()) {
        const auto& values = (st.*s.get)();
        absl::StrAppend(&out, ",",
                        k < values.size() ? Number(values[k]) : "nan");
      }
      absl::StrAppend(
          &out, ",",
          k < st.pattern_size() ? PatternName(st.pattern(k)) : "unspecified");
      for (int c = 0; per_map && c < kNumMapClasses; ++c) {
        absl::StrAppend(&out, ",", Number(MapShare(r, k, c)));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  return out;
}

nlohmann::json Json(const std::string& model, const v1::AnalyzeHeadsResult& r) {
  auto num = [](float v) -> nlohmann::json {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  nlohmann::json j{{"model", model},
                   {"num_layers", r.num_layers()},
                   {"num_heads", r.num_heads()},
                   {"examples", r.examples()},
                   {"truncated_examples", r.truncated_examples()},
                   {"pair_examples", r.pair_examples()},
                   {"examples_with_match", r.examples_with_match()},
                   {"own_segment_share", num(r.own_segment_share())}};
  // Each statistic as [layers][heads] (null for NaN).
  for (const Statistic& s : Statistics()) {
    const auto& values = (r.stats().*s.get)();
    nlohmann::json rows = nlohmann::json::array();
    for (int l = 0; l < r.num_layers(); ++l) {
      nlohmann::json row = nlohmann::json::array();
      for (int h = 0; h < r.num_heads(); ++h) {
        const int k = l * r.num_heads() + h;
        row.push_back(k < values.size() ? num(values[k]) : nullptr);
      }
      rows.push_back(row);
    }
    j["stats"][s.name] = rows;
  }
  nlohmann::json patterns = nlohmann::json::array();
  for (int l = 0; l < r.num_layers(); ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      row.push_back(k < r.stats().pattern_size()
                        ? PatternName(r.stats().pattern(k))
                        : "unspecified");
    }
    patterns.push_back(row);
  }
  j["pattern"] = patterns;
  if (r.map_pattern_share_size() > 0) {
    // {class: [layers][heads]}: the share of each head's maps in the class.
    for (int c = 0; c < kNumMapClasses; ++c) {
      nlohmann::json rows = nlohmann::json::array();
      for (int l = 0; l < r.num_layers(); ++l) {
        nlohmann::json row = nlohmann::json::array();
        for (int h = 0; h < r.num_heads(); ++h) {
          row.push_back(num(MapShare(r, l * r.num_heads() + h, c)));
        }
        rows.push_back(row);
      }
      j["map_pattern_share"][kMapClasses[c]] = rows;
    }
  }
  return j;
}

// What `analyze` writes: the CSV on stdout, or with --out-dir the CSV, JSON,
// one heatmap per statistic and the pattern grid.
CommandOutput AnalyzeOutput(const Args& args, const std::string& model,
                            const v1::AnalyzeHeadsResult& r) {
  CommandOutput out;
  if (!args.Has("out-dir")) {
    out.stdout_text = Csv(r);
    return out;
  }
  out.dir = args.Get("out-dir");
  out.files = {{"head_stats.csv", Csv(r)},
               {"head_stats.json", Json(model, r).dump(2) + "\n"}};
  const std::string subtitle =
      absl::StrCat(model.empty() ? "" : model + " · ", r.examples(),
                   " examples (", r.pair_examples(), " pairs)");
  for (const Statistic& stat : Statistics()) {
    render::HeadGrid grid;
    grid.title = stat.title;
    grid.subtitle = subtitle;
    grid.num_layers = r.num_layers();
    grid.num_heads = r.num_heads();
    for (float v : (r.stats().*stat.get)()) grid.values.push_back(v);
    grid.scale_max = stat.scale_max;
    grid.decimals = stat.decimals;
    out.files.push_back(
        {absl::StrCat(stat.name, ".svg"), render::HeadGridSvg(grid)});
  }
  std::vector<std::string> names;
  for (int p : r.stats().pattern()) {
    names.push_back(PatternName(static_cast<v1::AttentionPattern>(p)));
  }
  out.files.push_back(
      {"patterns.svg",
       render::PatternGridSvg(subtitle, r.num_layers(), r.num_heads(), names)});
  return out;
}

constexpr char kUsage[] =
    "Usage: bertology analyze --data=FILE [column flags] [mask] "
    "[--out-dir=DIR]\n"
    "       bertology analyze --text-a=TEXT [--text-b=TEXT] [mask] "
    "[--out-dir=DIR]\n"
    "Per-head attention statistics (Clark et al. 2019: to [CLS], "
    "[SEP],\npunctuation, self, previous, next; entropy; distance; "
    "cross-segment\nterm matching) and pattern classes (Kovaleva et al. "
    "2019) over the\ninputs, under the mask. Labels are not read "
    "(--label "
    "defaults to none).\nWithout --out-dir, prints the CSV. --per-map "
    "classifies every example's map\nof each head as well and adds "
    "the share of its maps in each class.";

std::vector<FlagSpec> AnalyzeFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  flags.push_back({"out-dir", true,
                   "write head_stats.csv, head_stats.json, one SVG heatmap "
                   "per statistic and patterns.svg here",
                   "DIR"});
  flags.push_back({"per-map", false,
                   "also classify each example's map of each head and report "
                   "the share of each head's maps per class"});
  flags.push_back({"quiet", false, "no progress on stderr"});
  return flags;
}

}  // namespace

absl::Status RunAnalyze(const Argv& argv) {
  // Statistics need no labels: --label defaults to none here.
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, AnalyzeFlags(),
                                               WithNoLabelByDefault(argv)));
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  RETURN_IF_ERROR(ResolveMaskStatistics(
      server.stub.get(), args, args.Has("data"), mask->mutable_statistics()));
  v1::AnalyzeHeadsRequest request;
  request.set_model(args.Get("model"));
  *request.mutable_head_mask() = *mask;
  request.set_per_map_classes(args.Has("per-map"));
  const std::vector<std::string> labels(server.info.model.label_names().begin(),
                                        server.info.model.label_names().end());
  ASSIGN_OR_RETURN(std::vector<v1::TextInput> inputs,
                   CommandInputs(args, labels));
  for (v1::TextInput& input : inputs) *request.add_inputs() = std::move(input);
  // One call: the statistics are means that the server classifies into
  // patterns.
  RETURN_IF_ERROR(CheckOneCallLimit(request.inputs_size(), server.info.limits));
  ASSIGN_OR_RETURN(const auto read, CallResultStream<v1::AnalyzeHeadsResponse>(
                                        args,
                                        [&](grpc::ClientContext* context) {
                                          return server.stub->AnalyzeHeads(
                                              context, request);
                                        },
                                        "analyzed", "examples"));
  return EmitOutput(AnalyzeOutput(args, server.info.model.name(), read));
}

}  // namespace client
}  // namespace bertology
