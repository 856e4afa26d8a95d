// XLM-RoBERTa's tokenizer: a SentencePiece model (`sentencepiece.bpe.model`)
// run by Debian's libsentencepiece, with HF XLMRobertaTokenizer's fairseq
// ids and special tokens. Checked against HF's slow tokenizer (which runs
// sentencepiece itself) and fast one in sentencepiece_tokenizer_test.cc.
#ifndef BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_TOKENIZER_H_
#define BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

class SentencePieceModel;

struct XlmRobertaTokenizerOptions {
  // `<mask>` swallows the whitespace before it ("a <mask>" -> "▁a",
  // "<mask>"), as HF's AddedToken("<mask>", lstrip=True) for XLM-R.
  bool mask_lstrip = true;
};

struct SentencePieceToken {
  int id = 0;         // fairseq id (see XlmRobertaTokenizer)
  std::string piece;  // "▁Hello", "<mask>"; an unknown's own text
  // [byte_start, byte_end) in the original (not NFKC-normalised) text of
  // `sequence`, as sentencepiece gives it: a "▁word" piece covers the
  // whitespace run before it (all of it: "a   b" -> "▁b" is 1..5) except at
  // the start of the text or after a special token, where sentencepiece
  // drops that whitespace; a lone "▁" that only stands for the dummy prefix
  // is empty; a piece NFKC composed covers all it came from ("e" U+0301 ->
  // "é": 3 bytes). HF's fast offsets differ exactly there (one whitespace
  // character, the next character, a cut inside the composition). An
  // in-text special's span includes the whitespace its lstrip removed.
  // 0, 0 for the <s>/</s> that Encode adds.
  int byte_start = 0, byte_end = 0;
  int sequence = -1;  // 0: text_a, 1: text_b, -1: added by Encode
  bool special = false;
};

// Immutable after FromFile and safe to use from many threads: Tokenize
// and Encode only call SentencePieceProcessor's const Encode, which keeps
// no mutable state (sentencepiece_model.h).
class XlmRobertaTokenizer {
 public:
  // fairseq's dictionary: four specials, then sentencepiece id + 1
  // (sentencepiece's own <unk>, id 0, maps to kUnkId), `<mask>` last.
  static constexpr int kBosId = 0;  // <s>
  static constexpr int kPadId = 1;  // <pad>
  static constexpr int kEosId = 2;  // </s>
  static constexpr int kUnkId = 3;  // <unk>
  static constexpr int kFairseqOffset = 1;

  // NOT_FOUND naming the path when it cannot be read; INVALID_ARGUMENT
  // naming it when it is not a SentencePiece model.
  static absl::StatusOr<std::unique_ptr<XlmRobertaTokenizer>> FromFile(
      const std::string& sentencepiece_model_path,
      const XlmRobertaTokenizerOptions& options = {});
  ~XlmRobertaTokenizer();

  // Pieces of one text, special tokens in it kept whole (sequence 0).
  // INVALID_ARGUMENT if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<SentencePieceToken>> Tokenize(
      std::string_view text) const;
  // `<s> a </s>` or `<s> a </s></s> b </s>` (no truncation).
  absl::StatusOr<std::vector<SentencePieceToken>> Encode(
      std::string_view text_a, std::optional<std::string_view> text_b) const;

  int mask_id() const { return mask_id_; }
  // HF's vocab_size: the model's embedding rows.
  int vocab_size() const { return mask_id_ + 1; }

 private:
  XlmRobertaTokenizer(std::unique_ptr<SentencePieceModel> model,
                      XlmRobertaTokenizerOptions options);
  void EncodeSegment(std::string_view text, int offset,
                     std::vector<SentencePieceToken>* out) const;

  std::unique_ptr<const SentencePieceModel> model_;
  XlmRobertaTokenizerOptions options_;
  int mask_id_ = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_TOKENIZER_H_
