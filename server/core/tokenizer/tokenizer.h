// The tokenizer interface the model serves through: text in, an Encoding
// (ids, pair roles, offsets, words) out, for every family's tokenizer:
// BERT's WordPiece (bert_tokenizer.h, also DistilBERT's and ELECTRA's),
// RoBERTa's byte-level BPE and XLM-R's SentencePiece
// (piece_tokenizers.h).
//
// The concrete tokenizer splits one text into pieces (Tokenize); this
// class lays out the model input around them and truncates (Encode), the
// same way for every family.
#ifndef BERTOLOGY_CORE_TOKENIZER_H_
#define BERTOLOGY_CORE_TOKENIZER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

struct Token {
  std::string text;  // the piece as the vocabulary has it: "##ing", "Ġthe"
  int id = 0;
  // The pair role: 0 for text_a and the specials before and after it, 1 for
  // text_b and the specials that open and close it. The model's token type
  // id is this where it has two types (BERT, ELECTRA), 0 where it has one
  // or none (RoBERTa, XLM-R, DistilBERT): Engine::MakeBatch.
  int segment = 0;
  // [char_start, char_end) in Unicode code points of the original text of
  // its segment, and the same span in bytes. Added specials: 0, 0.
  int char_start = 0, char_end = 0;
  int byte_start = 0, byte_end = 0;
  // Index of the word this piece belongs to (BERT: whitespace/punctuation
  // split; RoBERTa: GPT-2's pre-tokens; XLM-R: whitespace-separated, as HF
  // fast's word_ids()), counted across the whole encoding (text_a's words,
  // then text_b's); -1 for added specials.
  int word_index = -1;
  // Added by Encode ([CLS], [SEP], <s>, </s>); a special token written in
  // the text is a word of the text.
  bool special = false;
};

// `[CLS] a [SEP]` / `[CLS] a [SEP] b [SEP]` (BERT), or
// `<s> a </s>` / `<s> a </s></s> b </s>` (RoBERTa, XLM-R).
struct Encoding {
  std::vector<Token> tokens;
  bool truncated = false;  // pieces were dropped to fit max_length
  int num_words = 0;       // number of distinct word_index values
};

// The ids and texts of the tokens that lay out an input, and those the
// service uses on its own (a warm-up input, attribution baselines). -1
// where the vocabulary has none.
struct SpecialTokens {
  int cls_id = -1, sep_id = -1, pad_id = -1, unk_id = -1, mask_id = -1;
  std::string cls, sep, pad, unk, mask;
  // Separators between text_a and text_b: 1 for BERT, 2 for RoBERTa.
  int pair_separators = 1;
};

// Immutable; safe to use from many threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Pieces of one text (no specials added, segment 0, word indices from
  // 0). INVALID_ARGUMENT if `text` is not valid UTF-8.
  virtual absl::StatusOr<std::vector<Token>> Tokenize(
      std::string_view text) const = 0;
  // Rows of the model's word embeddings the ids index.
  virtual int vocab_size() const = 0;
  // "wordpiece", "byte_level_bpe" or "sentencepiece".
  virtual const char* kind() const = 0;

  // Full model input. Pairs are truncated longest-first (one piece at a
  // time from the end of the longer segment, text_b on a tie, as HF's
  // truncation="longest_first") so the total fits `max_length` (at least
  // one piece beside the specials).
  absl::StatusOr<Encoding> Encode(std::string_view text_a,
                                  std::optional<std::string_view> text_b,
                                  int max_length) const;

  const SpecialTokens& specials() const { return specials_; }

 protected:
  explicit Tokenizer(SpecialTokens specials) : specials_(std::move(specials)) {}

 private:
  SpecialTokens specials_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_H_
