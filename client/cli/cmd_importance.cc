// `bertology importance` and `bertology prune`: Michel et al. 2019 head
// importance (the HeadImportance RPC) and HF run_bertology.py's pruning
// loop (PruneCurve) over a labelled dataset. With --out-dir they write
// importance.csv/.json and a layers x heads heatmap, or prune_curve.csv/
// .json and the curve as SVG; without it the CSV goes to stdout.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
#include "client/render/file_output.h"
#include "client/render/head_grid_figures.h"
#include "client/render/prune_curve_figure.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

// What both commands share: the connection, the model and its labelled
// examples (word labels for a token classifier), as `sweep` reads them.
struct Job {
  std::unique_ptr<v1::Bertology::Stub> stub;
  ModelAndLimits info;
  std::vector<v1::LabeledExample> examples;
};

absl::Status PrepareJob(const Args& args, Job* job) {
  auto channel = MakeChannel(args, args.Get("target", kDefaultTarget));
  if (!channel.ok()) return CommandError(kExitUsage, channel.status());
  job->stub = v1::Bertology::NewStub(*channel);
  auto info = FetchModelInfo(job->stub.get(), args);
  if (!info.ok()) return CommandError(kExitRpc, info.status());
  job->info = *std::move(info);
  const v1::ModelInfo& model = job->info.model;
  const std::vector<std::string> labels(model.label_names().begin(),
                                        model.label_names().end());
  auto data = LoadLabeledData(args, labels, /*require_labels=*/true,
                              LabelKindOf(model));
  if (!data.ok()) return CommandError(kExitData, data.status());
  job->examples = std::move(data->examples);
  return absl::OkStatus();
}

void ReadOptions(const Args& args, v1::ImportanceOptions* options) {
  options->set_no_layer_norm(args.Has("no-layer-norm"));
  options->set_no_global_norm(args.Has("no-global-norm"));
}

std::vector<FlagSpec> CommonFlags(const char* out_help) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  flags.push_back({"no-layer-norm", false,
                   "do not divide each layer's importances by their L2 norm"});
  flags.push_back(
      {"no-global-norm", false, "do not rescale the importances to [0, 1]"});
  flags.push_back({"out-dir", true, out_help, "DIR"});
  flags.push_back({"quiet", false, "no progress on stderr"});
  return flags;
}

void Progress(bool quiet, const char* what, const v1::SweepProgress& p) {
  if (quiet) return;
  std::fprintf(stderr, "%s %lld/%lld\n", what, static_cast<long long>(p.done()),
               static_cast<long long>(p.total()));
}

std::string ImportanceCsv(const v1::HeadImportanceResult& r) {
  std::string out = "layer,head,importance,raw_importance\n";
  for (int l = 0; l < r.num_layers(); ++l) {
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      absl::StrAppend(&out, l, ",", h, ",",
                      absl::StrFormat("%.17g", r.importance(k)), ",",
                      absl::StrFormat("%.17g", r.raw_importance(k)), "\n");
    }
  }
  return out;
}

nlohmann::json ImportanceJson(const std::string& model,
                              const v1::HeadImportanceResult& r) {
  nlohmann::json importance = nlohmann::json::array();
  nlohmann::json raw = nlohmann::json::array();
  for (int l = 0; l < r.num_layers(); ++l) {
    nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
    for (int h = 0; h < r.num_heads(); ++h) {
      a.push_back(r.importance(l * r.num_heads() + h));
      b.push_back(r.raw_importance(l * r.num_heads() + h));
    }
    importance.push_back(a);
    raw.push_back(b);
  }
  return {{"model", model},
          {"num_layers", r.num_layers()},
          {"num_heads", r.num_heads()},
          {"examples", r.examples()},
          {"scored", r.scored()},
          {"correct", r.correct()},
          {"accuracy", r.accuracy()},
          {"loss_sum", r.loss_sum()},
          {"importance", importance},
          {"raw_importance", raw}};
}

nlohmann::json HeadsJson(
    const google::protobuf::RepeatedPtrField<v1::LayerHead>& heads) {
  nlohmann::json out = nlohmann::json::array();
  for (const v1::LayerHead& lh : heads) out.push_back({lh.layer(), lh.head()});
  return out;
}

nlohmann::json StepJson(const v1::PruneStep& s) {
  return {{"step", s.step()},
          {"heads_left", s.heads_left()},
          {"accuracy", s.accuracy()},
          {"loss_sum", s.loss_sum()},
          {"masked", HeadsJson(s.masked())},
          {"masked_this_step", HeadsJson(s.masked_this_step())}};
}

std::string HeadsString(
    const google::protobuf::RepeatedPtrField<v1::LayerHead>& heads) {
  std::string out;
  for (const v1::LayerHead& lh : heads) {
    absl::StrAppend(&out, out.empty() ? "" : ";", "L", lh.layer(), "H",
                    lh.head());
  }
  return out;
}

