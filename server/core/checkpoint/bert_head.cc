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
// none (configs written by hand, or by old conversion scripts). Keys in
// internal names (model_family.h).
std::string InferArchitecture(ModelFamily family, const StateDict& w) {
  const bool pooler = w.count("bert.pooler.dense.weight") > 0;
  if (family != ModelFamily::kBert) {
    const std::string stem = ArchitectureStem(family);
    if (w.count("classifier.weight") == 0) return stem + "Model";
    return stem +
           (pooler ? "ForSequenceClassification" : "ForTokenClassification");
  }
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
  if (absl::EndsWith(architecture, "ForSequenceClassification")) {
    return HeadKind::kSequenceClassification;
  }
  if (absl::EndsWith(architecture, "ForTokenClassification")) {
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
  const bool sequence = head->kind == HeadKind::kSequenceClassification;
  const std::string weight_key =
      ToFileKey(config->family, "classifier.weight", sequence);
  auto it = w.find("classifier.weight");
  if (it == w.end()) {
    return absl::NotFoundError(absl::StrCat(
        file, ": missing key ", weight_key, " (expected shape [",
        labels.empty() ? "num_labels" : absl::StrCat(labels.size()), ", ", d,
        "]), which ", head->architecture, " needs"));
  }
  if (it->second.dim() != 2 || it->second.size(1) != d) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": key ", weight_key, " has shape ",
                     ShapeString(it->second.sizes().vec()),
                     ", expected [num_labels, ", d, "]"));
  }
  const int64_t num_labels = it->second.size(0);
  RETURN_IF_ERROR(
      CheckKeyShape(w, file, "classifier.bias", {num_labels},
                    ToFileKey(config->family, "classifier.bias", sequence)));
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

std::vector<std::string> KnownArchitectures(ModelFamily family) {
  // Every family's heads, then each one's own.
  std::vector<std::string> suffixes = {"Model",
                                       "ForMaskedLM",
                                       "ForSequenceClassification",
                                       "ForMultipleChoice",
                                       "ForTokenClassification",
                                       "ForQuestionAnswering"};
  switch (family) {
    case ModelFamily::kBert:
      suffixes.insert(suffixes.end(), {"ForPreTraining", "LMHeadModel",
                                       "ForNextSentencePrediction"});
      break;
    case ModelFamily::kRoberta:
    case ModelFamily::kXlmRoberta:
      suffixes.push_back("ForCausalLM");
      break;
    case ModelFamily::kElectra:
      suffixes.insert(suffixes.end(), {"ForPreTraining", "ForCausalLM"});
      break;
    case ModelFamily::kDistilBert:
      break;
  }
  const std::string stem = ArchitectureStem(family);
  std::vector<std::string> out;
  for (const std::string& suffix : suffixes) out.push_back(stem + suffix);
  return out;
}

absl::Status CheckKeyShape(const StateDict& w, const std::string& file,
                           const std::string& key, const Shape& expected,
                           const std::string& file_key) {
  const std::string& shown = file_key.empty() ? key : file_key;
  auto it = w.find(key);
  if (it == w.end()) {
    return absl::NotFoundError(absl::StrCat(file, ": missing key ", shown,
                                            " (expected shape ",
                                            ShapeString(expected), ")"));
  }
  const Shape actual = it->second.sizes().vec();
  if (actual != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": key ", shown, " has shape ", ShapeString(actual),
                     ", expected ", ShapeString(expected)));
  }
  return absl::OkStatus();
}

absl::StatusOr<BertHead> ResolveBertHead(BertConfig* config,
                                         const StateDict& weights,
                                         const std::string& config_file,
                                         const std::string& weights_file) {
  const ModelFamily family = config->family;
  BertHead head;
  head.architecture = config->architecture.empty()
                          ? InferArchitecture(family, weights)
                          : config->architecture;
  const std::vector<std::string> known = KnownArchitectures(family);
  if (std::find(known.begin(), known.end(), head.architecture) == known.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config_file, ": architectures[0]=\"", head.architecture, "\" is not a ",
        ModelTypeName(family), " architecture this server knows (",
        absl::StrJoin(known, ", "), ")"));
  }
  head.kind = KindOf(head.architecture);
  head.pooler_activation = PoolerActivationOf(family);
  const bool sequence = head.kind == HeadKind::kSequenceClassification;
  std::set<std::string> used;
  if (sequence) {
    const int64_t d = config->hidden_size;
    for (const auto& [key, shape] :
         {std::pair<std::string, Shape>{"bert.pooler.dense.weight", {d, d}},
          {"bert.pooler.dense.bias", {d}}}) {
      RETURN_IF_ERROR(CheckKeyShape(weights, weights_file, key, shape,
                                    ToFileKey(family, key, true)));
    }
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
    if (!encoder && used.count(key) == 0) {
      head.unused_keys.push_back(ToFileKey(family, key, sequence));
    }
  }
  std::sort(head.unused_keys.begin(), head.unused_keys.end());
  return head;
}

}  // namespace bertology
