// The second stage of BERT's tokenizer (WordpieceTokenizer of
// google-research/bert tokenization.py): greedy longest-match-first split of
// one word into vocabulary pieces, continuation pieces prefixed with "##".
#ifndef BERTOLOGY_CORE_WORDPIECE_H_
#define BERTOLOGY_CORE_WORDPIECE_H_

#include <string>
#include <vector>

#include "server/core/tokenizer/basic_tokenizer.h"
#include "server/core/tokenizer/vocab.h"

namespace bertology {

// A piece of a word: vocabulary entry `id` (text `text`, with "##" when it
// continues a word) covering the word's characters [start, end). An
// unknown word is one [UNK] piece covering the whole word.
struct WordPiece {
  std::string text;
  int id = 0;
  int start = 0;
  int end = 0;
};

// Holds a pointer to `vocab`, which must outlive it. Thread-safe.
class WordpieceTokenizer {
 public:
  WordpieceTokenizer(const Vocab* vocab, int max_input_chars_per_word)
      : vocab_(vocab), max_input_chars_per_word_(max_input_chars_per_word) {}

  // Appends the pieces of `word` to `out`.
  void Split(const BasicWord& word, std::vector<WordPiece>* out) const;

 private:
  const Vocab* vocab_;
  int max_input_chars_per_word_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_WORDPIECE_H_