std::string PruneCsv(const std::vector<v1::PruneStep>& steps) {
  std::string out = "step,heads_left,accuracy,loss_sum,masked_this_step\n";
  for (const v1::PruneStep& s : steps) {
    absl::StrAppend(&out, s.step(), ",", s.heads_left(), ",",
                    absl::StrFormat("%.17g", s.accuracy()), ",",
                    absl::StrFormat("%.17g", s.loss_sum()), ",",
                    HeadsString(s.masked_this_step()), "\n");
  }
  return out;
}

void PrintWritten(const std::vector<std::string>& written) {
  for (const std::string& path : written) std::printf("%s\n", path.c_str());
}

}  // namespace

absl::Status RunImportance(const Argv& argv) {
  constexpr char kCommand[] = "importance";
  std::vector<FlagSpec> flags = CommonFlags(
      "write importance.csv, importance.json and importance.svg here");
  // The mask flags without resample's: its draws have no gradient form.
  for (FlagSpec& f : HeadMaskFlags()) {
    if (f.name == "draws" || f.name == "seed") continue;
    if (f.name == "mode") {
      f.help =
          "zero (HF head_mask), uniform or mean (the gradient toward each "
          "head's mean output; needs --statistics or --reference)";
    }
    flags.push_back(f);
  }
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs(
          "Usage: bertology importance --data=FILE [column flags] [mask] "
          "[--no-layer-norm] [--no-global-norm] [--out-dir=DIR]\n"
          "Head importance (Michel et al. 2019): the sum over the labelled "
          "examples of\n|d loss / d mask| per head, normalised per layer "
          "and to [0, 1] as HF's\nrun_bertology.py does, under the mask.",
          flags, argv));
  // The server refuses resample here (its draws have no gradient form);
  // say so before any work.
  const absl::StatusOr<v1::AblationMode> mode = ParseMode(args);
  if (mode.ok() && *mode == v1::ABLATION_MODE_RESAMPLE) {
    return CommandError(
        kExitUsage,
        absl::InvalidArgumentError(
            "--mode=resample: importance takes a mask in mode zero, "
            "uniform or mean"));
  }
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  Job job;
  RETURN_IF_ERROR(PrepareJob(args, &job));
  RETURN_IF_ERROR(ResolveMaskStatistics(job.stub.get(), args,
                                        /*column_flags=*/true,
                                        mask->mutable_statistics()));
  v1::HeadImportanceRequest request;
  request.set_model(args.Get("model"));
  *request.mutable_head_mask() = *mask;
  ReadOptions(args, request.mutable_options());
  for (const v1::LabeledExample& e : job.examples) *request.add_examples() = e;
  auto context = NewContext(args, absl::Hours(1));
  if (!context.ok()) return CommandError(kExitUsage, context.status());
  auto reader = job.stub->HeadImportance(context->get(), request);
  auto result = ReadResultStream<v1::HeadImportanceResponse>(
      reader.get(), args.Has("quiet"), "scored", "examples");
  if (!result.ok()) return CommandError(kExitRpc, result.status());
  if (!args.Has("out-dir")) {
    std::printf("%s", ImportanceCsv(*result).c_str());
    return absl::OkStatus();
  }
  const std::string dir = args.Get("out-dir");
  const std::string& model = job.info.model.name();
  std::vector<std::string> written;
  absl::Status s = render::WriteOutputFile(dir, "importance.csv",
                                           ImportanceCsv(*result), &written);
  if (s.ok()) {
    s = render::WriteOutputFile(dir, "importance.json",
                                ImportanceJson(model, *result).dump(2) + "\n",
                                &written);
  }
  if (s.ok()) {
    render::HeadGrid grid;
    grid.title = "Head importance (|d loss / d mask|, normalised)";
    grid.subtitle =
        absl::StrCat(model, " · ", result->examples(), " examples, accuracy ",
                     absl::StrFormat("%.4f", result->accuracy()));
    grid.num_layers = result->num_layers();
    grid.num_heads = result->num_heads();
    grid.values.assign(result->importance().begin(),
                       result->importance().end());
    s = render::WriteOutputFile(dir, "importance.svg",
                                render::HeadGridSvg(grid), &written);
  }
  if (!s.ok()) return CommandError(kExitData, s);
  PrintWritten(written);
  return absl::OkStatus();
}

