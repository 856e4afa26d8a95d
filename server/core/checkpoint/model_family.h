// The BERT family this server serves, and how each member's HF checkpoint
// names its weights.
//
// RoBERTa, XLM-RoBERTa, DistilBERT and ELECTRA are BERT's encoder with
// other names and small differences (where positions start, token types,
// an embedding projection, the classifier head). The server runs them all
// with one module tree (bert_model.h) whose parameter names are
// BertForSequenceClassification's: each family's file keys are renamed to
// those at load (ToInternalKey) and back for every message a user reads
// (ToFileKey), so an error names the key as the file has it.
//
// No libtorch here.
#ifndef BERTOLOGY_CORE_CHECKPOINT_MODEL_FAMILY_H_
#define BERTOLOGY_CORE_CHECKPOINT_MODEL_FAMILY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bertology {

enum class ModelFamily { kBert, kRoberta, kXlmRoberta, kDistilBert, kElectra };

// HF's model_type: "bert", "roberta", "xlm-roberta", "distilbert",
// "electra".
const char* ModelTypeName(ModelFamily family);
// nullopt for any other model_type.
std::optional<ModelFamily> FamilyFromModelType(std::string_view model_type);
// The model_types FamilyFromModelType knows, quoted and comma-joined, for
// messages.
std::string SupportedModelTypes();

// RoBERTa and XLM-R count positions from pad_token_id + 1 over non-padding
// tokens (HF's create_position_ids_from_input_ids), and have one token type.
bool UsesPaddingOffsetPositions(ModelFamily family);

// HF's class-name stem: "Bert", "Roberta", "XLMRoberta", "DistilBert",
// "Electra" (architectures are stem + "ForSequenceClassification", ...).
const char* ArchitectureStem(ModelFamily family);

// The activation between the classifier head's dense layer and its output
// layer on the first token: BERT's pooler tanh, RoBERTa's
// classifier.dense tanh, DistilBERT's pre_classifier ReLU, ELECTRA's
// classifier.dense GELU (exact).
enum class PoolerActivation { kTanh, kRelu, kGelu };
PoolerActivation PoolerActivationOf(ModelFamily family);

// A key of the family's HF file (prefix added for a base-model save that
// has none) in BertForSequenceClassification's names, e.g. DistilBERT's
// "distilbert.transformer.layer.0.attention.q_lin.weight" ->
// "bert.encoder.layer.0.attention.self.query.weight", RoBERTa's
// "classifier.out_proj.bias" -> "classifier.bias". Keys the server never
// computes with (another head's) come back unchanged.
std::string ToInternalKey(ModelFamily family, const std::string& file_key);

// The inverse, for messages: the key the family's file has (or would
// have) for `internal_key`. `sequence_head`: the checkpoint is a sequence
// classifier (RoBERTa's and ELECTRA's "classifier." is then
// "classifier.out_proj."; their token classifiers' is "classifier.").
std::string ToFileKey(ModelFamily family, const std::string& internal_key,
                      bool sequence_head);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_CHECKPOINT_MODEL_FAMILY_H_
