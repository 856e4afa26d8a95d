#include "server/core/tokenizer/wordpiece.h"

#include "common/utf8.h"

namespace bertology {

void WordpieceTokenizer::Split(const BasicWord& word,
                               std::vector<WordPiece>* out) const {
  const int n = static_cast<int>(word.size());
  auto unknown = [&] {
    out->push_back({vocab_->Token(vocab_->unk_id()), vocab_->unk_id(), 0, n});
  };
  if (n > max_input_chars_per_word_) {
    unknown();
    return;
  }
  // The word in UTF-8, with the byte offset of each character, so that
  // candidate substrings are slices rather than re-encodings.
  std::string utf8;
  std::vector<size_t> offsets;
  offsets.reserve(n + 1);
  for (const NormalizedChar& c : word) {
    offsets.push_back(utf8.size());
    AppendUtf8(c.cp, &utf8);
  }
  offsets.push_back(utf8.size());

  const size_t first_piece = out->size();
  std::string candidate;
  int start = 0;
  while (start < n) {
    int end = n;
    int id = -1;
    while (start < end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(utf8, offsets[start], offsets[end] - offsets[start]);
      id = vocab_->Id(candidate);
      if (id >= 0) break;
      --end;
    }
    if (id < 0) {
      out->resize(first_piece);
      unknown();
      return;
    }
    out->push_back({candidate, id, start, end});
    start = end;
  }
}

}  // namespace bertology
