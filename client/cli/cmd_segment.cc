// `bertology segment`: attention as a word segmenter (the SegmentWords RPC)
// over a file whose text columns hold the gold words separated by spaces
// (e.g. models/querytitle-zh-tiny/data/test_words.tsv; the texts are the
// words concatenated). Writes segment_heads.csv/.json, an F1 heatmap
// (layers x heads) and the segmentation view of one example with --out-dir,
// then prints the best heads by MCC beside the two trivial baselines
// (always-next, always-[SEP]) and the oracles; without --out-dir, the CSV
// on stdout and that table on stderr (unless --quiet).
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/labeled_data.h"
#include "client/cli/mask_flags.h"
#include "client/render/file_output.h"
#include "client/render/head_grid_figures.h"
#include "client/render/segmentation_figure.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

// "word word" -> the words and the text they make.
void SplitWords(const std::string& spaced,
                google::protobuf::RepeatedPtrField<std::string>* words,
                std::string* text) {
  for (absl::string_view w :
       absl::StrSplit(spaced, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    words->Add(std::string(w));
    absl::StrAppend(text, w);
  }
}

std::string Number(double v) {
  return std::isnan(v) ? "" : absl::StrFormat("%.9g", v);
}

// The value of a repeated score at k, NaN where the server sent none.
double At(const google::protobuf::RepeatedField<float>& values, int k) {
  return k < values.size() ? values[k]
                           : std::numeric_limits<double>::quiet_NaN();
}

std::string Csv(const v1::SegmentWordsResult& r) {
  const v1::SegmentationScores& s = r.scores();
  std::string out =
      "layer,head,precision,recall,f1,accuracy,true_ends,predicted_ends,"
      "correct,mcc,balanced_accuracy\n";
  for (int l = 0; l < r.num_layers(); ++l) {
    for (int h = 0; h < r.num_heads(); ++h) {
      const int k = l * r.num_heads() + h;
      absl::StrAppend(&out, l, ",", h, ",", Number(s.precision(k)), ",",
                      Number(s.recall(k)), ",", Number(s.f1(k)), ",",
                      Number(s.accuracy(k)), ",", s.true_ends(k), ",",
                      s.predicted_ends(k), ",", s.correct(k), ",",
                      Number(At(s.mcc(), k)), ",",
                      Number(At(s.balanced_accuracy(), k)), "\n");
    }
  }
  return out;
}

// "%.4f", or "n/a" for NaN.
std::string Cell(double v) {
  return std::isnan(v) ? "n/a" : absl::StrFormat("%.4f", v);
}

// The best heads (by MCC, as the server ranks them) with the two trivial
// baselines under them, scored alike, and the oracles side by side.
std::string Table(const v1::SegmentWordsResult& r) {
  const v1::SegmentationScores& s = r.scores();
  std::string out = absl::StrFormat(
      "%d examples, %d characters (%d word ends); heads ranked by MCC "
      "(then balanced accuracy, then layer/head)\n%-5s %-13s %8s %8s %8s "
      "%9s %8s %8s\n",
      r.examples(), r.characters(), r.gold_ends(), "rank", "head", "mcc",
      "bal_acc", "f1", "precision", "recall", "accuracy");
  auto row = [&](const std::string& rank, const std::string& name, double mcc,
                 double bal, double f1, double p, double rec, double acc) {
    absl::StrAppendFormat(&out, "%-5s %-13s %8s %8s %8s %9s %8s %8s\n", rank,
                          name, Cell(mcc), Cell(bal), Cell(f1), Cell(p),
                          Cell(rec), Cell(acc));
  };
  for (int i = 0; i < r.best_heads_size(); ++i) {
    const v1::LayerHead& lh = r.best_heads(i);
    const int k = lh.layer() * r.num_heads() + lh.head();
    row(absl::StrCat(i + 1), absl::StrCat("L", lh.layer(), "H", lh.head()),
        At(s.mcc(), k), At(s.balanced_accuracy(), k), At(s.f1(), k),
        At(s.precision(), k), At(s.recall(), k), At(s.accuracy(), k));
  }
  for (const auto& [name, b] :
       {std::pair<const char*, const v1::SegmentationBaseline*>{
            "always-next", &r.always_next()},
        {"always-[SEP]", &r.always_sep()}}) {
    row("base", name, b->mcc(), b->balanced_accuracy(), b->f1(), b->precision(),
        b->recall(), b->accuracy());
  }
  absl::StrAppendFormat(
      &out,
      "some head right on %.4f of the characters (one of the top %d: %.4f); "
      "always-next or always-[SEP] right on %.4f\n",
      r.oracle_all_heads(), r.best_heads_size(), r.oracle_top_heads(),
      r.oracle_baselines());
  return out;
}

nlohmann::json Json(const std::string& model, const v1::SegmentWordsResult& r) {
  auto num = [](double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  auto grid = [&](const google::protobuf::RepeatedField<float>& values) {
    nlohmann::json rows = nlohmann::json::array();
    for (int l = 0; l < r.num_layers(); ++l) {
      nlohmann::json row = nlohmann::json::array();
      for (int h = 0; h < r.num_heads(); ++h) {
        row.push_back(num(At(values, l * r.num_heads() + h)));
      }
      rows.push_back(row);
    }
    return rows;
  };
  nlohmann::json best = nlohmann::json::array();
  for (const v1::LayerHead& lh : r.best_heads()) {
    best.push_back({lh.layer(), lh.head()});
  }
  auto baseline = [&](const v1::SegmentationBaseline& b) {
    return nlohmann::json{{"precision", num(b.precision())},
                          {"recall", num(b.recall())},
                          {"f1", num(b.f1())},
                          {"accuracy", num(b.accuracy())},
                          {"mcc", num(b.mcc())},
                          {"balanced_accuracy", num(b.balanced_accuracy())},
                          {"true_ends", b.true_ends()},
                          {"predicted_ends", b.predicted_ends()},
                          {"correct", b.correct()}};
  };
  return {{"model", model},
          {"num_layers", r.num_layers()},
          {"num_heads", r.num_heads()},
          {"examples", r.examples()},
          {"truncated_examples", r.truncated_examples()},
          {"characters", r.characters()},
          {"gold_ends", r.gold_ends()},
          {"skipped_pieces", r.skipped_pieces()},
          {"oracle_all_heads", r.oracle_all_heads()},
          {"oracle_top_heads", r.oracle_top_heads()},
          {"oracle_baselines", r.oracle_baselines()},
          {"best_heads", best},
          {"ranked_by", "mcc, then balanced_accuracy, then (layer, head)"},
          {"baselines",
           {{"always_next", baseline(r.always_next())},
            {"always_sep", baseline(r.always_sep())}}},
          {"precision", grid(r.scores().precision())},
          {"recall", grid(r.scores().recall())},
          {"f1", grid(r.scores().f1())},
          {"accuracy", grid(r.scores().accuracy())},
          {"mcc", grid(r.scores().mcc())},
          {"balanced_accuracy", grid(r.scores().balanced_accuracy())}};
}

const char* PredictionName(int p) {
  switch (p) {
    case v1::CHARACTER_PREDICTION_WORD_END:
      return "end";
    case v1::CHARACTER_PREDICTION_WORD_INTERNAL:
      return "internal";
    default:
      return "none";
  }
}

// What `segment` writes: without --out-dir the CSV on stdout and the table
// on stderr (unless --quiet); with it the CSV, JSON, F1 grid and the
// example's segmentation, then the table on stdout.
CommandOutput SegmentOutput(const Args& args, const std::string& model,
                            const v1::SegmentWordsResult& r) {
  CommandOutput out;
  if (!args.Has("out-dir")) {
    out.stdout_text = Csv(r);
    if (!args.Has("quiet")) out.stderr_text = Table(r);
    return out;
  }
  out.dir = args.Get("out-dir");
  out.stdout_after = Table(r);
  render::HeadGrid grid;
  grid.title = "Word-end F1 of each head read as a segmenter";
  grid.subtitle = absl::StrFormat(
      "%s · %d examples, %d characters · any head right: %.3f (top %d by "
      "MCC: %.3f; always-next or always-[SEP]: %.3f)",
      model, r.examples(), r.characters(), r.oracle_all_heads(),
      r.best_heads_size(), r.oracle_top_heads(), r.oracle_baselines());
  grid.num_layers = r.num_layers();
  grid.num_heads = r.num_heads();
  grid.values.assign(r.scores().f1().begin(), r.scores().f1().end());
  grid.scale_max = 1;
  out.files = {{"segment_heads.csv", Csv(r)},
               {"segment_heads.json", Json(model, r).dump(2) + "\n"},
               {"segment_f1.svg", render::HeadGridSvg(grid)}};
  if (r.has_view()) {
    const v1::SegmentationView& v = r.view();
    render::SegmentationFigure figure;
    figure.title =
        absl::StrCat("Example ", v.example(), ": gold words and head L",
                     v.head().layer(), "H", v.head().head(), " (best by MCC)");
    figure.subtitle = "boundaries above: gold; below: the head's word ends";
    figure.characters.assign(v.characters().begin(), v.characters().end());
    figure.segment.assign(v.segment().begin(), v.segment().end());
    figure.gold_end.assign(v.gold_end().begin(), v.gold_end().end());
    for (int p : v.predicted()) figure.predicted.push_back(PredictionName(p));
    out.files.push_back({"segmentation.svg", render::SegmentationSvg(figure)});
  }
  return out;
}

constexpr char kUsage[] =
    "Usage: bertology segment --data=FILE [--text-a=COL] [--text-b=COL] "
    "[mask] [--top=K]\n       [--view=INDEX] [--out-dir=DIR]\n"
    "Reads each head as a word segmenter (a character whose strongest "
    "attention\nis a [SEP] ends a word; one attending to the next "
    "character is inside one)\nand scores it against the gold words: "
    "the text columns hold the words\nseparated by spaces, e.g. "
    "models/querytitle-zh-tiny/data/test_words.tsv.\nPrints the best "
    "heads by MCC (Matthews correlation of word ends) beside two\n"
    "trivial heads scored alike (always-next, always-[SEP]); without "
    "--out-dir\nthe CSV goes to stdout and that table to stderr.";

std::vector<FlagSpec> SegmentFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  for (FlagSpec& f : DatasetFlags()) flags.push_back(f);
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  flags.push_back({"top", true, "best heads reported (5)", "K"});
  flags.push_back(
      {"view", true, "the example drawn in segmentation.svg (0)", "INDEX"});
  flags.push_back({"out-dir", true,
                   "write segment_heads.csv, segment_heads.json, "
                   "segment_f1.svg and segmentation.svg here",
                   "DIR"});
  flags.push_back(
      {"quiet", false,
       "no progress on stderr (nor, without --out-dir, the table)"});
  return flags;
}

// The request from the flags alone (the examples come from the data
// later); kExitUsage errors.
absl::StatusOr<v1::SegmentWordsRequest> BuildSegmentRequest(const Args& args) {
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  v1::SegmentWordsRequest request;
  request.set_model(args.Get("model"));
  *request.mutable_head_mask() = *mask;
  for (const auto& [flag, setter] :
       {std::pair<const char*, void (v1::SegmentWordsRequest::*)(int32_t)>{
            "top", &v1::SegmentWordsRequest::set_top_k},
        {"view", &v1::SegmentWordsRequest::set_view_example}}) {
    if (!args.Has(flag)) continue;
    auto v = args.GetInt(flag, 0);
    if (!v.ok()) return CommandError(kExitUsage, v.status());
    (request.*setter)(*v);
  }
  return request;
}

// --data's texts as words: each text column holds its words separated by
// spaces.
absl::Status AddExamples(const Args& args, const v1::ModelInfo& model,
                         v1::SegmentWordsRequest* request) {
  const std::vector<std::string> labels(model.label_names().begin(),
                                        model.label_names().end());
  auto data = LoadLabeledData(args, labels, /*require_labels=*/false);
  if (!data.ok()) return CommandError(kExitData, data.status());
  for (const v1::LabeledExample& e : data->examples) {
    v1::SegmentedText* t = request->add_examples();
    SplitWords(e.input().text_a(), t->mutable_words_a(),
               t->mutable_input()->mutable_text_a());
    SplitWords(e.input().text_b(), t->mutable_words_b(),
               t->mutable_input()->mutable_text_b());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSegment(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, SegmentFlags(),
                                               WithNoLabelByDefault(argv)));
  ASSIGN_OR_RETURN(v1::SegmentWordsRequest request, BuildSegmentRequest(args));
  ASSIGN_OR_RETURN(ModelConnection server, ConnectToModel(args));
  RETURN_IF_ERROR(AddExamples(args, server.info.model, &request));
  ASSIGN_OR_RETURN(const auto result,
                   CallResultStream<v1::SegmentWordsResponse>(
                       args,
                       [&](grpc::ClientContext* context) {
                         return server.stub->SegmentWords(context, request);
                       },
                       "segmented", "examples"));
  return EmitOutput(SegmentOutput(args, server.info.model.name(), result));
}

}  // namespace client
}  // namespace bertology
