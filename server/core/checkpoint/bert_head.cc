// ResolveBertHead: HF's BertFor* class (named or inferred) to what the
// server computes on top of the encoder.
#include "server/core/checkpoint/bert_head.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace bertology {
namespace {

using Shape = std::vector<int64_t>;

std::string ShapeString(const Shape& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

bool HasPrefix(const StateDict& w, const std::string& prefix) {
  auto it = w.lower_bound(prefix);
  return it != w.end() && absl::StartsWith(it->first, prefix);
}

// The class HF would have saved these keys from, for a config that names
// none (configs written by hand, or by old conversion scripts).
std::string InferArchitecture(const StateDict& w) {
  const bool pooler = w.count("bert.pooler.dense.weight") > 0;
  // BertForMultipleChoice's [1, hidden] classifier reads as a one-label
  // sequence classifier (a regression head): without a name the two are
  // the same keys, so the config must say which.
  if (w.count("classifier.weight") > 0) {
    return pooler ? "BertForSequenceClassification"
                  : "BertForTokenClassification";
  }
  const bool mlm = HasPrefix(w, "cls.predictions.");
  const bool nsp = HasPrefix(w, "cls.seq_relationship.");
  if (mlm && nsp) return "BertForPreTraining";
  if (mlm) return "BertForMaskedLM";
  if (nsp) return "BertForNextSentencePrediction";
  if (HasPrefix(w, "qa_outputs.")) return "BertForQuestionAnswering";
  return "BertModel";
}

HeadKind KindOf(const std::string& architecture) {
  if (architecture == "BertForSequenceClassification") {
    return HeadKind::kSequenceClassification;
  }
  if (architecture == "BertForTokenClassification") {
    return HeadKind::kTokenClassification;
  }
  return HeadKind::kEncoder;
}

// classifier.{weight,bias} as [labels, hidden] and [labels]; id2label made
// to agree with the rows.
absl::Status CheckClassifier(BertConfig* config, const StateDict& w,
                             const std::string& config_file,
                             const std::string& file, BertHead* head) {
  const int64_t d = config->hidden_size;
  auto& labels = config->id2label;
  auto it = w.find("classifier.weight");
  if (it == w.end()) {
    return absl::NotFoundError(absl::StrCat(
        file, ": missing key classifier.weight (expected shape [",
        labels.empty() ? "num_labels" : absl::StrCat(labels.size()), ", ", d,
        "]), which ", head->architecture, " needs"));
  }
  if (it->second.dim() != 2 || it->second.size(1) != d) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": key classifier.weight has shape ",
                     ShapeString(it->second.sizes().vec()),
                     ", expected [num_labels, ", d, "]"));
  }
  const int64_t num_labels = it->second.size(0);
  RETURN_IF_ERROR(CheckKeyShape(w, file, "classifier.bias", {num_labels}));
  if (labels.empty()) {
    for (int64_t k = 0; k < num_labels; ++k) {
      labels.push_back(absl::StrCat("LABEL_", k));
    }
  } else if (static_cast<int64_t>(labels.size()) != num_labels) {
    return absl::InvalidArgumentError(absl::StrCat(
        config_file, ": id2label has ", labels.size(), " labels but ", file,
        " has a classifier with ", num_labels, " rows"));
  }
  head->num_labels = static_cast<int>(num_labels);
  return absl::OkStatus();
}

}  // namespace

const char* HeadKindName(HeadKind kind) {
  switch (kind) {
    case HeadKind::kEncoder:
      return "encoder";
    case HeadKind::kSequenceClassification:
      return "sequence_classification";
    case HeadKind::kTokenClassification:
      return "token_classification";
  }
  return "unknown";
}

const std::vector<std::string>& KnownBertArchitectures() {
  static const auto* known = new std::vector<std::string>{
      "BertModel",
      "BertForPreTraining",
      "BertForMaskedLM",
      "BertLMHeadModel",
      "BertForNextSentencePrediction",
      "BertForSequenceClassification",
      "BertForMultipleChoice",
      "BertForTokenClassification",
      "BertForQuestionAnswering",
  };
  return *known;
}

absl::Status CheckKeyShape(const StateDict& w, const std::string& file,
                           const std::string& key, const Shape& expected) {
  auto it = w.find(key);
  if (it == w.end()) {
    return absl::NotFoundError(absl::StrCat(file, ": missing key ", key,
                                            " (expected shape ",
                                            ShapeString(expected), ")"));
  }
  const Shape actual = it->second.sizes().vec();
  if (actual != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": key ", key, " has shape ", ShapeString(actual),
                     ", expected ", ShapeString(expected)));
  }
  return absl::OkStatus();
}

absl::StatusOr<BertHead> ResolveBertHead(BertConfig* config,
                                         const StateDict& weights,
                                         const std::string& config_file,
                                         const std::string& weights_file) {
  BertHead head;
  head.architecture = config->architecture.empty() ? InferArchitecture(weights)
                                                   : config->architecture;
  const auto& known = KnownBertArchitectures();
  if (std::find(known.begin(), known.end(), head.architecture) == known.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config_file, ": architectures[0]=\"", head.architecture,
                     "\" is not a BERT architecture this server knows (",
                     absl::StrJoin(known, ", "), ")"));
  }
  head.kind = KindOf(head.architecture);
  std::set<std::string> used;
  if (head.kind == HeadKind::kSequenceClassification) {
    const int64_t d = config->hidden_size;
    RETURN_IF_ERROR(CheckKeyShape(weights, weights_file,
                                  "bert.pooler.dense.weight", {d, d}));
    RETURN_IF_ERROR(
        CheckKeyShape(weights, weights_file, "bert.pooler.dense.bias", {d}));
    head.uses_pooler = true;
    used.insert({"bert.pooler.dense.weight", "bert.pooler.dense.bias"});
  }
  if (head.kind != HeadKind::kEncoder) {
    RETURN_IF_ERROR(
        CheckClassifier(config, weights, config_file, weights_file, &head));
    used.insert({"classifier.weight", "classifier.bias"});
  }
  for (const auto& [key, tensor] : weights) {
    const bool encoder = absl::StartsWith(key, "bert.embeddings.") ||
                         absl::StartsWith(key, "bert.encoder.");
    if (!encoder && used.count(key) == 0) head.unused_keys.push_back(key);
  }
  return head;
}

}  // namespace bertology
