// `bertology compare`: per-head cosine similarity of two models' attention
// maps over a dataset or one text/pair (the CompareAttention RPC), printed
// as CSV or written with --out-dir as similarity.csv, similarity.json and a
// layers x heads heatmap (similarity.svg), plus, with --detail, one head's
// difference map on one input (difference.svg; its maps in the JSON).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/render/difference_map_figure.h"
#include "client/render/file_output.h"
#include "client/render/head_grid_figures.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

// Round-trippable double text, "nan" for NaN (CSV has no null).
std::string Number(double v) {
  return std::isnan(v) ? "nan" : absl::StrFormat("%.17g", v);
}

std::string Csv(const v1::CompareAttentionResult& r) {
  std::string out = "layer,head,cosine_similarity\n";
  for (int l = 0; l < r.num_layers(); ++l) {
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      absl::StrAppend(&out, l, ",", h, ",",
                      k < r.cosine_similarity_size()
                          ? Number(r.cosine_similarity(k))
                          : "nan",
                      "\n");
    }
  }
  return out;
}

// Little-endian float32 bytes (AttentionDifference's maps) as floats.
std::vector<float> DecodeFloat32(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

nlohmann::json Rows(const std::vector<float>& values, int t) {
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; i < t; ++i) {
    rows.push_back(std::vector<float>(values.begin() + i * t,
                                      values.begin() + (i + 1) * t));
  }
  return rows;
}

nlohmann::json Json(const v1::CompareAttentionResult& r) {
  nlohmann::json j{{"model_a", r.model_a()},
                   {"model_b", r.model_b()},
                   {"num_layers", r.num_layers()},
                   {"num_heads", r.num_heads()},
                   {"examples", r.examples()},
                   {"truncated_examples", r.truncated_examples()}};
  // [layers][heads], null for NaN.
  nlohmann::json rows = nlohmann::json::array();
  for (int l = 0; l < r.num_layers(); ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      const double v =
          k < r.cosine_similarity_size() ? r.cosine_similarity(k) : NAN;
      row.push_back(std::isnan(v) ? nlohmann::json(nullptr)
                                  : nlohmann::json(v));
    }
    rows.push_back(row);
  }
  j["cosine_similarity"] = rows;
  if (r.has_detail()) {
    const v1::AttentionDifference& d = r.detail();
    nlohmann::json tokens = nlohmann::json::array();
    for (const v1::Token& t : d.tokens()) tokens.push_back(t.text());
    j["detail"] = {
        {"example", d.example()},
        {"layer", d.layer()},
        {"head", d.head()},
        {"tokens", tokens},
        {"map_a", Rows(DecodeFloat32(d.map_a()), d.size())},
        {"map_b", Rows(DecodeFloat32(d.map_b()), d.size())},
        {"difference", Rows(DecodeFloat32(d.difference()), d.size())}};
  }
  return j;
}

// What `compare` writes: the CSV on stdout, or with --out-dir the CSV, JSON,
// the similarity grid and (with --detail) the difference map.
CommandOutput CompareOutput(const Args& args,
                            const v1::CompareAttentionResult& r) {
  CommandOutput out;
  if (!args.Has("out-dir")) {
    out.stdout_text = Csv(r);
    return out;
  }
  out.dir = args.Get("out-dir");
  const std::string models =
      absl::StrCat(r.model_a(), " vs ", r.model_b(), " · ");
  render::HeadGrid grid;
  grid.title = "Cosine similarity of the attention maps";
  grid.subtitle = absl::StrCat(models, r.examples(), " inputs");
  grid.num_layers = r.num_layers();
  grid.num_heads = r.num_heads();
  grid.values.assign(r.cosine_similarity().begin(),
                     r.cosine_similarity().end());
  // Attention maps are non-negative, so the cosine lies in [0, 1].
  grid.scale_max = 1;
  grid.decimals = 2;
  out.files = {{"similarity.csv", Csv(r)},
               {"similarity.json", Json(r).dump(2) + "\n"},
               {"similarity.svg", render::HeadGridSvg(grid)}};
  if (r.has_detail()) {
    const v1::AttentionDifference& d = r.detail();
    render::DifferenceMap map;
    map.title = absl::StrFormat("L%d H%d: %s minus %s", d.layer(), d.head(),
                                r.model_b(), r.model_a());
    map.subtitle = absl::StrCat(models, "input ", d.example(),
                                " · red: more attention in ", r.model_b());
    for (const v1::Token& t : d.tokens()) map.tokens.push_back(t.text());
    for (float v : DecodeFloat32(d.difference())) map.values.push_back(v);
    out.files.push_back({"difference.svg", render::DifferenceMapSvg(map)});
  }
  return out;
}

