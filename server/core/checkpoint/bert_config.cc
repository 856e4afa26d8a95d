// BertConfig parsing: HF config.json in, validated struct out.
#include "server/core/checkpoint/bert_config.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace {

using Json = nlohmann::json;

// Reads an optional integer field; absent keeps `*out`. A present field of
// the wrong type is an error naming the source and the field.
absl::Status ReadInt(const Json& j, const char* field, const std::string& src,
                     int* out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(
        src, ": field ", field, " must be an integer, got ", it->dump()));
  }
  *out = it->get<int>();
  return absl::OkStatus();
}

absl::Status RequirePositive(int value, const char* field,
                             const std::string& src) {
  if (value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": ", field, "=", value, " must be positive"));
  }
  return absl::OkStatus();
}

bool KnownActivation(const std::string& act) {
  return act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh" ||
         act == "relu";
}

absl::Status ReadLabels(const Json& j, const std::string& src,
                        std::vector<std::string>* out) {
  auto it = j.find("id2label");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": field id2label must be an object"));
  }
  const size_t n = it->size();
  std::vector<std::string> labels(n);
  std::vector<bool> seen(n, false);
  for (const auto& [key, value] : it->items()) {
    int id = -1;
    if (!absl::SimpleAtoi(key, &id) || id < 0 || static_cast<size_t>(id) >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          src, ": id2label key \"", key, "\" is not an index in 0..", n - 1));
    }
    if (seen[id]) {
      return absl::InvalidArgumentError(
          absl::StrCat(src, ": id2label repeats index ", id));
    }
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(src, ": id2label[\"", key, "\"] must be a string"));
    }
    seen[id] = true;
    labels[id] = value.get<std::string>();
  }
  *out = std::move(labels);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BertConfig> BertConfig::FromJson(const std::string& json_text,
                                                const std::string& source) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a JSON object"));
  }
  // Another family's config can parse as BERT's (DeBERTa and ALBERT share
  // most field names) and fail later on a weight key, or not at all:
  // model_type says what it is. Absent: an old BERT config.
  BertConfig c;
  if (auto it = j.find("model_type"); it != j.end()) {
    std::optional<ModelFamily> family;
    if (it->is_string()) family = FamilyFromModelType(it->get<std::string>());
    if (!family.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": model_type=", it->dump(),
                       " is not supported (supported: ", SupportedModelTypes(),
                       ", with their sequence and token classifiers)"));
    }
    c.family = *family;
  }
  const bool distilbert = c.family == ModelFamily::kDistilBert;
  if (UsesPaddingOffsetPositions(c.family)) {
    c.pad_token_id = 1;  // RobertaConfig's default
    c.type_vocab_size = 1;
  }
  if (distilbert) c.type_vocab_size = 0;
  // The sizes, under DistilBertConfig's names for DistilBERT; "" where the
  // family has no such field. All must be positive.
  struct IntField {
    const char* name;
    int* value;
  };
  const IntField ints[] = {
      {"vocab_size", &c.vocab_size},
      {distilbert ? "dim" : "hidden_size", &c.hidden_size},
      {distilbert ? "n_layers" : "num_hidden_layers", &c.num_hidden_layers},
      {distilbert ? "n_heads" : "num_attention_heads", &c.num_attention_heads},
      {distilbert ? "hidden_dim" : "intermediate_size", &c.intermediate_size},
      {"max_position_embeddings", &c.max_position_embeddings},
      {distilbert ? "" : "type_vocab_size", &c.type_vocab_size},
      {c.family == ModelFamily::kElectra ? "embedding_size" : "",
       &c.embedding_size},
  };
  for (const IntField& field : ints) {
    if (*field.name == '\0') continue;
    if (auto st = ReadInt(j, field.name, source, field.value); !st.ok()) {
      return st;
    }
  }
  if (auto st = ReadInt(j, "pad_token_id", source, &c.pad_token_id); !st.ok()) {
    return st;
  }
  if (c.embedding_size == 0) c.embedding_size = c.hidden_size;
  for (const IntField& field : ints) {
    if (*field.name == '\0') continue;
    if (auto st = RequirePositive(*field.value, field.name, source); !st.ok()) {
      return st;
    }
  }
  if (c.max_input_tokens() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": max_position_embeddings=", c.max_position_embeddings,
        " leaves ", c.max_input_tokens(), " positions (pad_token_id=",
        c.pad_token_id, "); an input needs at least 3"));
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": num_attention_heads=", c.num_attention_heads,
                     " does not divide hidden_size=", c.hidden_size));
  }
  const char* act_field = distilbert ? "activation" : "hidden_act";
  if (auto it = j.find(act_field); it != j.end()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": field ", act_field, " must be a string"));
    }
    c.hidden_act = it->get<std::string>();
  }
  if (!KnownActivation(c.hidden_act)) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", act_field, "=\"", c.hidden_act,
        "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)"));
  }
  // DistilBERT's LayerNorms are eps=1e-12 in code, not in its config.
  if (auto it = j.find("layer_norm_eps"); !distilbert && it != j.end()) {
    if (!it->is_number() || it->get<double>() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": layer_norm_eps must be a positive number, got ",
          it->dump()));
    }
    c.layer_norm_eps = it->get<double>();
  }
  if (auto it = j.find("position_embedding_type");
      it != j.end() && !(it->is_string() && *it == "absolute")) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": position_embedding_type=", it->dump(),
                     " is not supported (only \"absolute\")"));
  }
  if (auto st = ReadLabels(j, source, &c.id2label); !st.ok()) return st;
  if (auto it = j.find("architectures");
      it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    c.architecture = (*it)[0].get<std::string>();
  }
  return c;
}

absl::StatusOr<BertConfig> BertConfig::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open config"));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return FromJson(buf.str(), path);
}

std::string BertConfig::ToJson() const {
  Json j;
  j["model_type"] = "bert";
  if (!architecture.empty()) j["architectures"] = {architecture};
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = hidden_act;
  j["layer_norm_eps"] = layer_norm_eps;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["pad_token_id"] = pad_token_id;
  j["position_embedding_type"] = "absolute";
  if (!id2label.empty()) {
    Json id2 = Json::object();
    Json label2 = Json::object();
    for (size_t i = 0; i < id2label.size(); ++i) {
      id2[std::to_string(i)] = id2label[i];
      label2[id2label[i]] = static_cast<int>(i);
    }
    j["id2label"] = id2;
    j["label2id"] = label2;
  }
  return j.dump(2) + "\n";
}

}  // namespace bertology
