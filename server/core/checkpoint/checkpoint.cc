// Checkpoint::Load: an HF BERT directory read and checked against its own
// config, so the model code can index weights without further checks.
#include "server/core/checkpoint/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/core/checkpoint/bert_head.h"
#include "server/core/tokenizer/tokenizer_config.h"

namespace bertology {
namespace {

namespace fs = std::filesystem;
using Shape = std::vector<int64_t>;

// BertForSequenceClassification's names (model_family.h: "bert." prefix
// on the encoder, each family's keys renamed), LayerNorm weight/bias (older
// TF-converted checkpoints say gamma/beta), no position_ids buffer.
StateDict NormaliseKeys(StateDict in, ModelFamily family) {
  StateDict out;
  for (auto& [key, tensor] : in) {
    std::string k = key;
    if (absl::EndsWith(k, "LayerNorm.gamma")) {
      k = k.substr(0, k.size() - 5) + "weight";
    } else if (absl::EndsWith(k, "LayerNorm.beta")) {
      k = k.substr(0, k.size() - 4) + "bias";
    }
    k = ToInternalKey(family, k);
    // Buffers, not weights: positions and token types are rebuilt per pass.
    if (k == "bert.embeddings.position_ids" ||
        k == "bert.embeddings.token_type_ids") {
      continue;
    }
    out[k] = std::move(tensor);
  }
  return out;
}

// Every key the encoder needs, with the shape the config implies.
// Internal names (the file's are ToFileKey's).
std::vector<std::pair<std::string, Shape>> RequiredShapes(const BertConfig& c) {
  const int64_t d = c.hidden_size, i = c.intermediate_size,
                e = c.embedding_size;
  std::vector<std::pair<std::string, Shape>> req = {
      {"bert.embeddings.word_embeddings.weight", {c.vocab_size, e}},
      {"bert.embeddings.position_embeddings.weight",
       {c.max_position_embeddings, e}},
      {"bert.embeddings.LayerNorm.weight", {e}},
      {"bert.embeddings.LayerNorm.bias", {e}},
  };
  if (c.type_vocab_size > 0) {
    req.push_back({"bert.embeddings.token_type_embeddings.weight",
                   {c.type_vocab_size, e}});
  }
  if (e != d) {  // ELECTRA's embeddings_project
    req.push_back({"bert.embeddings.project.weight", {d, e}});
    req.push_back({"bert.embeddings.project.bias", {d}});
  }
  auto linear = [&](const std::string& name, int64_t out_dim, int64_t in_dim) {
    req.push_back({name + ".weight", {out_dim, in_dim}});
    req.push_back({name + ".bias", {out_dim}});
  };
  auto layer_norm = [&](const std::string& name) {
    req.push_back({name + ".weight", {d}});
    req.push_back({name + ".bias", {d}});
  };
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = absl::StrCat("bert.encoder.layer.", l, ".");
    linear(p + "attention.self.query", d, d);
    linear(p + "attention.self.key", d, d);
    linear(p + "attention.self.value", d, d);
    linear(p + "attention.output.dense", d, d);
    layer_norm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", i, d);
    linear(p + "output.dense", d, i);
    layer_norm(p + "output.LayerNorm");
  }
  return req;
}

// The tokenizer library validates vocab.txt fully; this only refuses a
// directory whose vocab could never start a BERT input.
absl::Status CheckVocab(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": missing (required)");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "[CLS]") return absl::OkStatus();
  }
  return absl::InvalidArgumentError(path + ": vocab has no [CLS] token");
}

absl::Status RequireFile(const fs::path& path, const char* what) {
  std::error_code ec;
  if (fs::exists(path, ec)) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat(path.string(), ": missing (required: ", what, ")"));
}

// Which tokenizer files the family ships, and their settings.
absl::Status FindTokenizer(const fs::path& root, ModelFamily family,
                           Checkpoint* ckpt) {
  const std::string config = (root / "tokenizer_config.json").string();
  switch (family) {
    case ModelFamily::kRoberta: {
      ckpt->tokenizer_kind = TokenizerKind::kByteLevelBpe;
      ckpt->vocab_file = (root / "vocab.json").string();
      ckpt->merges_file = (root / "merges.txt").string();
      RETURN_IF_ERROR(
          RequireFile(ckpt->vocab_file, "RoBERTa's BPE vocabulary"));
      RETURN_IF_ERROR(RequireFile(ckpt->merges_file, "RoBERTa's BPE merges"));
      ASSIGN_OR_RETURN(ckpt->roberta_tokenizer, ReadRobertaTokenizerConfig(config));
      return absl::OkStatus();
    }
    case ModelFamily::kXlmRoberta:
      ckpt->tokenizer_kind = TokenizerKind::kSentencePiece;
      ckpt->vocab_file = (root / "sentencepiece.bpe.model").string();
      return RequireFile(ckpt->vocab_file, "XLM-R's SentencePiece model");
    default: {
      ckpt->tokenizer_kind = TokenizerKind::kWordPiece;
      ASSIGN_OR_RETURN(ckpt->tokenizer, ReadTokenizerConfig(config));
      ckpt->vocab_file = (root / "vocab.txt").string();
      return CheckVocab(ckpt->vocab_file);
    }
  }
}

}  // namespace

absl::StatusOr<Checkpoint> Checkpoint::Load(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": model directory does not exist"));
  }
  Checkpoint ckpt;
  ckpt.dir = dir;
  const fs::path root(dir);
  const std::string config_path = (root / "config.json").string();
  if (!fs::exists(config_path, ec)) {
    return absl::NotFoundError(config_path + ": missing (required)");
  }
  ASSIGN_OR_RETURN(ckpt.config, BertConfig::FromFile(config_path));

  const std::string st_path = (root / "model.safetensors").string();
  const std::string bin_path = (root / "pytorch_model.bin").string();
  StateDict raw;
  if (fs::exists(st_path, ec)) {
    ckpt.weights_file = st_path;
    ASSIGN_OR_RETURN(raw, ReadSafetensors(st_path));
  } else if (fs::exists(bin_path, ec)) {
    ckpt.weights_file = bin_path;
    ASSIGN_OR_RETURN(raw, ReadPytorchBin(bin_path));
  } else {
    return absl::NotFoundError(
        absl::StrCat(dir,
                     ": no weights file; looked for model.safetensors and "
                     "pytorch_model.bin"));
  }
  const ModelFamily family = ckpt.config.family;
  ckpt.weights = NormaliseKeys(std::move(raw), family);
  for (const auto& [key, shape] : RequiredShapes(ckpt.config)) {
    RETURN_IF_ERROR(CheckKeyShape(ckpt.weights, ckpt.weights_file, key, shape,
                                  ToFileKey(family, key, false)));
  }
  ASSIGN_OR_RETURN(ckpt.head, ResolveBertHead(&ckpt.config, ckpt.weights,
                                              config_path, ckpt.weights_file));
  ckpt.weights_dtype = DtypeName(
      ckpt.weights.at("bert.embeddings.word_embeddings.weight").scalar_type());
  if (ckpt.weights_dtype != "F32" && ckpt.weights_dtype != "F16" &&
      ckpt.weights_dtype != "BF16") {
    return absl::InvalidArgumentError(
        absl::StrCat(ckpt.weights_file, ": weights dtype ", ckpt.weights_dtype,
                     " is not F32, F16 or BF16"));
  }
  RETURN_IF_ERROR(FindTokenizer(root, family, &ckpt));
  return ckpt;
}

}  // namespace bertology
