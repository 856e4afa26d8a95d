// `bertology importance` and `bertology prune`: Michel et al. 2019 head
// importance (the HeadImportance RPC) and HF run_bertology.py's pruning
// loop (PruneCurve) over a labelled dataset. With --out-dir they write
// importance.csv/.json and a layers x heads heatmap, or prune_curve.csv/
// .json and the curve as SVG; without it the CSV goes to stdout.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
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
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  job->stub = std::move(server.stub);
  job->info = std::move(server.info);
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

constexpr char kImportanceUsage[] =
    "Usage: bertology importance --data=FILE [column flags] [mask] "
    "[--no-layer-norm] [--no-global-norm] [--out-dir=DIR]\n"
    "Head importance (Michel et al. 2019): the sum over the labelled "
    "examples of\n|d loss / d mask| per head, normalised per layer "
    "and to [0, 1] as HF's\nrun_bertology.py does, under the mask.";

constexpr char kPruneUsage[] =
    "Usage: bertology prune --data=FILE [column flags] [--threshold=X] "
    "[--step=X]\n       [--mode=zero|uniform|mean [--statistics=ID | "
    "--reference=FILE]] [--out-dir=DIR]\n"
    "HF run_bertology.py's pruning loop: mask the least important "
    "heads a step at\na time, recomputing importance, until accuracy "
    "falls below the threshold.";

std::vector<FlagSpec> ImportanceFlags() {
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
  return flags;
}

std::vector<FlagSpec> PruneFlags() {
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
  return flags;
}

// The request from the flags alone (the examples and a --reference's
// statistics id come from the server later); kExitUsage errors.
absl::StatusOr<v1::HeadImportanceRequest> BuildImportanceRequest(
    const Args& args) {
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
  v1::HeadImportanceRequest request;
  request.set_model(args.Get("model"));
  *request.mutable_head_mask() = *std::move(mask);
  ReadOptions(args, request.mutable_options());
  return request;
}

absl::StatusOr<v1::PruneCurveRequest> BuildPruneRequest(const Args& args) {
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
  // --statistics as it is, or --reference computed to an id later.
  request.set_statistics(args.Get("statistics"));
  return request;
}

// PruneCurve's steps, in order, and the step it keeps.
struct PruneRun {
  std::vector<v1::PruneStep> steps;
  v1::PruneStep kept;
};

