// `bertology classify`: predictions under one head mask, for texts given as
// flags or for a dataset file (then also the accuracy when it has labels).
#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

constexpr char kUsage[] =
    "Usage: bertology classify --text-a=TEXT [--text-b=TEXT] [mask]\n"
    "       bertology classify --data=FILE [column flags] [mask]\n"
    "Without --data, --text-a/--text-b (or two positionals) are the "
    "texts;\nwith --data they name the columns. Prints index, label, "
    "probabilities\n(and the gold label); with labels, the accuracy "
    "goes to stderr.";

std::vector<FlagSpec> ClassifyFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  flags.push_back({"json", false, "JSON instead of TSV"});
  return flags;
}

// --data's examples, or the one text of --text-a/--text-b (or two
// positionals).
absl::StatusOr<LoadedData> ReadExamples(const Args& args,
                                        const v1::ModelInfo& model) {
  if (args.Has("data")) {
    const std::vector<std::string> labels(model.label_names().begin(),
                                          model.label_names().end());
    auto loaded = LoadLabeledData(args, labels, /*require_labels=*/false,
                                  LabelKindOf(model));
    if (!loaded.ok()) {
      return CommandError(LoadExitCode(loaded.status()), loaded.status());
    }
    return loaded;
  }
  const auto& pos = args.positional();
  LoadedData data;
  v1::LabeledExample e;
  e.mutable_input()->set_text_a(
      args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
  e.mutable_input()->set_text_b(
      args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
  if (e.input().text_a().empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("give --text-a or --data"));
  }
  data.examples.push_back(e);
  return data;
}

// Classify over `examples`, `chunk` inputs per call, under `mask`.
absl::StatusOr<std::vector<v1::Prediction>> ClassifyAll(
    v1::Bertology::Stub* stub, const Args& args, const v1::HeadMask& mask,
    const std::vector<v1::LabeledExample>& examples, int chunk) {
  std::vector<v1::Prediction> predictions;
  for (size_t begin = 0; begin < examples.size(); begin += chunk) {
    v1::ClassifyRequest request;
    request.set_model(args.Get("model"));
    *request.mutable_head_mask() = mask;
    const size_t end = std::min(examples.size(), begin + chunk);
    for (size_t i = begin; i < end; ++i) {
      *request.add_inputs() = examples[i].input();
    }
    ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                     CallContext(args));
    v1::ClassifyResponse response;
    absl::Status s =
        FromGrpcStatus(stub->Classify(context.get(), request, &response));
    if (!s.ok()) return CommandError(kExitRpc, s);
    for (const v1::Prediction& p : response.predictions()) {
      predictions.push_back(p);
    }
  }
  return predictions;
}

