// An HF model directory, read and validated, not yet turned into a model.
#ifndef BERTOLOGY_CORE_CHECKPOINT_H_
#define BERTOLOGY_CORE_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/bert_head.h"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

struct Checkpoint {
  std::string dir;
  BertConfig config;
  // Keys normalised to HF's BertFor* names: "bert." prefix added where the
  // file had none (a BertModel save), legacy LayerNorm gamma/beta renamed to
  // weight/bias, the position_ids/token_type_ids buffers dropped. Tensors
  // keep the file's dtype.
  StateDict weights;
  std::string weights_file;   // path of the file the weights came from
  std::string weights_dtype;  // "F32", "F16" or "BF16" (the file's dtype)
  std::string vocab_file;     // path to vocab.txt
  // From tokenizer_config.json (HF's defaults when it is absent).
  TokenizerOptions tokenizer;
  // The head (from config.json's architectures, or the keys) and the keys
  // it leaves unused. The keys it needs are present with their shapes.
  BertHead head;

  // Reads config.json, model.safetensors (preferred) or pytorch_model.bin,
  // tokenizer_config.json (optional; tokenizer_config.h) and checks
  // vocab.txt exists. Errors
  // name the file and the fault.
  static absl::StatusOr<Checkpoint> Load(const std::string& dir);
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_CHECKPOINT_H_
