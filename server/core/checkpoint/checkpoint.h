// An HF model directory, read and validated, not yet turned into a model.
#ifndef BERTOLOGY_CORE_CHECKPOINT_H_
#define BERTOLOGY_CORE_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/bert_head.h"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/core/tokenizer/tokenizer_config.h"

namespace bertology {

// The tokenizer a checkpoint ships, by family.
enum class TokenizerKind {
  kWordPiece,      // vocab.txt (BERT, DistilBERT, ELECTRA)
  kByteLevelBpe,   // vocab.json + merges.txt (RoBERTa)
  kSentencePiece,  // sentencepiece.bpe.model (XLM-R)
};

struct Checkpoint {
  std::string dir;
  BertConfig config;
  // Keys normalised to HF's BertFor* names: another family's keys renamed
  // (model_family.h), "bert." prefix added where the file had none (a
  // BertModel save), legacy LayerNorm gamma/beta renamed to weight/bias,
  // the position_ids/token_type_ids buffers dropped. Tensors keep the
  // file's dtype.
  StateDict weights;
  std::string weights_file;   // path of the file the weights came from
  std::string weights_dtype;  // "F32", "F16" or "BF16" (the file's dtype)
  TokenizerKind tokenizer_kind = TokenizerKind::kWordPiece;
  // vocab.txt, vocab.json or sentencepiece.bpe.model; merges.txt for BPE.
  std::string vocab_file;
  std::string merges_file;
  // From tokenizer_config.json (HF's defaults when it is absent): WordPiece's
  // settings, or RoBERTa's.
  TokenizerOptions tokenizer;
  RobertaTokenizerOptions roberta_tokenizer;
  // The head (from config.json's architectures, or the keys) and the keys
  // it leaves unused. The keys it needs are present with their shapes.
  BertHead head;

  // Reads config.json, model.safetensors (preferred) or pytorch_model.bin,
  // tokenizer_config.json (optional; tokenizer_config.h) and checks the
  // family's tokenizer files exist. Errors name the file and the fault,
  // and a weight by the key the file has.
  static absl::StatusOr<Checkpoint> Load(const std::string& dir);
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_CHECKPOINT_H_
