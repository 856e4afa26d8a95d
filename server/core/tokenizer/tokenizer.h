// BERT's tokenizer (BasicTokenizer + WordpieceTokenizer of the original
// google-research/bert tokenization.py, as HF's BertTokenizer), with
// character offsets of each piece in the original text.
#ifndef BERTOLOGY_CORE_TOKENIZER_H_
#define BERTOLOGY_CORE_TOKENIZER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/tokenizer/basic_tokenizer.h"
#include "server/core/tokenizer/vocab.h"

namespace bertology {

// The settings of HF's BertTokenizer, with its defaults (what
// ReadTokenizerConfig gives for an absent tokenizer_config.json).
struct TokenizerOptions {
  bool do_lower_case = true;
  // Strip accents (NFD, drop Mn). nullopt follows do_lower_case (HF's
  // None, as the original BERT); true/false apply regardless of it.
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;
  int max_input_chars_per_word = 100;
  // Whitespace tokens the basic tokenizer keeps whole and gives to the
  // vocabulary without WordPiece (see BasicTokenizerOptions::never_split
  // for how do_lower_case applies to them); one absent from the vocabulary
  // gets [UNK]'s id but keeps its text, as HF.
  std::vector<std::string> never_split;
  // Strings cut out of the text before anything else and kept as one
  // token each, neither cleaned nor lower-cased, as HF splits text on its
  // special and added tokens first: "a[MASK]b" -> "a", "[MASK]", "b".
  // Matched case-sensitively as whole strings anywhere in the raw text
  // (HF's AddedToken defaults: lstrip, rstrip and single_word false), the
  // leftmost match first and the longest of those starting there. Each is
  // its own word; its id is the vocabulary's, or [UNK]'s when absent (HF
  // would give an added token a new id past the vocabulary instead).
  std::vector<std::string> special_tokens = {"[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                             "[MASK]"};
};

struct Token {
  std::string text;  // the word piece, e.g. "##ing", or "[CLS]"
  int id = 0;
  int segment = 0;  // token type id: 0 for text_a (and [CLS]), 1 for text_b
  // [char_start, char_end) in Unicode code points of the original text of
  // its segment, and the same span in bytes. Special tokens: 0, 0.
  int char_start = 0, char_end = 0;
  int byte_start = 0, byte_end = 0;
  // Index of the whitespace/punctuation-split word this piece belongs to,
  // counted across the whole encoding (text_a's words, then text_b's);
  // -1 for special tokens.
  int word_index = -1;
  bool special = false;
};

// `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`.
struct Encoding {
  std::vector<Token> tokens;
  bool truncated = false;  // pieces were dropped to fit max_length
  int num_words = 0;       // number of distinct word_index values
};

// Immutable; safe to use from many threads.
class Tokenizer {
 public:
  Tokenizer(Vocab vocab, TokenizerOptions options);

  // Word pieces of one text (no [CLS]/[SEP] added, segment 0, word indices
  // from 0). INVALID_ARGUMENT if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<Token>> Tokenize(std::string_view text) const;

  // Full model input. Pairs are truncated longest-first (one piece at a
  // time from the end of the longer segment, as HF's
  // truncation="longest_first") so the total fits `max_length` (>= 3 for a
  // single text, >= 4 for a pair).
  absl::StatusOr<Encoding> Encode(std::string_view text_a,
                                  std::optional<std::string_view> text_b,
                                  int max_length) const;

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }

 private:
  absl::StatusOr<std::vector<Token>> TokenizeText(std::string_view text) const;

  Vocab vocab_;
  TokenizerOptions options_;
  BasicTokenizer basic_;
  // options_.special_tokens decoded, longest first (for the longest match).
  std::vector<std::u32string> special_tokens_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_H_