// A token classifier's predictions: one line per word (its first piece, as
// HF's token-classification examples score), or every piece in --json.
// With word labels, the accuracy over the labelled words that survived
// truncation.
CommandOutput TokenPredictionsOutput(
    bool json, const LoadedData& data,
    const std::vector<v1::Prediction>& predictions) {
  CommandOutput out;
  std::string& text = out.stdout_text;
  if (!json) {
    absl::StrAppend(&text, "index\tword\ttoken\tlabel\tprobabilities",
                    data.has_labels ? "\tgold" : "", "\n");
  }
  int correct = 0, scored = 0;
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < predictions.size(); ++i) {
    const v1::Prediction& p = predictions[i];
    const auto& gold = data.examples[i].word_labels();
    // A truncated pair renumbers text_b's words after text_a's kept ones,
    // so its word indices no longer index the file's labels: not scored.
    const bool scorable =
        !(p.truncated() && !data.examples[i].input().text_b().empty());
    nlohmann::json tokens = nlohmann::json::array();
    for (const v1::TokenPrediction& t : p.tokens()) {
      const int word_gold =
          scorable && t.first_piece() && t.word_index() < gold.size()
              ? gold[t.word_index()]
              : -1;
      if (word_gold >= 0) {
        ++scored;
        correct += t.label() == word_gold ? 1 : 0;
      }
      if (json) {
        tokens.push_back(
            {{"token_index", t.token_index()},
             {"text", t.text()},
             {"word_index", t.word_index()},
             {"first_piece", t.first_piece()},
             {"label", t.label()},
             {"label_name", t.label_name()},
             {"probabilities", std::vector<float>(t.probabilities().begin(),
                                                  t.probabilities().end())}});
      } else if (t.first_piece()) {
        absl::StrAppend(
            &text, i, "\t", t.word_index(), "\t", t.text(), "\t",
            t.label_name(), "\t", absl::StrJoin(t.probabilities(), ","),
            data.has_labels ? absl::StrCat("\t", word_gold) : "", "\n");
      }
    }
    if (json) {
      all.push_back(
          {{"index", i}, {"truncated", p.truncated()}, {"tokens", tokens}});
    }
  }
  if (json) absl::StrAppend(&text, all.dump(2), "\n");
  if (data.has_labels && scored > 0) {
    out.stderr_text =
        absl::StrFormat("word accuracy %d/%d = %.6f\n", correct, scored,
                        static_cast<double>(correct) / scored);
  }
  return out;
}

// A sequence classifier's predictions, one line (or JSON object) each;
// with labels, the accuracy on stderr.
CommandOutput PredictionsOutput(
    bool json, const LoadedData& data,
    const std::vector<v1::Prediction>& predictions) {
  CommandOutput out;
  std::string& text = out.stdout_text;
  int correct = 0;
  nlohmann::json all = nlohmann::json::array();
  if (!json) {
    absl::StrAppend(&text, "index\tlabel\tprobabilities",
                    data.has_labels ? "\tgold" : "", "\n");
  }
  for (size_t i = 0; i < predictions.size(); ++i) {
    const v1::Prediction& p = predictions[i];
    const int gold = data.examples[i].label();
    correct += data.has_labels && p.label() == gold ? 1 : 0;
    if (json) {
      nlohmann::json j{
          {"index", i},
          {"label", p.label()},
          {"label_name", p.label_name()},
          {"probabilities", std::vector<float>(p.probabilities().begin(),
                                               p.probabilities().end())},
          {"truncated", p.truncated()}};
      if (data.has_labels) j["gold"] = gold;
      all.push_back(j);
    } else {
      absl::StrAppend(&text, i, "\t", p.label_name(), "\t",
                      absl::StrJoin(p.probabilities(), ","),
                      data.has_labels ? absl::StrCat("\t", gold) : "", "\n");
    }
  }
  if (json) absl::StrAppend(&text, all.dump(2), "\n");
  if (data.has_labels && !predictions.empty()) {
    out.stderr_text =
        absl::StrFormat("accuracy %d/%zu = %.6f\n", correct, predictions.size(),
                        static_cast<double>(correct) / predictions.size());
  }
  return out;
}

}  // namespace

absl::Status RunClassify(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, ClassifyFlags(), argv));
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  // --reference's columns are --data's when there is a dataset.
  RETURN_IF_ERROR(ResolveMaskStatistics(
      server.stub.get(), args, args.Has("data"), mask->mutable_statistics()));
  ASSIGN_OR_RETURN(const LoadedData data,
                   ReadExamples(args, server.info.model));
  ASSIGN_OR_RETURN(
      const std::vector<v1::Prediction> predictions,
      ClassifyAll(server.stub.get(), args, *mask, data.examples,
                  std::max(1, server.info.limits.max_inputs_per_call())));
  const bool json = args.Has("json");
  return EmitOutput(server.info.model.head() ==
                            v1::MODEL_HEAD_TOKEN_CLASSIFICATION
                        ? TokenPredictionsOutput(json, data, predictions)
                        : PredictionsOutput(json, data, predictions));
}

}  // namespace client
}  // namespace bertology
