// BERT's tokenizer (BasicTokenizer + WordpieceTokenizer of the original
// google-research/bert tokenization.py, as HF's BertTokenizer), with
// character offsets of each piece in the original text. DistilBERT and
// ELECTRA ship the same (vocab.txt).
#ifndef BERTOLOGY_CORE_BERT_TOKENIZER_H_
#define BERTOLOGY_CORE_BERT_TOKENIZER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/tokenizer/basic_tokenizer.h"
#include "server/core/tokenizer/tokenizer.h"
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

// Immutable; safe to use from many threads.
class BertTokenizer final : public Tokenizer {
 public:
  BertTokenizer(Vocab vocab, TokenizerOptions options);

  // Word pieces of one text (no [CLS]/[SEP] added, segment 0, word indices
  // from 0). INVALID_ARGUMENT if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<Token>> Tokenize(
      std::string_view text) const override;
  int vocab_size() const override { return vocab_.size(); }
  const char* kind() const override { return "wordpiece"; }

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }

 private:
  Vocab vocab_;
  TokenizerOptions options_;
  BasicTokenizer basic_;
  // options_.special_tokens decoded, longest first (for the longest match).
  std::vector<std::u32string> special_tokens_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BERT_TOKENIZER_H_
