// The architecture of a BERT-family checkpoint, read from an HF
// `config.json`: BERT's fields, or DistilBERT's under its own names (dim,
// n_layers, n_heads, hidden_dim, activation), with the family
// (model_family.h) from model_type.
#ifndef BERTOLOGY_CORE_BERT_CONFIG_H_
#define BERTOLOGY_CORE_BERT_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/checkpoint/model_family.h"

namespace bertology {

struct BertConfig {
  // From model_type; an old config without one is BERT.
  ModelFamily family = ModelFamily::kBert;
  int vocab_size = 0;
  // The word embeddings' width: ELECTRA's embedding_size, projected to
  // hidden_size by embeddings_project when they differ; else hidden_size.
  int embedding_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  // "gelu" (exact erf form, HF's default), "gelu_new"/"gelu_pytorch_tanh"
  // (tanh approximation) or "relu". Anything else is refused at load.
  std::string hidden_act = "gelu";
  double layer_norm_eps = 1e-12;
  int max_position_embeddings = 512;
  // 0 for DistilBERT (no token type embeddings); RoBERTa's is 1.
  int type_vocab_size = 2;
  // RoBERTa and XLM-R count positions from pad_token_id + 1.
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
  // The longest input the position embeddings cover:
  // max_position_embeddings, less pad_token_id + 1 for RoBERTa and XLM-R
  // (514 rows serve 512 tokens).
  int max_input_tokens() const {
    return UsesPaddingOffsetPositions(family)
               ? max_position_embeddings - pad_token_id - 1
               : max_position_embeddings;
  }

  // Parses and validates (a model_type this server serves, sizes positive,
  // hidden divisible by heads, known activation). Errors name `source` (the
  // file path) and the field.
  static absl::StatusOr<BertConfig> FromJson(const std::string& json_text,
                                             const std::string& source);
  static absl::StatusOr<BertConfig> FromFile(const std::string& path);
  // The HF `config.json` text for this config (used by the trainer).
  std::string ToJson() const;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_CONFIG_H_
