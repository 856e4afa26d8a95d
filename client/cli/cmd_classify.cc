// `bertology classify`: predictions under one head mask, for texts given as
// flags or for a dataset file (then also the accuracy when it has labels).
#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// A token classifier's predictions: one line per word (its first piece, as
// HF's token-classification examples score), or every piece in --json.
// With word labels, the accuracy over the labelled words that survived
// truncation.
absl::Status PrintTokenPredictions(
    const Args& args, const LoadedData& data,
    const std::vector<v1::Prediction>& predictions) {
  const bool json = args.Has("json");
  if (!json) {
    std::printf("index\tword\ttoken\tlabel\tprobabilities%s\n",
                data.has_labels ? "\tgold" : "");
  }
  int correct = 0, scored = 0;
  nlohmann::json out = nlohmann::json::array();
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
        std::printf(
            "%zu\t%d\t%s\t%s\t%s%s\n", i, t.word_index(), t.text().c_str(),
            t.label_name().c_str(),
            absl::StrJoin(t.probabilities(), ",").c_str(),
            data.has_labels ? absl::StrCat("\t", word_gold).c_str() : "");
      }
    }
    if (json) {
      out.push_back(
          {{"index", i}, {"truncated", p.truncated()}, {"tokens", tokens}});
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  if (data.has_labels && scored > 0) {
    std::fprintf(stderr, "word accuracy %d/%d = %.6f\n", correct, scored,
                 static_cast<double>(correct) / scored);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunClassify(const Argv& argv) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  flags.push_back({"json", false, "JSON instead of TSV"});
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs(
          "Usage: bertology classify --text-a=TEXT [--text-b=TEXT] [mask]\n"
          "       bertology classify --data=FILE [column flags] [mask]\n"
          "Without --data, --text-a/--text-b (or two positionals) are the "
          "texts;\nwith --data they name the columns. Prints index, label, "
          "probabilities\n(and the gold label); with labels, the accuracy "
          "goes to stderr.",
          flags, argv));
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  auto channel = MakeChannel(args, args.Get("target", kDefaultTarget));
  if (!channel.ok()) return CommandError(kExitUsage, channel.status());
  auto stub = v1::Bertology::NewStub(*channel);
  auto info = FetchModelInfo(stub.get(), args);
  if (!info.ok()) return CommandError(kExitRpc, info.status());
  // --reference's columns are --data's when there is a dataset.
  RETURN_IF_ERROR(ResolveMaskStatistics(stub.get(), args, args.Has("data"),
                                        mask->mutable_statistics()));
  const std::vector<std::string> labels(info->model.label_names().begin(),
                                        info->model.label_names().end());
  const bool per_token =
      info->model.head() == v1::MODEL_HEAD_TOKEN_CLASSIFICATION;
  LoadedData data;
  if (args.Has("data")) {
    auto loaded = LoadLabeledData(args, labels, /*require_labels=*/false,
                                  LabelKindOf(info->model));
    if (!loaded.ok()) {
      return CommandError(LoadExitCode(loaded.status()), loaded.status());
    }
    data = *std::move(loaded);
  } else {
    const auto& pos = args.positional();
    v1::LabeledExample e;
    e.mutable_input()->set_text_a(
        args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
    e.mutable_input()->set_text_b(
        args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
    if (e.input().text_a().empty()) {
      return CommandError(
          kExitUsage, absl::InvalidArgumentError("give --text-a or --data"));
    }
    data.examples.push_back(e);
  }
  const int chunk = std::max(1, info->limits.max_inputs_per_call());
  std::vector<v1::Prediction> predictions;
  for (size_t begin = 0; begin < data.examples.size(); begin += chunk) {
    v1::ClassifyRequest request;
    request.set_model(args.Get("model"));
    *request.mutable_head_mask() = *mask;
    const size_t end = std::min(data.examples.size(), begin + chunk);
    for (size_t i = begin; i < end; ++i) {
      *request.add_inputs() = data.examples[i].input();
    }
    auto context = NewContext(args);
    if (!context.ok()) return CommandError(kExitUsage, context.status());
    v1::ClassifyResponse response;
    absl::Status s =
        FromGrpcStatus(stub->Classify(context->get(), request, &response));
    if (!s.ok()) return CommandError(kExitRpc, s);
    for (const v1::Prediction& p : response.predictions()) {
      predictions.push_back(p);
    }
  }
  if (per_token) return PrintTokenPredictions(args, data, predictions);
  int correct = 0;
  nlohmann::json out = nlohmann::json::array();
  if (!args.Has("json")) {
    std::printf("index\tlabel\tprobabilities%s\n",
                data.has_labels ? "\tgold" : "");
  }
  for (size_t i = 0; i < predictions.size(); ++i) {
    const v1::Prediction& p = predictions[i];
    const int gold = data.examples[i].label();
    correct += data.has_labels && p.label() == gold ? 1 : 0;
    if (args.Has("json")) {
      nlohmann::json j{
          {"index", i},
          {"label", p.label()},
          {"label_name", p.label_name()},
          {"probabilities", std::vector<float>(p.probabilities().begin(),
                                               p.probabilities().end())},
          {"truncated", p.truncated()}};
      if (data.has_labels) j["gold"] = gold;
      out.push_back(j);
    } else {
      std::printf("%zu\t%s\t%s%s\n", i, p.label_name().c_str(),
                  absl::StrJoin(p.probabilities(), ",").c_str(),
                  data.has_labels ? absl::StrCat("\t", gold).c_str() : "");
    }
  }
  if (args.Has("json")) std::printf("%s\n", out.dump(2).c_str());
  if (data.has_labels && !predictions.empty()) {
    std::fprintf(stderr, "accuracy %d/%zu = %.6f\n", correct,
                 predictions.size(),
                 static_cast<double>(correct) / predictions.size());
  }
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