absl::StatusOr<PruneRun> CallPrune(const Job& job, const Args& args,
                                   const v1::PruneCurveRequest& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args, absl::Hours(6)));
  auto reader = job.stub->PruneCurve(context.get(), request);
  v1::PruneCurveResponse event;
  PruneRun run;
  bool has_kept = false;
  while (reader->Read(&event)) {
    if (event.has_progress()) {
      Progress(args.Has("quiet"), "passes", event.progress());
    } else if (event.has_step()) {
      run.steps.push_back(event.step());
      if (!args.Has("quiet")) {
        std::fprintf(stderr, "step %d: %d heads left, accuracy %.4f\n",
                     event.step().step(), event.step().heads_left(),
                     event.step().accuracy());
      }
    } else if (event.has_kept()) {
      run.kept = event.kept();
      has_kept = true;
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return CommandError(kExitRpc, s);
  if (run.steps.empty() || !has_kept) {
    return CommandError(kExitRpc,
                        absl::InternalError("the server sent no steps"));
  }
  return run;
}

// What `importance` writes: the CSV on stdout, or with --out-dir the CSV,
// JSON and heatmap.
CommandOutput ImportanceOutput(const Args& args, const std::string& model,
                               const v1::HeadImportanceResult& result) {
  CommandOutput out;
  if (!args.Has("out-dir")) {
    out.stdout_text = ImportanceCsv(result);
    return out;
  }
  out.dir = args.Get("out-dir");
  render::HeadGrid grid;
  grid.title = "Head importance (|d loss / d mask|, normalised)";
  grid.subtitle =
      absl::StrCat(model, " · ", result.examples(), " examples, accuracy ",
                   absl::StrFormat("%.4f", result.accuracy()));
  grid.num_layers = result.num_layers();
  grid.num_heads = result.num_heads();
  grid.values.assign(result.importance().begin(), result.importance().end());
  out.files = {
      {"importance.csv", ImportanceCsv(result)},
      {"importance.json", ImportanceJson(model, result).dump(2) + "\n"},
      {"importance.svg", render::HeadGridSvg(grid)}};
  return out;
}

// What `prune` writes: the CSV on stdout, or with --out-dir the CSV, JSON
// and curve.
CommandOutput PruneOutput(const Args& args, const Job& job,
                          const v1::PruneCurveRequest& request,
                          const PruneRun& run) {
  CommandOutput out;
  if (!args.Has("out-dir")) {
    out.stdout_text = PruneCsv(run.steps);
    return out;
  }
  out.dir = args.Get("out-dir");
  const double threshold = request.threshold() > 0 ? request.threshold() : 0.9;
  nlohmann::json j{{"model", job.info.model.name()},
                   {"threshold", threshold},
                   {"steps", nlohmann::json::array()},
                   {"kept", StepJson(run.kept)}};
  std::vector<render::PrunePoint> points;
  for (const v1::PruneStep& step : run.steps) {
    j["steps"].push_back(StepJson(step));
    points.push_back({step.step(), step.heads_left(), step.accuracy()});
  }
  const int total = job.info.model.num_layers() * job.info.model.num_heads();
  const std::string subtitle =
      absl::StrCat(job.info.model.name(), " · ", job.examples.size(),
                   " examples · kept step ", run.kept.step(), " (",
                   run.kept.heads_left(), " heads)");
  out.files = {{"prune_curve.csv", PruneCsv(run.steps)},
               {"prune_curve.json", j.dump(2) + "\n"},
               {"prune_curve.svg",
                render::PruneCurveSvg(subtitle, total, points,
                                      threshold * run.steps.front().accuracy(),
                                      run.kept.step())}};
  return out;
}

}  // namespace

absl::Status RunImportance(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args,
                   ParseCommandArgs(kImportanceUsage, ImportanceFlags(), argv));
  ASSIGN_OR_RETURN(v1::HeadImportanceRequest request,
                   BuildImportanceRequest(args));
  Job job;
  RETURN_IF_ERROR(PrepareJob(args, &job));
  RETURN_IF_ERROR(
      ResolveMaskStatistics(job.stub.get(), args, /*column_flags=*/true,
                            request.mutable_head_mask()->mutable_statistics()));
  for (const v1::LabeledExample& e : job.examples) *request.add_examples() = e;
  ASSIGN_OR_RETURN(const auto result,
                   CallResultStream<v1::HeadImportanceResponse>(
                       args,
                       [&](grpc::ClientContext* context) {
                         return job.stub->HeadImportance(context, request);
                       },
                       "scored", "examples"));
  return EmitOutput(ImportanceOutput(args, job.info.model.name(), result));
}

absl::Status RunPrune(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args,
                   ParseCommandArgs(kPruneUsage, PruneFlags(), argv));
  ASSIGN_OR_RETURN(v1::PruneCurveRequest request, BuildPruneRequest(args));
  Job job;
  RETURN_IF_ERROR(PrepareJob(args, &job));
  RETURN_IF_ERROR(ResolveMaskStatistics(job.stub.get(), args,
                                        /*column_flags=*/true,
                                        request.mutable_statistics()));
  for (const v1::LabeledExample& e : job.examples) *request.add_examples() = e;
  ASSIGN_OR_RETURN(PruneRun run, CallPrune(job, args, request));
  return EmitOutput(PruneOutput(args, job, request, run));
}

}  // namespace client
}  // namespace bertology
