// The first stage of BERT's tokenizer (BasicTokenizer of google-research/bert
// tokenization.py): clean the text, isolate CJK ideographs, split on
// whitespace, optionally lower-case and strip accents, split on punctuation.
// Unlike the Python original it keeps, for every output character, the span
// of ORIGINAL characters it came from, so word pieces can be mapped back.
#ifndef BERTOLOGY_CORE_BASIC_TOKENIZER_H_
#define BERTOLOGY_CORE_BASIC_TOKENIZER_H_

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

struct BasicTokenizerOptions {
  bool do_lower_case = true;  // lower-case, NFD, drop Mn (accents)
  bool tokenize_chinese_chars = true;
};

// Stateless apart from its options; safe to share between threads.
class BasicTokenizer {
 public:
  explicit BasicTokenizer(BasicTokenizerOptions options) : options_(options) {}

  // Splits decoded text into words, in order.
  std::vector<BasicWord> Split(const std::vector<char32_t>& text) const;

 private:
  // Lower-cases, decomposes (NFD) and strips Mn from one whitespace token
  // (`token` holds indices into `text`), appending outputs to `out`.
  void Normalize(const std::vector<char32_t>& text,
                 const std::vector<int>& token,
                 std::vector<NormalizedChar>* out) const;

  BasicTokenizerOptions options_;
};

// Character classes of tokenization.py, exposed for tests.
bool IsBertWhitespace(char32_t cp);   // _is_whitespace
bool IsBertControl(char32_t cp);      // _is_control
bool IsBertPunctuation(char32_t cp);  // _is_punctuation
bool IsCjkIdeograph(char32_t cp);     // _is_chinese_char

}  // namespace bertology

#endif  // BERTOLOGY_CORE_BASIC_TOKENIZER_H_
