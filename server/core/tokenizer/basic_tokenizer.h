// The first stage of BERT's tokenizer (BasicTokenizer of google-research/bert
// tokenization.py): clean the text, isolate CJK ideographs, split on
// whitespace, optionally lower-case and strip accents, split on punctuation.
// Unlike the Python original it keeps, for every output character, the span
// of ORIGINAL characters it came from, so word pieces can be mapped back.
#ifndef BERTOLOGY_CORE_BASIC_TOKENIZER_H_
#define BERTOLOGY_CORE_BASIC_TOKENIZER_H_

#include <optional>
#include <string>
#include <vector>

namespace bertology {

// One normalized code point and the original characters
// [orig_start, orig_end) (indices into the input code points) it stands for.
// Original characters that produced nothing (stripped accents, dropped
// control characters inside a word) are attached to the preceding output
// character of the same whitespace token, or to the following one when
// there is none before. Several outputs of one original character (e.g. a
// Hangul syllable decomposed by NFD) share its span.
struct NormalizedChar {
  char32_t cp;
  int orig_start;
  int orig_end;
};

// A word: what WordPiece receives. Never empty.
using BasicWord = std::vector<NormalizedChar>;

// The settings of HF's BasicTokenizer (tokenization_bert.py).
struct BasicTokenizerOptions {
  bool do_lower_case = true;  // Python's str.lower() on each token
  bool tokenize_chinese_chars = true;
  // NFD and drop Mn (accents). nullopt: as do_lower_case (HF's None, the
  // original BERT's behaviour); true/false: regardless of do_lower_case.
  std::optional<bool> strip_accents;
  // Whitespace tokens (UTF-8) kept as one word: neither accent-stripped
  // nor split on punctuation. With do_lower_case the token is compared,
  // and kept, lower-cased, because HF's BertTokenizer.tokenize lower-cases
  // the whole text before its BasicTokenizer sees it: never_split ["lol"]
  // keeps "LOL" whole as "lol", and never_split ["[E1]"] never matches.
  std::vector<std::string> never_split;
};

// Stateless apart from its options; safe to share between threads.
class BasicTokenizer {
 public:
  explicit BasicTokenizer(BasicTokenizerOptions options);

  // Splits decoded text into words, in order. When `never_split_word` is
  // given it gets, for each word, whether it is a never_split token (which
  // HF's BertTokenizer gives to the vocabulary whole, without WordPiece).
  std::vector<BasicWord> Split(
      const std::vector<char32_t>& text,
      std::vector<bool>* never_split_word = nullptr) const;

 private:
  // Lower-cases and/or decomposes (NFD) and strips Mn from one whitespace
  // token (`token` holds indices into `text`), appending outputs to `out`.
  void Normalize(const std::vector<char32_t>& text,
                 const std::vector<int>& token, bool lower, bool strip,
                 std::vector<NormalizedChar>* out) const;
  // Whether `token` (lower-cased when do_lower_case) is in never_split.
  bool IsNeverSplit(const std::vector<char32_t>& text,
                    const std::vector<int>& token) const;

  BasicTokenizerOptions options_;
  bool strip_accents_;  // options_.strip_accents resolved
  std::vector<std::u32string> never_split_;
};

// Character classes of tokenization.py, exposed for tests.
bool IsBertWhitespace(char32_t cp);   // _is_whitespace
bool IsBertControl(char32_t cp);      // _is_control
bool IsBertPunctuation(char32_t cp);  // _is_punctuation
bool IsCjkIdeograph(char32_t cp);     // _is_chinese_char
// Unicode punctuation proper (categories P*), without the ASCII symbols
// _is_punctuation adds; AnalyzeHeads' to_punctuation uses it.
bool IsUnicodePunctuation(char32_t cp);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BASIC_TOKENIZER_H_
