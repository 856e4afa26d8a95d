// A loaded BERT, ready to serve: config, tokenizer and weights on a device.
//
// This is the one interface the service uses. It never throws: libtorch's
// c10::Error (and std::exception) are caught here and returned as status.
// Thread safety: a Model is immutable after Load(); Forward() may be called
// from many threads at once (it runs under torch::InferenceMode and keeps
// no per-call state in the module).
#ifndef BERTOLOGY_CORE_MODEL_H_
#define BERTOLOGY_CORE_MODEL_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/bert_config.h"
#include "common/head_mask.h"
#include "server/core/tokenizer.h"

namespace bertology {

class BertForSequenceClassificationImpl;  // bert_model.h

struct ModelOptions {
  std::string dir;             // HF model directory
  std::string device = "cpu";  // "cpu" or "cuda[:N]"
  // Compute dtype: "auto" (F32 on CPU; the file's dtype on CUDA), "F32",
  // "F16" or "BF16".
  std::string dtype = "auto";
  int max_seq_len = 0;  // 0: the model's max_position_embeddings
};

// A padded batch on the model's device. B rows, T positions.
struct ModelInput {
  torch::Tensor input_ids;       // [B, T] int64
  torch::Tensor token_type_ids;  // [B, T] int64
  torch::Tensor attention_mask;  // [B, T] int64, 1 = real token, 0 = padding
};

struct ForwardOptions {
  // Per-row head mask values, [B, L, H] float32 in [0, 1] (any device; moved
  // to the model's). Undefined: no mask (all heads kept).
  torch::Tensor head_mask;
  // [B] float32, 1 where that row's mask uses AblationMode::kUniform, 0 for
  // kZero. Undefined: every row kZero.
  torch::Tensor uniform_rows;
  // Layers whose post-mask attention probabilities to return.
  std::vector<int> attention_layers;
  // Run only layers [start_layer, L), starting from `start_hidden`
  // ([B, T, D], the input hidden state of layer `start_layer`, e.g. taken
  // from a cached unmasked pass). start_layer == 0: start from embeddings.
  int start_layer = 0;
  torch::Tensor start_hidden;
  // Layers whose *input* hidden state ([B, T, D]) to return; layer L means
  // the encoder output.
  std::vector<int> capture_hidden;
  // Run pooler + classifier (FAILED_PRECONDITION on a plain BertModel).
  bool compute_logits = true;
  // Run the last layer for [CLS] only when nothing else reads it (see
  // BertRunOptions); false runs it in full, as HF does.
  bool cls_only_last_layer = true;
};

struct ForwardOutput {
  torch::Tensor logits;  // [B, C] float32, CPU
  std::map<int, torch::Tensor>
      attentions;  // layer -> [B, H, T, T] float32, CPU
  std::map<int, torch::Tensor>
      hidden;  // layer -> [B, T, D], model device/dtype
};

class Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Load(
      const ModelOptions& options);
  ~Model();

  const BertConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  bool has_classifier() const { return has_classifier_; }
  int max_seq_len() const { return max_seq_len_; }
  const std::string& device() const { return device_name_; }
  const std::string& dtype() const { return dtype_name_; }
  const std::string& dir() const { return dir_; }

  // Pads `encodings` to the longest and moves them to the device.
  absl::StatusOr<ModelInput> MakeBatch(
      const std::vector<const Encoding*>& encodings) const;

  // Validates shapes and ranges (INVALID_ARGUMENT naming the field: token
  // ids in the vocabulary, T <= max_position_embeddings, head_mask [B, L, H]
  // with finite values in [0, 1], start_hidden [B, T, D], layer indices in
  // range); FAILED_PRECONDITION for compute_logits without a classifier;
  // INTERNAL for a libtorch failure. Implemented in model_forward.cc.
  absl::StatusOr<ForwardOutput> Forward(const ModelInput& input,
                                        const ForwardOptions& options) const;

  // Builds the [B, L, H] / [B] CPU tensors of ForwardOptions from per-row
  // masks (nullptr = identity). Leaves both undefined when no row masks
  // anything, and uniform_rows undefined when no row is kUniform. A mask
  // whose shape differs from the first non-null one fills its row with NaN,
  // which Forward() refuses naming the row.
  static void FillMaskTensors(const std::vector<const HeadMask*>& masks,
                              ForwardOptions* options);

 private:
  Model() = default;
  BertConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<BertForSequenceClassificationImpl> module_;
  bool has_classifier_ = false;
  int max_seq_len_ = 0;
  std::string device_name_, dtype_name_, dir_;
  torch::Device device_{torch::kCPU};
  torch::ScalarType scalar_type_ = torch::kFloat;  // the compute dtype
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_MODEL_H_
