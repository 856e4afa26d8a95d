// Which HF BERT head a checkpoint carries, and which of its weights the
// server computes with.
//
// HF saves every BERT head with the same encoder keys (`bert.*`, or no
// prefix for a plain BertModel) and its own head keys on top. The server
// runs the encoder for all of them (Tokenize, GetAttention), and a head on
// top for two: the sequence classifier (pooler + classifier on [CLS]) and
// the token classifier (classifier on every position). Other heads' keys
// (MLM, NSP, QA outputs, the multiple-choice scorer) are listed as unused,
// never an error.
#ifndef BERTOLOGY_CORE_BERT_HEAD_H_
#define BERTOLOGY_CORE_BERT_HEAD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/head_kind.h"
#include "server/core/checkpoint/state_dict.h"

namespace bertology {

// OK when `weights` has `key` with exactly `expected` shape; else NOT_FOUND
// ("<file>: missing key K (expected shape [..])") or INVALID_ARGUMENT
// ("<file>: key K has shape [..], expected [..]"), K being `file_key` (the
// name in the file, model_family.h) when given.
absl::Status CheckKeyShape(const StateDict& weights, const std::string& file,
                           const std::string& key,
                           const std::vector<int64_t>& expected,
                           const std::string& file_key = "");

// HF's class names of `family` this server knows (the heads it computes
// and those whose encoder it serves).
std::vector<std::string> KnownArchitectures(ModelFamily family);

// Decides the head from `config.architecture` (or, when empty, the keys:
// classifier with pooler = sequence classifier, classifier without pooler =
// token classifier, cls.* = MaskedLM/PreTraining, qa_outputs = QA, else
// BertModel) and checks the keys that head needs. `weights` must already
// have HF's BertFor* key names (a "bert." prefix on the encoder). Errors:
// INVALID_ARGUMENT for an architecture that is not a BERT one this server
// knows (naming `config_file`); NOT_FOUND naming `weights_file`, the key
// and the expected shape for a missing head key; INVALID_ARGUMENT for a
// head key of the wrong shape, or an id2label that disagrees with the
// classifier's rows. Fills id2label with LABEL_k when the config has none.
absl::StatusOr<BertHead> ResolveBertHead(BertConfig* config,
                                         const StateDict& weights,
                                         const std::string& config_file,
                                         const std::string& weights_file);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_HEAD_H_
