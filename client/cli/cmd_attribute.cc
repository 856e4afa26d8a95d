// `bertology attribute`: which input tokens a prediction rests on, by six
// methods (the Attribute RPC; attribution.proto defines each), under one
// head mask: a table per input, or with --out-dir attribution.csv,
// attribution.json and heatmap.html.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/attribute_output.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
#include "common/status_macros.h"

namespace bertology {
namespace client {
namespace {

constexpr char kUsage[] =
    "Usage: bertology attribute --text-a=TEXT [--text-b=TEXT] [options] "
    "[mask]\n"
    "       bertology attribute --data=FILE [column flags] [options] [mask]\n"
    "Scores each input token (or word) for how much the class's logit (or\n"
    "probability) rests on it, under the mask: saliency |df/de|, gradient "
    "x input,\nintegrated gradients (with its completeness gap), attention "
    "rollout and flow\n(Abnar & Zuidema), attention x gradient (Chefer et "
    "al.). Without --data,\n--text-a/--text-b (or two positionals) are the "
    "texts; with --data they name\nthe columns. Prints a table per input "
    "(units x methods); --out-dir writes\nattribution.csv (input_index,unit,"
    "text,segment,special,method,score,target,\ncompleteness_gap: one row per "
    "input x unit x method, the gap on the\nintegrated-gradients rows), "
    "attribution.json and heatmap.html (per input, a\nrow per method, each "
    "cell coloured by score / max |score| of its row).";

std::vector<FlagSpec> AttributeFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  const std::vector<FlagSpec> more = {
      {"method", true,
       "saliency, gradient-x-input, integrated-gradients, rollout, flow, "
       "attention-x-gradient; repeatable or comma-separated (default all six)",
       "M,.."},
      {"target-class", true,
       "the class explained (default: each input's predicted class under "
       "the mask)",
       "N"},
      {"target-position", true,
       "token classifiers (required there): the token whose prediction is "
       "explained",
       "T"},
      {"output", true, "logit (default) or probability: what is explained",
       "O"},
      {"baseline", true,
       "integrated gradients' baseline embedding: pad (default), zero or mask",
       "B"},
      {"rule", true,
       "integrated gradients' quadrature: gauss-legendre (default) or "
       "trapezoid",
       "R"},
      {"steps", true,
       "integrated gradients' points, 1-1024 (trapezoid 2-1024; default 50)",
       "N"},
      {"granularity", true,
       "token (default: one score per word piece) or word (the sum over its "
       "pieces)",
       "G"},
      {"out-dir", true,
       "write attribution.csv, attribution.json and heatmap.html here", "DIR"},
      {"quiet", false, "no progress on stderr"},
  };
  flags.insert(flags.end(), more.begin(), more.end());
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  return flags;
}

// `value` looked up in `names` (flag `flag`), or INVALID_ARGUMENT listing
// them; `def` when the flag is absent.
template <typename Enum>
absl::StatusOr<Enum> ParseChoice(
    const Args& args, const char* flag,
    const std::vector<std::pair<std::string, Enum>>& names, Enum def) {
  if (!args.Has(flag)) return def;
  const std::string value = args.Get(flag);
  std::vector<std::string> known;
  for (const auto& [name, e] : names) {
    if (value == name) return e;
    known.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", value, " is not ", absl::StrJoin(known, " or ")));
}

// The request from the flags alone (the inputs come later); INVALID_ARGUMENT
// for a bad flag.
absl::StatusOr<v1::AttributeRequest> BuildRequest(const Args& args) {
  v1::AttributeRequest request;
  request.set_model(args.Get("model"));
  ASSIGN_OR_RETURN(*request.mutable_head_mask(), ParseHeadMask(args));
  if (request.head_mask().mode() == v1::ABLATION_MODE_RESAMPLE) {
    return absl::InvalidArgumentError(
        "--mode=resample averages over draws, which no single attribution "
        "does");
  }
  for (const std::string& value : args.GetAll("method")) {
    for (absl::string_view name :
         absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      ASSIGN_OR_RETURN(v1::AttributionMethod m, ParseAttributionMethod(name));
      request.add_methods(m);
    }
  }
  // The server runs all six for an empty list; naming them keeps the
  // order of the columns the CLI's own.
  if (request.methods().empty()) {
    for (v1::AttributionMethod m : AllAttributionMethods()) {
      request.add_methods(m);
    }
  }
  for (const char* flag : {"target-class", "target-position", "steps"}) {
    ASSIGN_OR_RETURN(int v, args.GetInt(flag, 0));
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", v, " is negative"));
    }
  }
  if (args.Has("target-class")) {
    request.set_target(*args.GetInt("target-class", 0));
  }
  if (args.Has("target-position")) {
    request.set_target_position(*args.GetInt("target-position", 0));
  }
  if (args.Has("steps")) request.set_steps(*args.GetInt("steps", 0));
  ASSIGN_OR_RETURN(v1::AttributionOutput output,
                   ParseChoice<v1::AttributionOutput>(
                       args, "output",
                       {{"logit", v1::ATTRIBUTION_OUTPUT_LOGIT},
                        {"probability", v1::ATTRIBUTION_OUTPUT_PROBABILITY}},
                       v1::ATTRIBUTION_OUTPUT_LOGIT));
  request.set_output(output);
  ASSIGN_OR_RETURN(v1::AttributionBaseline baseline,
                   ParseChoice<v1::AttributionBaseline>(
                       args, "baseline",
                       {{"pad", v1::ATTRIBUTION_BASELINE_PAD},
                        {"zero", v1::ATTRIBUTION_BASELINE_ZERO},
                        {"mask", v1::ATTRIBUTION_BASELINE_MASK}},
                       v1::ATTRIBUTION_BASELINE_PAD));
  request.set_baseline(baseline);
  ASSIGN_OR_RETURN(v1::IntegrationRule rule,
                   ParseChoice<v1::IntegrationRule>(
                       args, "rule",
                       {{"gauss-legendre", v1::INTEGRATION_RULE_GAUSS_LEGENDRE},
                        {"trapezoid", v1::INTEGRATION_RULE_RIEMANN_TRAPEZOID}},
                       v1::INTEGRATION_RULE_GAUSS_LEGENDRE));
  request.set_rule(rule);
  ASSIGN_OR_RETURN(
      v1::Granularity granularity,
      ParseChoice<v1::Granularity>(
          args, "granularity",
          {{"token", v1::GRANULARITY_TOKEN}, {"word", v1::GRANULARITY_WORD}},
          v1::GRANULARITY_TOKEN));
  request.set_granularity(granularity);
  return request;
}

// One call's results, their input_index moved on by `offset` (the inputs
// before this call), appended to `run`; the stream's status.
absl::Status ReadAttributeStream(
    grpc::ClientReaderInterface<v1::AttributeResponse>* reader, int offset,
    bool quiet, AttributionRun* run) {
  v1::AttributeResponse event;
  while (reader->Read(&event)) {
    if (event.has_result()) {
      v1::AttributionResult r = event.result();
      r.set_input_index(r.input_index() + offset);
      run->results.push_back(std::move(r));
      if (!quiet) {
        std::fprintf(stderr, "attributed %zu/%d inputs\n", run->results.size(),
                     run->request.inputs_size());
      }
    } else if (event.has_progress() && !quiet) {
      std::fprintf(stderr, "attributing %lld/%lld\n",
                   static_cast<long long>(event.progress().done()),
                   static_cast<long long>(event.progress().total()));
    }
  }
  return FromGrpcStatus(reader->Finish());
}

// Every input, at most the server's max_inputs_per_call per call (the
// results are per input, so calls merge); kExitRpc for the calls' errors.
absl::StatusOr<AttributionRun> AttributeAll(
    const Args& args, const ModelConnection& server,
    const v1::AttributeRequest& request) {
  AttributionRun run;
  run.model = server.info.model.name();
  run.label_names.assign(server.info.model.label_names().begin(),
                         server.info.model.label_names().end());
  run.request = request;
  const int chunk = std::max(1, server.info.limits.max_inputs_per_call());
  for (int begin = 0; begin < request.inputs_size(); begin += chunk) {
    v1::AttributeRequest part = request;
    part.clear_inputs();
    const int end = std::min(request.inputs_size(), begin + chunk);
    for (int i = begin; i < end; ++i) *part.add_inputs() = request.inputs(i);
    // Integrated gradients is `steps` passes per input: give it time.
    ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                     CallContext(args, absl::Hours(1)));
    auto reader = server.stub->Attribute(context.get(), part);
    absl::Status s =
        ReadAttributeStream(reader.get(), begin, args.Has("quiet"), &run);
    if (!s.ok()) return CommandError(kExitRpc, s);
  }
  absl::Status s = CheckAttributionRun(run);
  if (!s.ok()) return CommandError(kExitRpc, s);
  return run;
}

}  // namespace

absl::Status RunAttribute(const Argv& argv) {
  // Attribution needs no labels: --label defaults to none here.
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, AttributeFlags(),
                                               WithNoLabelByDefault(argv)));
  absl::StatusOr<v1::AttributeRequest> request = BuildRequest(args);
  if (!request.ok()) return CommandError(kExitUsage, request.status());
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  // --reference's columns are --data's when there is a dataset.
  RETURN_IF_ERROR(ResolveMaskStatistics(
      server.stub.get(), args, args.Has("data"),
      request->mutable_head_mask()->mutable_statistics()));
  const std::vector<std::string> labels(server.info.model.label_names().begin(),
                                        server.info.model.label_names().end());
  ASSIGN_OR_RETURN(std::vector<v1::TextInput> inputs,
                   CommandInputs(args, labels));
  for (v1::TextInput& input : inputs) *request->add_inputs() = std::move(input);
  ASSIGN_OR_RETURN(const AttributionRun run,
                   AttributeAll(args, server, *request));
  absl::StatusOr<CommandOutput> out = AttributeOutput(run, args.Get("out-dir"));
  if (!out.ok()) return CommandError(kExitData, out.status());
  return EmitOutput(*out);
}

}  // namespace client
}  // namespace bertology