// "EXAMPLE:LAYER:HEAD", three non-negative integers (ranges are the
// server's to check: it knows the model).
absl::Status ParseDetail(const std::string& spec,
                         v1::CompareAttentionRequest* request) {
  const std::vector<std::string> parts = absl::StrSplit(spec, ':');
  int values[3];
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &values[0]) ||
      !absl::SimpleAtoi(parts[1], &values[1]) ||
      !absl::SimpleAtoi(parts[2], &values[2]) ||
      *std::min_element(values, values + 3) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--detail=", spec, " is not EXAMPLE:LAYER:HEAD (e.g. 0:2:1)"));
  }
  request->set_with_detail(true);
  request->set_detail_example(values[0]);
  request->mutable_detail_head()->set_layer(values[1]);
  request->mutable_detail_head()->set_head(values[2]);
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "Usage: bertology compare --model-a=A --model-b=B --data=FILE "
    "[column flags] [mask]\n"
    "           [--detail=EXAMPLE:LAYER:HEAD] [--out-dir=DIR]\n"
    "       bertology compare --model-a=A --model-b=B --text-a=TEXT "
    "[--text-b=TEXT] ...\n"
    "Per head, the mean over the inputs of the cosine similarity of "
    "the two\nmodels' attention maps (Kovaleva et al. 2019, Figure 3), "
    "under the mask\n(applied to both). The models must share layers x "
    "heads and tokenization.\nWithout --out-dir, prints the CSV.";

std::vector<FlagSpec> CompareFlags() {
  std::vector<FlagSpec> flags;
  // --model names one model; this command takes two.
  for (FlagSpec& f : ConnectionFlags()) {
    if (f.name != "model") flags.push_back(f);
  }
  flags.push_back({"model-a", true,
                   "the first model (e.g. before fine-tuning); default: the "
                   "server's default",
                   "NAME"});
  flags.push_back({"model-b", true,
                   "the second model (e.g. after); default: the server's "
                   "default",
                   "NAME"});
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  flags.push_back({"detail", true,
                   "also write the difference map (b - a) of this head on "
                   "this input (0-based)",
                   "EXAMPLE:LAYER:HEAD"});
  flags.push_back({"out-dir", true,
                   "write similarity.csv, similarity.json, similarity.svg "
                   "and, with --detail, difference.svg here",
                   "DIR"});
  flags.push_back({"quiet", false, "no progress on stderr"});
  return flags;
}

// The request from the flags alone (the inputs come from the data later);
// kExitUsage errors.
absl::StatusOr<v1::CompareAttentionRequest> BuildCompareRequest(
    const Args& args) {
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  // Statistics belong to one model and this command runs two: an id
  // computed beforehand (bertology statistics) is the caller's choice.
  if (args.Has("reference")) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError(
                            "compare runs two models: pass --statistics=ID "
                            "(bertology statistics) instead of --reference"));
  }
  v1::CompareAttentionRequest request;
  request.set_model_a(args.Get("model-a"));
  request.set_model_b(args.Get("model-b"));
  *request.mutable_head_mask() = *mask;
  if (args.Has("detail")) {
    absl::Status s = ParseDetail(args.Get("detail"), &request);
    if (!s.ok()) return CommandError(kExitUsage, s);
  }
  return request;
}

// The inputs (--data or one text), within the server's
// max_examples_per_sweep: the similarities are means over all inputs, so a
// dataset over the limit is refused rather than merged from several calls.
absl::Status AddInputs(const Args& args, const v1::ServerLimits& limits,
                       v1::CompareAttentionRequest* request) {
  ASSIGN_OR_RETURN(std::vector<v1::TextInput> inputs, CommandInputs(args, {}));
  for (v1::TextInput& input : inputs) *request->add_inputs() = std::move(input);
  if (request->inputs().empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("the data has no inputs"));
  }
  return CheckOneCallLimit(request->inputs_size(), limits);
}

}  // namespace

absl::Status RunCompare(const Argv& argv) {
  // No labels are read: --label defaults to none (as in analyze).
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, CompareFlags(),
                                               WithNoLabelByDefault(argv)));
  ASSIGN_OR_RETURN(v1::CompareAttentionRequest request,
                   BuildCompareRequest(args));
  // The limits (and that the server answers) before reading the data.
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  RETURN_IF_ERROR(AddInputs(args, server.info.limits, &request));
  ASSIGN_OR_RETURN(const auto read,
                   CallResultStream<v1::CompareAttentionResponse>(
                       args,
                       [&](grpc::ClientContext* context) {
                         return server.stub->CompareAttention(context, request);
                       },
                       "compared", "inputs"));
  return EmitOutput(CompareOutput(args, read));
}

}  // namespace client
}  // namespace bertology
