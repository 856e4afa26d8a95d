// `bertology sweep`: a dataset and a sweep spec -> accuracy under every mask,
// sharded over the replicas by the scheduler; CSV and JSON results, SVG
// figures, and a summary table for the terminal.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/sweep_metrics.h"
#include "client/cli/sweep_output.h"
#include "client/cli/sweep_parts.h"
#include "client/cli/sweep_summary.h"
#include "client/render/sweep_figures.h"
#include "client/render/sweep_report.h"
#include "client/scheduler/sweep_scheduler.h"
#include "client/terminal/progress_bar.h"
#include "common/status_macros.h"

namespace bertology {
namespace client {
namespace {

constexpr char kUsage[] =
    "Usage: bertology sweep --data=FILE [column flags] SPEC.. [--out-csv=F] "
    "[--out-json=F] [--out-dir=DIR]\n"
    "Scores the dataset with no mask (the baseline) and under every mask of "
    "the spec,\nsplit into shards (masks x example chunks) sent as "
    "SweepAblation calls to the\nreplicas in --target (a list gets one "
    "channel per replica; dns:/// and a single\naddress, e.g. a load "
    "balancer, one channel). Failed shards are retried on\nanother replica; "
    "results merge exactly. --out-dir writes sweep_results.csv/.json and the\n"
    "figures (heads_heatmap.svg, layer_bars.svg, fraction_curve.svg). A "
    "summary\ntable ends the run on stdout, or on stderr when the CSV goes "
    "to stdout (no\n--out-*).\n"
    "Example: bertology sweep --target=ipv4:10.0.0.1:50051,10.0.0.2:50051 "
    "--data=dev.tsv \\\n    --text-a=sentence1 --text-b=sentence2 "
    "--label=label --heads --layers \\\n    --random=0.1,10,1 "
    "--progress-file=sweep.progress.jsonl --out-dir=sweep/\n"
    "Low vs high layers: --random=0.2,10,0,0-5 --random=0.2,10,0,6-11.\n"
    "Mean ablation: --mode=mean --reference=train.tsv (same column flags as "
    "--data; each\nreplica computes the statistics once) or "
    "--statistics=ID (bertology statistics);\n--mode=resample also takes "
    "--draws=N --seed=S.\n"
    "A dns:/// target is looked up here: one replica per address (the pods "
    "of a\nheadless Service), each with --max-inflight shards, looked up "
    "again every\n--resolve-interval seconds. A call cut part-way (a "
    "connection aged out, a\nreplica gone) keeps the results that arrived "
    "and sends only the rest again.\n"
    "Indexed Job: each pod runs --part=I/N --progress-file=part-I.jsonl "
    "(same flags,\n--masks-per-shard given); a last run with "
    "--merge-from='part-*.jsonl' merges\nthe parts exactly, running only "
    "shards no part holds, and writes the results.";

// The reports and figures of --out-dir; appends the paths to `written`.
absl::Status WriteOutDir(const render::SweepResults& results,
                         const std::string& dir,
                         std::vector<std::string>* written) {
  absl::Status s =
      render::WriteSweepReport(results, dir, "sweep_results", written);
  if (!s.ok()) return s;
  return render::WriteSweepFigures(results, dir, written);
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out.good()) {
    return absl::DataLossError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

// --part and --merge-from into `options`. Every part and the merge must plan
// the same shards, so the shard size may not depend on the replicas each
// one happens to see: it must be given.
absl::Status PartOptions(const Args& args, int masks_per_shard,
                         SchedulerOptions* options) {
  if (args.Has("part")) {
    absl::StatusOr<std::pair<int, int>> part = ParsePart(args.Get("part"));
    if (!part.ok()) return part.status();
    options->part_index = part->first;
    options->part_count = part->second;
    if (!args.Has("progress-file")) {
      return absl::InvalidArgumentError(
          "--part needs --progress-file: the part's results are kept there");
    }
    for (const char* out : {"out-csv", "out-json", "out-dir"}) {
      if (args.Has(out)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--part runs only part of the sweep: --", out,
            " belongs to the run that merges the parts (--merge-from)"));
      }
    }
  }
  if (args.Has("merge-from")) {
    absl::StatusOr<std::vector<std::string>> files =
        ExpandMergeFrom(args.GetAll("merge-from"));
    if (!files.ok()) return files.status();
    options->merge_from = *std::move(files);
  }
  if ((args.Has("part") || args.Has("merge-from")) && masks_per_shard <= 0) {
    return absl::InvalidArgumentError(
        "--part and --merge-from need --masks-per-shard, so every part and "
        "the merge plan the same shards");
  }
  return absl::OkStatus();
}

// The --metrics-listen exporter (nullptr without the flag), labelled with
// the sweep's fingerprint and the part ("I/N"; "merge" for a run that
// merges parts, so a sum over parts does not count the sweep twice).
absl::StatusOr<std::unique_ptr<SweepMetricsExporter>> StartExporter(
    const Args& args, const SweepJob& job, const SchedulerOptions& options) {
  if (!args.Has("metrics-listen")) {
    return std::unique_ptr<SweepMetricsExporter>();
  }
  const std::string part =
      !options.merge_from.empty()
          ? "merge"
          : absl::StrCat(options.part_index, "/", options.part_count);
  absl::StatusOr<std::unique_ptr<SweepMetricsExporter>> e =
      SweepMetricsExporter::Start(
          args.Get("metrics-listen"),
          {{"sweep", SweepFingerprint(job, options.sharding)}, {"part", part}});
  if (!e.ok()) {
    return absl::Status(e.status().code(), absl::StrCat("--metrics-listen: ",
                                                        e.status().message()));
  }
  if (!args.Has("quiet")) {
    std::fprintf(stderr, "sweep: progress metrics on port %d\n", (*e)->port());
  }
  return e;
}

// The sweep's flags: connection, dataset, mask spec and these.
std::vector<FlagSpec> SweepFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : SweepSpecFlags()) flags.push_back(f);
  const std::vector<FlagSpec> more = {
      {"out-csv", true,
       "write the results as CSV (the schema of --out-dir's sweep_results.csv)",
       "FILE"},
      {"out-json", true, "write the results as JSON", "FILE"},
      {"out-dir", true,
       "write sweep_results.csv, sweep_results.json and the SVG figures here",
       "DIR"},
      {"max-inflight", true, "shards in flight per replica (default 2)", "N"},
      {"shard-timeout", true, "deadline per shard in seconds (default 600)",
       "S"},
      {"retries", true, "attempts per shard before giving up (default 6)", "N"},
      {"masks-per-shard", true, "default: about 4 shards per in-flight slot",
       "N"},
      {"examples-per-shard", true, "default: all (at most the server's limit)",
       "N"},
      {"batch-rows", true,
       "rows per forward pass on the server (0: its "
       "default)",
       "N"},
      {"progress-file", true,
       "JSONL of finished shards; rerunning the same sweep resumes", "FILE"},
      {"part", true,
       "run only part I of N (shards with index % N == I); needs "
       "--progress-file, which holds the part, and --masks-per-shard",
       "I/N"},
      {"merge-from", true,
       "progress file or glob of the parts of this sweep: their finished "
       "shards count as done (repeatable)",
       "FILE"},
      {"metrics-listen", true,
       "serve the sweep's progress as Prometheus gauges on "
       "http://HOST:PORT/metrics (bertology_sweep_job_*)",
       "HOST:PORT"},
      {"metrics-linger", true,
       "with --metrics-listen, keep serving this long after the end so the "
       "last values are scraped (default 0)",
       "S"},
      {"resolve-interval", true,
       "seconds between DNS lookups of a dns:/// target (default 10)", "S"},
      {"round-robin", false,
       "send a target list through one round_robin channel instead of one "
       "channel per replica"},
      {"quiet", false, "no progress output"},
  };
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

// Everything the run needs, filled in two steps: the flags, then the plan.
struct SweepSetup {
  // From the flags (ParseSchedulerFlags).
  std::vector<v1::MaskSpec> specs;
  v1::AblationMode mode = v1::ABLATION_MODE_ZERO;
  v1::ResampleOptions resample;
  std::vector<ChannelTarget> targets;
  SchedulerOptions options;
  int masks_per_shard = 0;     // 0: from the replicas seen
  int examples_per_shard = 0;  // 0: all, within the server's limit
  int batch_rows = 0;
  absl::Duration resolve_interval;
  absl::Duration linger;
  // From the server and the dataset (PlanJob).
  ModelAndLimits info;
  MaskPlanOptions plan;
  SweepJob job;
};

absl::Status ParseSchedulerFlags(const Args& args, SweepSetup* setup) {
  auto specs = ParseSweepSpecs(args);
  if (!specs.ok()) return CommandError(kExitUsage, specs.status());
  setup->specs = *std::move(specs);
  auto mode = ParseMode(args);
  if (!mode.ok()) return CommandError(kExitUsage, mode.status());
  setup->mode = *mode;
  absl::Status reference = CheckReferenceFlags(args, *mode);
  if (!reference.ok()) return CommandError(kExitUsage, reference);
  auto resample = ParseResample(args);
  if (!resample.ok()) return CommandError(kExitUsage, resample.status());
  setup->resample = *resample;
  auto inflight = args.GetInt("max-inflight", 2);
  auto timeout = args.GetDouble("shard-timeout", 600);
  auto attempts = args.GetInt("retries", 6);
  auto masks_per_shard = args.GetInt("masks-per-shard", 0);
  auto examples_per_shard = args.GetInt("examples-per-shard", 0);
  auto rows = args.GetInt("batch-rows", 0);
  auto resolve_interval = args.GetDouble("resolve-interval", 10);
  auto linger = args.GetDouble("metrics-linger", 0);
  for (const absl::Status& s :
       {inflight.status(), timeout.status(), attempts.status(),
        masks_per_shard.status(), examples_per_shard.status(), rows.status(),
        resolve_interval.status(), linger.status()}) {
    if (!s.ok()) return CommandError(kExitUsage, s);
  }
  SchedulerOptions& options = setup->options;
  options.max_inflight = *inflight;
  options.shard_timeout = absl::Seconds(*timeout);
  options.max_attempts = std::max(1, *attempts);
  options.progress_file = args.Get("progress-file");
  absl::Status parts = PartOptions(args, *masks_per_shard, &options);
  if (!parts.ok()) return CommandError(kExitUsage, parts);
  setup->masks_per_shard = *masks_per_shard;
  setup->examples_per_shard = *examples_per_shard;
  setup->batch_rows = *rows;
  setup->resolve_interval = absl::Seconds(*resolve_interval);
  setup->linger = absl::Seconds(*linger);
  TargetOptions target_options;
  target_options.round_robin_list = args.Has("round-robin");
  auto targets =
      ParseTargets(args.Get("target", kDefaultTarget), target_options);
  if (!targets.ok()) return CommandError(kExitUsage, targets.status());
  setup->targets = *std::move(targets);
  return absl::OkStatus();
}

// The model's shape and labels (from the first target), the dataset, the
// planned masks, and the shard size.
absl::Status PlanJob(const Args& args, ShardExecutor* executor,
                     SweepSetup* setup) {
  auto channel = MakeChannel(args, setup->targets.front().uri);
  if (!channel.ok()) return CommandError(kExitUsage, channel.status());
  auto stub = v1::Bertology::NewStub(*channel);
  auto info = FetchModelInfo(stub.get(), args);
  if (!info.ok()) return CommandError(kExitRpc, info.status());
  setup->info = *std::move(info);
  const v1::ModelInfo& model = setup->info.model;
  const std::vector<std::string> labels(model.label_names().begin(),
                                        model.label_names().end());
  auto data = LoadLabeledData(args, labels, /*require_labels=*/true,
                              LabelKindOf(model));
  if (!data.ok()) return CommandError(kExitData, data.status());
  setup->plan.layers = model.num_layers();
  setup->plan.heads = model.num_heads();
  setup->plan.mode = setup->mode;
  auto masks = PlanMasks(setup->specs, setup->plan);
  if (!masks.ok()) return CommandError(kExitUsage, masks.status());

  SweepJob& job = setup->job;
  job.model = args.Get("model");
  job.model_identity = model.identity();
  job.mode = setup->mode;
  job.max_batch_rows = setup->batch_rows;
  // The reference travels with every shard rather than as an id computed
  // here first: each replica computes it on first use, and a replica that
  // joins later (dns:///) needs no id it never saw.
  job.statistics = args.Get("statistics");
  if (args.Has("reference")) {
    auto reference = LoadTextInputs(args.Get("reference"), args,
                                    /*column_flags=*/true);
    if (!reference.ok()) return CommandError(kExitData, reference.status());
    job.reference = *std::move(reference);
  }
  if (setup->mode == v1::ABLATION_MODE_RESAMPLE) job.resample = setup->resample;
  job.examples = std::move(data->examples);
  job.masks = *std::move(masks);
  const int num_masks = static_cast<int>(job.masks.size());
  const int num_examples = static_cast<int>(job.examples.size());
  const v1::ServerLimits& limits = setup->info.limits;
  const int example_limit = limits.max_examples_per_sweep() > 0
                                ? limits.max_examples_per_sweep()
                                : num_examples;
  ShardingOptions& sharding = setup->options.sharding;
  sharding.examples_per_shard = std::min(
      setup->examples_per_shard > 0 ? setup->examples_per_shard : num_examples,
      example_limit);
  // By default about 4 shards per in-flight slot of the replicas the
  // executor sees now (a dns:/// name counts its addresses; the scheduler
  // then reuses this lookup).
  int slots = 0;
  if (absl::StatusOr<std::vector<int>> channels = executor->Channels();
      channels.ok()) {
    for (int c : *channels) {
      slots += setup->options.max_inflight * executor->backends(c);
    }
  }
  sharding.masks_per_shard =
      setup->masks_per_shard > 0
          ? setup->masks_per_shard
          : std::max(1, num_masks / std::max(1, slots * 4));
  if (limits.max_masks_per_sweep() > 0) {
    sharding.masks_per_shard =
        std::min(sharding.masks_per_shard, limits.max_masks_per_sweep());
  }
  return absl::OkStatus();
}

// Shards, retries and what each replica served, on stderr.
void PrintRunSummary(const SweepSetup& setup, const SweepReport& run) {
  std::fprintf(stderr,
               "sweep: %zu masks x %zu examples in %d shards (%d resumed), "
               "%d retries, %d mask results kept from cut calls\n",
               setup.job.masks.size(), setup.job.examples.size(),
               run.shards_total, run.shards_resumed, run.retries,
               run.masks_resumed);
  for (const ChannelStats& c : run.channels) {
    std::fprintf(stderr, "  %s: %d shards, %d failures%s%s\n", c.name.c_str(),
                 c.shards_ok, c.failures,
                 c.refused.empty() ? "" : "; refused: ", c.refused.c_str());
  }
}

// --out-csv, --out-json, --out-dir and the summary table (the CSV on
// stdout when no file is asked for).
absl::Status WriteResults(const Args& args, const SweepSetup& setup,
                          const SweepReport& run) {
  const std::string mode_name = ModeName(setup.mode);
  const std::string& model = setup.info.model.name();
  const render::SweepResults results =
      ToSweepResults(run.summary, model, setup.plan.layers, setup.plan.heads);
  if (args.Has("out-csv")) {
    absl::Status s =
        WriteFile(args.Get("out-csv"), render::SweepResultsCsv(results));
    if (!s.ok()) return CommandError(kExitData, s);
  }
  if (args.Has("out-json")) {
    absl::Status s =
        WriteFile(args.Get("out-json"), SweepJson(run, model, mode_name));
    if (!s.ok()) return CommandError(kExitData, s);
  }
  std::vector<std::string> written;
  if (args.Has("out-dir")) {
    absl::Status s = WriteOutDir(results, args.Get("out-dir"), &written);
    if (!s.ok()) return CommandError(kExitData, s);
  }
  // stdout carries the CSV when no file does; the table then goes to stderr
  // so `bertology sweep ... > results.csv` stays a clean CSV.
  const bool csv_on_stdout =
      !args.Has("out-csv") && !args.Has("out-json") && !args.Has("out-dir");
  if (csv_on_stdout) {
    std::fputs(render::SweepResultsCsv(results).c_str(), stdout);
  }
  if (!csv_on_stdout || !args.Has("quiet")) {
    std::string table = SweepSummaryTable(results, mode_name);
    if (!written.empty()) absl::StrAppend(&table, "\nWrote:\n");
    for (const std::string& path : written) {
      absl::StrAppend(&table, "  ", path, "\n");
    }
    std::fputs(table.c_str(), csv_on_stdout ? stderr : stdout);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSweep(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, SweepFlags(), argv));
  SweepSetup setup;
  RETURN_IF_ERROR(ParseSchedulerFlags(args, &setup));
  GrpcExecutorOptions executor_options;
  executor_options.resolve_interval = setup.resolve_interval;
  executor_options.security = SecurityFromArgs(args);
  auto executor = NewGrpcShardExecutor(setup.targets, executor_options);
  RETURN_IF_ERROR(PlanJob(args, executor.get(), &setup));
  absl::StatusOr<std::unique_ptr<SweepMetricsExporter>> exporter =
      StartExporter(args, setup.job, setup.options);
  if (!exporter.ok()) return CommandError(kExitUsage, exporter.status());
  ProgressBar bar(stderr, isatty(STDERR_FILENO) != 0);
  const bool quiet = args.Has("quiet");
  SweepProgressFn on_progress = [&bar, &exporter,
                                 quiet](const SweepProgressSnapshot& s) {
    if (!quiet) bar.Update(s);
    if (*exporter != nullptr) (*exporter)->Update(s);
  };
  absl::StatusOr<SweepReport> run =
      ScheduleSweep(setup.job, executor.get(), setup.options, on_progress);
  bar.Done();
  if (*exporter != nullptr && setup.linger > absl::ZeroDuration()) {
    // A job pod that exits at once takes its last values with it; give
    // Prometheus a scrape interval to read them.
    absl::SleepFor(setup.linger);
  }
  if (!run.ok()) {
    const std::string& progress = setup.options.progress_file;
    const bool progress_file_fault =
        absl::IsFailedPrecondition(run.status()) && !progress.empty() &&
        run.status().message().find(progress) != std::string::npos;
    return CommandError(progress_file_fault ? kExitData : kExitRpc,
                        run.status());
  }
  if (!quiet) PrintRunSummary(setup, *run);
  if (!run->complete) {
    std::printf(
        "part %d/%d: %d shards done (%d resumed) in %s; merge the parts with "
        "--merge-from\n",
        setup.options.part_index, setup.options.part_count, run->shards_total,
        run->shards_resumed, setup.options.progress_file.c_str());
    return absl::OkStatus();
  }
  return WriteResults(args, setup, *run);
}

}  // namespace client
}  // namespace bertology