absl::Status RunPrune(const Argv& argv) {
  constexpr char kCommand[] = "prune";
  std::vector<FlagSpec> flags = CommonFlags(
      "write prune_curve.csv, prune_curve.json and prune_curve.svg here");
  flags.push_back({"threshold", true,
                   "stop below this share of the unmasked accuracy (0.9)",
                   "X"});
  flags.push_back({"step", true,
                   "share of all heads masked per step (0.1, at least one)",
                   "X"});
  flags.push_back({"mode", true,
                   "how pruned heads are masked (mean: toward the heads' "
                   "mean outputs, with --statistics or --reference)",
                   "zero|uniform|mean"});
  for (FlagSpec& f : ReferenceFlags()) {
    if (f.name == "statistics" || f.name == "reference") flags.push_back(f);
  }
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs(
          "Usage: bertology prune --data=FILE [column flags] [--threshold=X] "
          "[--step=X]\n       [--mode=zero|uniform|mean [--statistics=ID | "
          "--reference=FILE]] [--out-dir=DIR]\n"
          "HF run_bertology.py's pruning loop: mask the least important "
          "heads a step at\na time, recomputing importance, until accuracy "
          "falls below the threshold.",
          flags, argv));
  v1::PruneCurveRequest request;
  request.set_model(args.Get("model"));
  for (const auto& [flag, setter] :
       {std::pair<const char*, void (v1::PruneCurveRequest::*)(double)>{
            "threshold", &v1::PruneCurveRequest::set_threshold},
        {"step", &v1::PruneCurveRequest::set_step_fraction}}) {
    if (!args.Has(flag)) continue;
    double v = 0;
    if (!absl::SimpleAtod(args.Get(flag), &v)) {
      return CommandError(kExitUsage, absl::InvalidArgumentError(absl::StrCat(
                                          "--", flag, "=", args.Get(flag),
                                          " is not a number")));
    }
    (request.*setter)(v);
  }
  const std::string mode = args.Get("mode", "zero");
  if (mode != "zero" && mode != "uniform" && mode != "mean") {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError(absl::StrCat(
                            "--mode=", mode, " is not zero, uniform or mean")));
  }
  request.set_mode(mode == "uniform" ? v1::ABLATION_MODE_UNIFORM
                   : mode == "mean"  ? v1::ABLATION_MODE_MEAN
                                     : v1::ABLATION_MODE_ZERO);
  if (absl::Status s = CheckReferenceFlags(args, request.mode()); !s.ok()) {
    return CommandError(kExitUsage, s);
  }
  ReadOptions(args, request.mutable_options());
  Job job;
  RETURN_IF_ERROR(PrepareJob(args, &job));
  // --statistics as it is, or --reference computed to an id first.
  request.set_statistics(args.Get("statistics"));
  RETURN_IF_ERROR(ResolveMaskStatistics(job.stub.get(), args,
                                        /*column_flags=*/true,
                                        request.mutable_statistics()));
  for (const v1::LabeledExample& e : job.examples) *request.add_examples() = e;
  auto context = NewContext(args, absl::Hours(6));
  if (!context.ok()) return CommandError(kExitUsage, context.status());
  auto reader = job.stub->PruneCurve(context->get(), request);
  v1::PruneCurveResponse event;
  std::vector<v1::PruneStep> steps;
  std::optional<v1::PruneStep> kept;
  while (reader->Read(&event)) {
    if (event.has_progress()) {
      Progress(args.Has("quiet"), "passes", event.progress());
    } else if (event.has_step()) {
      steps.push_back(event.step());
      if (!args.Has("quiet")) {
        std::fprintf(stderr, "step %d: %d heads left, accuracy %.4f\n",
                     event.step().step(), event.step().heads_left(),
                     event.step().accuracy());
      }
    } else if (event.has_kept()) {
      kept = event.kept();
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return CommandError(kExitRpc, s);
  if (steps.empty() || !kept) {
    return CommandError(kExitRpc,
                        absl::InternalError("the server sent no steps"));
  }
  if (!args.Has("out-dir")) {
    std::printf("%s", PruneCsv(steps).c_str());
    return absl::OkStatus();
  }
  const double threshold = request.threshold() > 0 ? request.threshold() : 0.9;
  nlohmann::json j{{"model", job.info.model.name()},
                   {"threshold", threshold},
                   {"steps", nlohmann::json::array()},
                   {"kept", StepJson(*kept)}};
  std::vector<render::PrunePoint> points;
  for (const v1::PruneStep& step : steps) {
    j["steps"].push_back(StepJson(step));
    points.push_back({step.step(), step.heads_left(), step.accuracy()});
  }
  const std::string dir = args.Get("out-dir");
  const int total = job.info.model.num_layers() * job.info.model.num_heads();
  std::vector<std::string> written;
  s = render::WriteOutputFile(dir, "prune_curve.csv", PruneCsv(steps),
                              &written);
  if (s.ok()) {
    s = render::WriteOutputFile(dir, "prune_curve.json", j.dump(2) + "\n",
                                &written);
  }
  if (s.ok()) {
    const std::string subtitle =
        absl::StrCat(job.info.model.name(), " · ", job.examples.size(),
                     " examples · kept step ", kept->step(), " (",
                     kept->heads_left(), " heads)");
    s = render::WriteOutputFile(
        dir, "prune_curve.svg",
        render::PruneCurveSvg(subtitle, total, points,
                              threshold * steps.front().accuracy(),
                              kept->step()),
        &written);
  }
  if (!s.ok()) return CommandError(kExitData, s);
  PrintWritten(written);
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
