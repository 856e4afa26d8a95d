#include "server/core/tokenizer/bert_tokenizer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "server/core/tokenizer/basic_tokenizer.h"
#include "server/core/tokenizer/wordpiece.h"

namespace bertology {
namespace {

// [CLS], [SEP], [PAD], [UNK] and [MASK] as the vocabulary has them.
SpecialTokens BertSpecials(const Vocab& vocab) {
  SpecialTokens s;
  auto take = [&](const char* text, int* id, std::string* out) {
    *id = vocab.Id(text);
    if (*id >= 0) *out = text;
  };
  take("[CLS]", &s.cls_id, &s.cls);
  take("[SEP]", &s.sep_id, &s.sep);
  take("[PAD]", &s.pad_id, &s.pad);
  take("[UNK]", &s.unk_id, &s.unk);
  take("[MASK]", &s.mask_id, &s.mask);
  s.pair_separators = 1;
  return s;
}

BasicTokenizerOptions BasicOptions(const TokenizerOptions& options) {
  BasicTokenizerOptions basic;
  basic.do_lower_case = options.do_lower_case;
  basic.tokenize_chinese_chars = options.tokenize_chinese_chars;
  basic.strip_accents = options.strip_accents;
  basic.never_split = options.never_split;
  return basic;
}

// Whether `needle` occurs in `text` at `at`.
bool MatchesAt(const std::vector<char32_t>& text, size_t at,
               const std::u32string& needle) {
  return at + needle.size() <= text.size() &&
         std::equal(needle.begin(), needle.end(), text.begin() + at);
}

}  // namespace

BertTokenizer::BertTokenizer(Vocab vocab, TokenizerOptions options)
    : Tokenizer(BertSpecials(vocab)),
      vocab_(std::move(vocab)),
      options_(std::move(options)),
      basic_(BasicOptions(options_)) {
  for (const std::string& token : options_.special_tokens) {
    DecodedText decoded;
    // An empty or non-UTF-8 entry can match nothing.
    if (token.empty() || !DecodeUtf8(token, &decoded).ok()) continue;
    special_tokens_.emplace_back(decoded.chars.begin(), decoded.chars.end());
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                   [](const std::u32string& a, const std::u32string& b) {
                     return a.size() > b.size();
                   });
}

// Word pieces of `text` with offsets into it; word indices from 0.
absl::StatusOr<std::vector<Token>> BertTokenizer::Tokenize(
    std::string_view text) const {
  DecodedText decoded;
  absl::Status status = DecodeUtf8(text, &decoded);
  if (!status.ok()) return status;
  const WordpieceTokenizer wordpiece(&vocab_,
                                     options_.max_input_chars_per_word);
  std::vector<Token> tokens;
  std::vector<WordPiece> pieces;
  std::vector<bool> never_split_word;
  std::vector<char32_t> segment;
  int next_word = 0;
  auto emit = [&](std::string piece_text, int id, int char_start,
                  int char_end) {
    Token token;
    token.text = std::move(piece_text);
    token.id = id;
    token.char_start = char_start;
    token.char_end = char_end;
    token.byte_start = decoded.byte_offsets[char_start];
    token.byte_end = decoded.byte_offsets[char_end];
    token.word_index = next_word;
    tokens.push_back(std::move(token));
  };
  // The basic tokenizer and WordPiece on chars [begin, end), which hold no
  // special token.
  auto tokenize_segment = [&](size_t begin, size_t end) {
    if (begin == end) return;
    segment.assign(decoded.chars.begin() + begin, decoded.chars.begin() + end);
    const int base = static_cast<int>(begin);
    const std::vector<BasicWord> words =
        basic_.Split(segment, &never_split_word);
    for (size_t w = 0; w < words.size(); ++w) {
      const BasicWord& word = words[w];
      if (never_split_word[w]) {
        // As HF's BertTokenizer._tokenize: a never_split token skips
        // WordPiece and is looked up whole (its text stays the word even
        // when the id is [UNK]'s, as HF's tokenize() returns it).
        std::string whole;
        for (const NormalizedChar& c : word) AppendUtf8(c.cp, &whole);
        const int id = vocab_.Id(whole);
        emit(std::move(whole), id >= 0 ? id : vocab_.unk_id(),
             base + word.front().orig_start, base + word.back().orig_end);
      } else {
        pieces.clear();
        wordpiece.Split(word, &pieces);
        for (WordPiece& piece : pieces) {
          emit(std::move(piece.text), piece.id,
               base + word[piece.start].orig_start,
               base + word[piece.end - 1].orig_end);
        }
      }
      ++next_word;
    }
  };
  // Cut out the special tokens first, leftmost match first, then the
  // longest starting there (special_tokens_ is sorted longest first).
  size_t segment_start = 0;
  for (size_t i = 0; i < decoded.chars.size();) {
    const std::u32string* match = nullptr;
    for (const std::u32string& special : special_tokens_) {
      if (MatchesAt(decoded.chars, i, special)) {
        match = &special;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    tokenize_segment(segment_start, i);
    std::string special_text;
    for (char32_t c : *match) AppendUtf8(c, &special_text);
    const int id = vocab_.Id(special_text);
    emit(std::move(special_text), id >= 0 ? id : vocab_.unk_id(),
         static_cast<int>(i), static_cast<int>(i + match->size()));
    ++next_word;
    i += match->size();
    segment_start = i;
  }
  tokenize_segment(segment_start, decoded.chars.size());
  return tokens;
}

}  // namespace bertology
