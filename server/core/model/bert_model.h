// HF's BertForSequenceClassification as torch::nn modules, and the two
// other shapes it takes: a BertForTokenClassification (no pooler, the
// classifier on every position) and the encoder alone (every other BERT
// head: its own head's weights are not loaded).
//
// Submodules are registered under HF's names, so `named_parameters()` keys
// are exactly the keys of an HF state dict:
//   bert.embeddings.{word,position,token_type}_embeddings.weight,
//   bert.embeddings.LayerNorm.{weight,bias}, bert.encoder.layer.{i}.…
//   (bert_layer.h), bert.pooler.dense.*, classifier.*
// A plain BertModel checkpoint (no classifier) builds without the pooler and
// classifier submodules; Run() then refuses compute_logits.
//
// Thread safety: Run() keeps no per-call state in the module; in eval mode it
// may be called from many threads at once. It throws c10::Error on libtorch
// failures; Model (model.h) is the boundary that turns them into status.
#ifndef BERTOLOGY_CORE_BERT_MODEL_H_
#define BERTOLOGY_CORE_BERT_MODEL_H_

#include <torch/nn.h>
#include <torch/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/head_mask.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/bert_head.h"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/model/activation_patch.h"
#include "server/core/model/bert_layer.h"
#include "server/core/model/forward_options.h"
#include "server/core/model/head_mask_tensors.h"

namespace bertology {

// HF's defaults; BertConfig does not carry them (the trainer may set others).
struct BertDropout {
  double hidden = 0.1;
  double attention = 0.1;
};

// The family's embeddings (model_family.h): word + position (+ token
// type where the model has them, not DistilBERT) at embedding_size,
// LayerNorm, dropout, then ELECTRA's embeddings_project (`project`) to
// hidden_size where the two differ. Positions are 0..T-1, or RoBERTa's and
// XLM-R's pad_token_id + 1 onwards over non-padding tokens.
class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  BertEmbeddingsImpl(const BertConfig& config, double hidden_dropout);
  // input_ids, token_type_ids [B, T] int64 -> [B, T, D] (T <=
  // BertConfig::max_input_tokens()).
  torch::Tensor forward(const torch::Tensor& input_ids,
                        const torch::Tensor& token_type_ids);
  // As forward, from word embeddings [B, T, E] in place of the lookup of
  // input_ids (integrated gradients moves them): positions (from
  // input_ids, as forward counts them) and token types are added and
  // normalised as forward does.
  torch::Tensor forward_words(const torch::Tensor& words,
                              const torch::Tensor& input_ids,
                              const torch::Tensor& token_type_ids);
  // The word-embedding table [V, E].
  const torch::Tensor& word_table() const { return word_embeddings_->weight; }

 private:
  // [B, T] or [1, T] int64 position ids of input_ids.
  torch::Tensor PositionIds(const torch::Tensor& input_ids) const;

  bool padding_offset_positions_;
  int64_t pad_token_id_;
  torch::nn::Embedding word_embeddings_{nullptr};
  torch::nn::Embedding position_embeddings_{nullptr};
  torch::nn::Embedding token_type_embeddings_{nullptr};  // null: none
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Linear project_{nullptr};  // null unless E != D
};
TORCH_MODULE(BertEmbeddings);

// `encoder.layer` as a ModuleList, so layer i is `encoder.layer.{i}`.
class BertEncoderImpl : public torch::nn::Module {
 public:
  BertEncoderImpl(const BertConfig& config, const BertDropout& dropout);
  BertLayerImpl& layer(int i) const { return *typed_[i].ptr(); }
  int size() const { return static_cast<int>(typed_.size()); }

 private:
  torch::nn::ModuleList layers_{nullptr};
  std::vector<BertLayer> typed_;  // the same modules, typed
};
TORCH_MODULE(BertEncoder);

// dense + activation on the first token: BERT's pooler (tanh), and the
// first half of RoBERTa's and ELECTRA's classification heads (tanh, GELU)
// and of DistilBERT's (pre_classifier, ReLU); the classifier is the other.
class BertPoolerImpl : public torch::nn::Module {
 public:
  BertPoolerImpl(const BertConfig& config, PoolerActivation activation);
  torch::Tensor forward(const torch::Tensor& hidden);  // [B,T,D] -> [B,D]

 private:
  PoolerActivation activation_;
  torch::nn::Linear dense_{nullptr};
};
TORCH_MODULE(BertPooler);

// `bert.*`: embeddings, encoder and (optional) pooler.
class BertModelImpl : public torch::nn::Module {
 public:
  // `pooler`: the activation of the pooler to build; nullopt for none.
  BertModelImpl(const BertConfig& config, const BertDropout& dropout,
                std::optional<PoolerActivation> pooler);
  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};  // null without a pooler
};
TORCH_MODULE(BertModel);

