// Each family's key layout as prefix rules (model_family.h).
#include "server/core/checkpoint/model_family.h"

#include <cctype>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

struct Rule {
  const char* file;      // prefix in the family's file
  const char* internal;  // the same in BertForSequenceClassification's names
};

// The longest matching prefix wins, in both directions.
const std::vector<Rule>& Rules(ModelFamily family) {
  static const auto* bert = new std::vector<Rule>{{"bert.", "bert."}};
  static const auto* roberta = new std::vector<Rule>{
      // RobertaModel's own pooler is not the classifier's dense layer: it
      // keeps its name and is listed unused.
      {"roberta.pooler.", "roberta.pooler."},
      {"roberta.", "bert."},
      {"classifier.dense.", "bert.pooler.dense."},
      {"classifier.out_proj.", "classifier."},
  };
  static const auto* electra = new std::vector<Rule>{
      {"electra.embeddings_project.", "bert.embeddings.project."},
      {"electra.", "bert."},
      {"classifier.dense.", "bert.pooler.dense."},
      {"classifier.out_proj.", "classifier."},
  };
  static const auto* distilbert = new std::vector<Rule>{
      {"distilbert.embeddings.", "bert.embeddings."},
      {"distilbert.transformer.layer.", "bert.encoder.layer."},
      {"pre_classifier.", "bert.pooler.dense."},
  };
  switch (family) {
    case ModelFamily::kBert:
      return *bert;
    case ModelFamily::kRoberta:
    case ModelFamily::kXlmRoberta:
      return *roberta;
    case ModelFamily::kDistilBert:
      return *distilbert;
    case ModelFamily::kElectra:
      return *electra;
  }
  return *bert;
}

// Inside DistilBERT's layer i (after "...layer.{i}.").
const std::vector<Rule>& DistilBertLayerRules() {
  static const auto* rules = new std::vector<Rule>{
      {"attention.q_lin.", "attention.self.query."},
      {"attention.k_lin.", "attention.self.key."},
      {"attention.v_lin.", "attention.self.value."},
      {"attention.out_lin.", "attention.output.dense."},
      {"sa_layer_norm.", "attention.output.LayerNorm."},
      {"ffn.lin1.", "intermediate.dense."},
      {"ffn.lin2.", "output.dense."},
      {"output_layer_norm.", "output.LayerNorm."},
  };
  return *rules;
}

// A base-model save (BertModel, RobertaModel, ...) has no prefix.
const std::vector<const char*>& BaseModelRoots(ModelFamily family) {
  static const auto* bert =
      new std::vector<const char*>{"embeddings.", "encoder.", "pooler."};
  static const auto* distilbert =
      new std::vector<const char*>{"embeddings.", "transformer."};
  static const auto* electra = new std::vector<const char*>{
      "embeddings.", "embeddings_project.", "encoder."};
  switch (family) {
    case ModelFamily::kDistilBert:
      return *distilbert;
    case ModelFamily::kElectra:
      return *electra;
    default:
      return *bert;
  }
}

const char* Prefix(ModelFamily family) {
  switch (family) {
    case ModelFamily::kBert:
      return "bert.";
    case ModelFamily::kRoberta:
    case ModelFamily::kXlmRoberta:
      return "roberta.";
    case ModelFamily::kDistilBert:
      return "distilbert.";
    case ModelFamily::kElectra:
      return "electra.";
  }
  return "bert.";
}

// "layer.{i}." at the start of `rest`: the index's digits and the dot.
size_t LayerIndexLength(const std::string& rest) {
  size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) {
    ++n;
  }
  return n > 0 && n < rest.size() && rest[n] == '.' ? n + 1 : 0;
}

// Applies the rule with the longest `from` prefix of `key`; DistilBERT's
// layer rules inside a layer.
std::string Apply(ModelFamily family, const std::string& key, bool forward) {
  const Rule* best = nullptr;
  size_t best_length = 0;
  for (const Rule& rule : Rules(family)) {
    const std::string from = forward ? rule.file : rule.internal;
    if (absl::StartsWith(key, from) && from.size() > best_length) {
      best = &rule;
      best_length = from.size();
    }
  }
  if (best != nullptr) {
    const std::string from = forward ? best->file : best->internal;
    const std::string to = forward ? best->internal : best->file;
    std::string rest = key.substr(from.size());
    const bool layers =
        family == ModelFamily::kDistilBert && absl::EndsWith(from, "layer.");
    if (layers) {
      const size_t index = LayerIndexLength(rest);
      if (index > 0) {
        const std::string inner = rest.substr(index);
        for (const Rule& r : DistilBertLayerRules()) {
          const std::string a = forward ? r.file : r.internal;
          const std::string b = forward ? r.internal : r.file;
          if (absl::StartsWith(inner, a)) {
            rest = rest.substr(0, index) + b + inner.substr(a.size());
            break;
          }
        }
      }
    }
    return to + rest;
  }
  return key;
}

}  // namespace

const char* ModelTypeName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kBert:
      return "bert";
    case ModelFamily::kRoberta:
      return "roberta";
    case ModelFamily::kXlmRoberta:
      return "xlm-roberta";
    case ModelFamily::kDistilBert:
      return "distilbert";
    case ModelFamily::kElectra:
      return "electra";
  }
  return "bert";
}

std::optional<ModelFamily> FamilyFromModelType(std::string_view model_type) {
  for (ModelFamily f :
       {ModelFamily::kBert, ModelFamily::kRoberta, ModelFamily::kXlmRoberta,
        ModelFamily::kDistilBert, ModelFamily::kElectra}) {
    if (model_type == ModelTypeName(f)) return f;
  }
  return std::nullopt;
}

std::string SupportedModelTypes() {
  return "\"bert\", \"roberta\", \"xlm-roberta\", \"distilbert\", \"electra\"";
}

bool UsesPaddingOffsetPositions(ModelFamily family) {
  return family == ModelFamily::kRoberta || family == ModelFamily::kXlmRoberta;
}

const char* ArchitectureStem(ModelFamily family) {
  switch (family) {
    case ModelFamily::kBert:
      return "Bert";
    case ModelFamily::kRoberta:
      return "Roberta";
    case ModelFamily::kXlmRoberta:
      return "XLMRoberta";
    case ModelFamily::kDistilBert:
      return "DistilBert";
    case ModelFamily::kElectra:
      return "Electra";
  }
  return "Bert";
}

PoolerActivation PoolerActivationOf(ModelFamily family) {
  switch (family) {
    case ModelFamily::kDistilBert:
      return PoolerActivation::kRelu;
    case ModelFamily::kElectra:
      return PoolerActivation::kGelu;
    default:
      return PoolerActivation::kTanh;
  }
}

std::string ToInternalKey(ModelFamily family, const std::string& file_key) {
  std::string key = file_key;
  for (const char* root : BaseModelRoots(family)) {
    if (absl::StartsWith(key, root)) {
      key = absl::StrCat(Prefix(family), key);
      break;
    }
  }
  return Apply(family, key, /*forward=*/true);
}

std::string ToFileKey(ModelFamily family, const std::string& internal_key,
                      bool sequence_head) {
  const bool out_proj = family == ModelFamily::kRoberta ||
                        family == ModelFamily::kXlmRoberta ||
                        family == ModelFamily::kElectra;
  if (absl::StartsWith(internal_key, "classifier.")) {
    return out_proj && sequence_head
               ? "classifier.out_proj." + internal_key.substr(11)
               : internal_key;
  }
  return Apply(family, internal_key, /*forward=*/false);
}

}  // namespace bertology
