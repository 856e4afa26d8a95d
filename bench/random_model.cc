#include "bench/random_model.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/model/bert_model.h"

namespace bertology::bench {
namespace {

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteRandomBert(const std::string& vocab_dir,
                             const std::string& out_dir,
                             const RandomBertShape& shape) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", out_dir));
  }
  auto source = ReadText(vocab_dir + "/config.json");
  if (!source.ok()) return source.status();
  auto vocab = ReadText(vocab_dir + "/vocab.txt");
  if (!vocab.ok()) return vocab.status();
  int vocab_size = 0;
  for (char c : *vocab) vocab_size += c == '\n' ? 1 : 0;
  if (!vocab->empty() && vocab->back() != '\n') ++vocab_size;

  nlohmann::json config = nlohmann::json::parse(*source, nullptr, false);
  if (config.is_discarded()) {
    return absl::InvalidArgumentError(vocab_dir + "/config.json is not JSON");
  }
  config["vocab_size"] = vocab_size;
  config["hidden_size"] = shape.hidden;
  config["num_hidden_layers"] = shape.layers;
  config["num_attention_heads"] = shape.heads;
  config["intermediate_size"] = shape.intermediate;
  config["max_position_embeddings"] = shape.max_position;
  config["torch_dtype"] = "float32";
  if (absl::Status s = WriteText(out_dir + "/config.json", config.dump(2));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteText(out_dir + "/vocab.txt", *vocab); !s.ok()) {
    return s;
  }
  if (fs::exists(vocab_dir + "/tokenizer_config.json")) {
    fs::copy_file(vocab_dir + "/tokenizer_config.json",
                  out_dir + "/tokenizer_config.json",
                  fs::copy_options::overwrite_existing, error);
  }

  auto parsed = BertConfig::FromFile(out_dir + "/config.json");
  if (!parsed.ok()) return parsed.status();
  torch::manual_seed(static_cast<uint64_t>(shape.seed));
  BertForSequenceClassificationImpl module(
      *parsed, static_cast<int>(parsed->id2label.size()));
  StateDict weights;
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    torch::Tensor value = item.value().detach().clone();
    if (absl::StrContains(item.key(), "LayerNorm")) {
      value.fill_(absl::EndsWith(item.key(), ".weight") ? 1.0 : 0.0);
    } else if (absl::EndsWith(item.key(), ".bias")) {
      value.zero_();
    } else {
      value.normal_(0.0, 0.02);
    }
    weights[item.key()] = value;
  }
  return WriteSafetensors(weights, out_dir + "/model.safetensors");
}

}  // namespace bertology::bench