struct BertRunOutput {
  // [B, C] (sequence classifier) or [B, T, C] (token classifier), compute
  // dtype, device.
  torch::Tensor logits;
  std::map<int, torch::Tensor> attentions;    // layer -> [B, H, T, T]
  std::map<int, torch::Tensor> hidden;        // layer -> [B, T, D]
  std::map<int, torch::Tensor> head_outputs;  // layer -> [B, T, D]
};

// Where a pass resumes (EngineOptions::start_layer), e.g. from what an
// unmasked pass captured (capture_hidden, capture_head_outputs).
struct LayerStart {
  // [B, T, D]: layer start_layer's input hidden state. Needed when
  // start_layer > 0; at 0 it replaces the embeddings.
  torch::Tensor hidden;
  // [B, T, D] or undefined: layer start_layer's head outputs under no mask.
  // With them that layer skips its queries, keys, values and attention and
  // masks these (BertLayer::forward_from_head_outputs): no row in kUniform,
  // no patch, no attention or head-output capture at that layer.
  torch::Tensor head_outputs;
};

class BertForSequenceClassificationImpl : public torch::nn::Module {
 public:
  // num_labels == 0 or kind == kEncoder: the encoder alone (no pooler, no
  // classifier). kTokenClassification: a classifier on every position and
  // no pooler (HF builds BertForTokenClassification without one).
  // `pooler_activation`: the family's (BertHead::pooler_activation).
  BertForSequenceClassificationImpl(
      const BertConfig& config, int num_labels, BertDropout dropout = {},
      HeadKind kind = HeadKind::kSequenceClassification,
      PoolerActivation pooler_activation = PoolerActivation::kTanh);

  bool has_classifier() const { return !classifier.is_empty(); }
  HeadKind kind() const { return kind_; }
  int num_layers() const { return num_layers_; }

  // input_ids, token_type_ids, attention_mask: [B, T] int64 on the device.
  // `masks`: empty (no row masked) or one per row, nullptr for a row with
  // no mask; each [L x H], made into tensors by MakeBatchHeadMask
  // (head_mask_tensors.h: which layers to mask from HeadMask::AffectedHeads,
  // no device sync). Masks in kMean / kMeanByRole / kResample need their
  // reference (HeadMask::reference, on this device in the compute dtype);
  // the last two also `positions` (each row's token layout, and its
  // resample draw), whose fills the caller checked fit
  // (CheckReferenceFits). `start` (compute dtype, device) is where
  // options.start_layer begins. `patch` (when not null; no masks then)
  // patches each row's sites with the source run's activations
  // (activation_patch.h). Throws c10::Error on what the caller should have
  // refused first (Engine::Run does: compute_logits without a classifier,
  // a mask of the wrong shape, layers out of range).
  //
  // options.attention_kernel: kFused runs FusedAttention (bert_layer.h) in
  // the layers whose probabilities are not returned; kAuto and kExplicit
  // run the explicit softmax (kAuto is Engine's to resolve).
  BertRunOutput Run(const torch::Tensor& input_ids,
                    const torch::Tensor& token_type_ids,
                    const torch::Tensor& attention_mask,
                    const std::vector<const HeadMask*>& masks,
                    const EngineOptions& options,
                    const LayerStart& start = LayerStart(),
                    const ActivationPatch* patch = nullptr,
                    const RowPositions* positions = nullptr);
  // As Run, under a mask already made tensors: e.g. TensorHeadMask's, whose
  // values stay in the autograd graph (head importance: the caller runs
  // with grad enabled and outside InferenceMode).
  BertRunOutput RunUnder(const torch::Tensor& input_ids,
                         const torch::Tensor& token_type_ids,
                         const torch::Tensor& attention_mask,
                         const BatchHeadMask& head_mask,
                         const EngineOptions& options,
                         const LayerStart& start = LayerStart(),
                         const ActivationPatch* patch = nullptr);
  // The batch's shapes as the mask builders take them.
  MaskShape mask_shape(const torch::Tensor& input_ids) const;
  // The parameters' dtype.
  torch::ScalarType compute_dtype() const;

  BertModel bert{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};  // null without a classifier

 private:
  int num_layers_;
  int num_heads_;
  int head_size_;
  HeadKind kind_;
};
TORCH_MODULE(BertForSequenceClassification);

// Copies `weights` (HF names, any float dtype) into the module's parameters,
// converting to each parameter's dtype. Every parameter must be present with
// its exact shape (errors name the key and both shapes); keys the module
// lacks (e.g. `bert.embeddings.position_ids`, or a pooler/classifier when the
// module was built without one) are ignored.
// `file_key` names a parameter in messages as the file has it
// (model_family.h's ToFileKey); by default the internal name.
absl::Status LoadStateDict(
    const StateDict& weights, BertForSequenceClassificationImpl* module,
    const std::function<std::string(const std::string&)>& file_key = nullptr);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_MODEL_H_
