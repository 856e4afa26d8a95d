// RoBERTa's and XLM-R's tokenizers behind the Tokenizer interface: the
// byte-level BPE (byte_level_bpe.h) and SentencePiece
// (sentencepiece_tokenizer.h) models' pieces as Tokens, with character
// offsets and HF fast's word_ids(), laid out as `<s> a </s></s> b </s>`.
//
// Thread safety: immutable; Tokenize and Encode may run from many threads.
#ifndef BERTOLOGY_CORE_TOKENIZER_PIECE_TOKENIZERS_H_
#define BERTOLOGY_CORE_TOKENIZER_PIECE_TOKENIZERS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/tokenizer/byte_level_bpe.h"
#include "server/core/tokenizer/sentencepiece_tokenizer.h"
#include "server/core/tokenizer/tokenizer.h"
#include "server/core/tokenizer/tokenizer_config.h"

namespace bertology {

// vocab.json + merges.txt. Words are GPT-2's pre-tokens (a special token
// written in the text is one word).
class RobertaTokenizer final : public Tokenizer {
 public:
  // Errors name the file (ByteLevelBpe::FromFiles); FAILED_PRECONDITION
  // naming vocab.json when it lacks one of the five specials.
  static absl::StatusOr<std::unique_ptr<RobertaTokenizer>> FromFiles(
      const std::string& vocab_json, const std::string& merges_txt,
      const RobertaTokenizerOptions& options);

  absl::StatusOr<std::vector<Token>> Tokenize(
      std::string_view text) const override;
  int vocab_size() const override { return bpe_->vocab_size(); }
  const char* kind() const override { return "byte_level_bpe"; }

 private:
  RobertaTokenizer(std::unique_ptr<ByteLevelBpe> bpe, SpecialTokens specials);
  std::unique_ptr<ByteLevelBpe> bpe_;
};

// sentencepiece.bpe.model with fairseq's ids. Words are whitespace
// separated: a piece starting with "▁" starts one (as HF fast's Metaspace
// pre-tokenizer splits).
class XlmrTokenizer final : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<XlmrTokenizer>> FromFile(
      const std::string& sentencepiece_model,
      const XlmRobertaTokenizerOptions& options);

  absl::StatusOr<std::vector<Token>> Tokenize(
      std::string_view text) const override;
  int vocab_size() const override { return pieces_->vocab_size(); }
  const char* kind() const override { return "sentencepiece"; }

 private:
  XlmrTokenizer(std::unique_ptr<XlmRobertaTokenizer> pieces,
                SpecialTokens specials);
  std::unique_ptr<XlmRobertaTokenizer> pieces_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_PIECE_TOKENIZERS_H_
