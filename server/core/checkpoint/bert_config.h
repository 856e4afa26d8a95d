// The architecture of a BERT checkpoint, read from an HF `config.json`.
#ifndef BERTOLOGY_CORE_BERT_CONFIG_H_
#define BERTOLOGY_CORE_BERT_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

struct BertConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  // "gelu" (exact erf form, HF's default), "gelu_new"/"gelu_pytorch_tanh"
  // (tanh approximation) or "relu". Anything else is refused at load.
  std::string hidden_act = "gelu";
  double layer_norm_eps = 1e-12;
  int max_position_embeddings = 512;
  int type_vocab_size = 2;
  int pad_token_id = 0;
  // Label names by class index; from `id2label` (keys are decimal strings).
  // Empty when the config names no labels (a plain BertModel).
  std::vector<std::string> id2label;
  // HF `architectures[0]` when present, e.g. "BertForSequenceClassification".
  std::string architecture;

  int head_size() const { return hidden_size / num_attention_heads; }
  int num_heads_total() const {
    return num_hidden_layers * num_attention_heads;
  }

  // Parses and validates (sizes positive, hidden divisible by heads, known
  // activation). Errors name `source` (the file path) and the field.
  static absl::StatusOr<BertConfig> FromJson(const std::string& json_text,
                                             const std::string& source);
  static absl::StatusOr<BertConfig> FromFile(const std::string& path);
  // The HF `config.json` text for this config (used by the trainer).
  std::string ToJson() const;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_CONFIG_H_
