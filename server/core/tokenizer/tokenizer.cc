#include "server/core/tokenizer/tokenizer.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "server/core/tokenizer/basic_tokenizer.h"
#include "server/core/tokenizer/wordpiece.h"

namespace bertology {
namespace {

// Word pieces of `text` with offsets into it; word indices from 0.
absl::StatusOr<std::vector<Token>> TokenizeText(
    std::string_view text, const Vocab& vocab,
    const TokenizerOptions& options) {
  DecodedText decoded;
  absl::Status status = DecodeUtf8(text, &decoded);
  if (!status.ok()) return status;
  const BasicTokenizer basic(
      {options.do_lower_case, options.tokenize_chinese_chars});
  const WordpieceTokenizer wordpiece(&vocab, options.max_input_chars_per_word);
  std::vector<Token> tokens;
  std::vector<WordPiece> pieces;
  const std::vector<BasicWord> words = basic.Split(decoded.chars);
  for (size_t w = 0; w < words.size(); ++w) {
    const BasicWord& word = words[w];
    pieces.clear();
    wordpiece.Split(word, &pieces);
    for (WordPiece& piece : pieces) {
      Token token;
      token.text = std::move(piece.text);
      token.id = piece.id;
      token.char_start = word[piece.start].orig_start;
      token.char_end = word[piece.end - 1].orig_end;
      token.byte_start = decoded.byte_offsets[token.char_start];
      token.byte_end = decoded.byte_offsets[token.char_end];
      token.word_index = static_cast<int>(w);
      tokens.push_back(std::move(token));
    }
  }
  return tokens;
}

Token SpecialToken(const Vocab& vocab, int id, int segment) {
  Token token;
  token.text = vocab.Token(id);
  token.id = id;
  token.segment = segment;
  token.special = true;
  return token;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab, TokenizerOptions options)
    : vocab_(std::move(vocab)), options_(options) {}

absl::StatusOr<std::vector<Token>> Tokenizer::Tokenize(
    std::string_view text) const {
  return TokenizeText(text, vocab_, options_);
}

absl::StatusOr<Encoding> Tokenizer::Encode(
    std::string_view text_a, std::optional<std::string_view> text_b,
    int max_length) const {
  const bool pair = text_b.has_value();
  const int num_special = pair ? 3 : 2;
  if (max_length < num_special + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_length ", max_length,
        " is too small: ", pair ? "a pair" : "a text", " needs at least ",
        num_special + 1, " (", num_special, " special tokens and one piece)"));
  }
  absl::StatusOr<std::vector<Token>> a = TokenizeText(text_a, vocab_, options_);
  if (!a.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("text_a: ", a.status().message()));
  }
  std::vector<Token> b;
  if (pair) {
    absl::StatusOr<std::vector<Token>> tb =
        TokenizeText(*text_b, vocab_, options_);
    if (!tb.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("text_b: ", tb.status().message()));
    }
    b = *std::move(tb);
  }

  // Longest-first truncation, one piece at a time from the end, as HF's
  // truncate_sequences: from text_a only when it is strictly longer.
  Encoding encoding;
  const size_t budget = static_cast<size_t>(max_length - num_special);
  while (a->size() + b.size() > budget) {
    if (a->size() > b.size()) {
      a->pop_back();
    } else {
      b.pop_back();
    }
    encoding.truncated = true;
  }

  std::vector<Token>& out = encoding.tokens;
  out.reserve(a->size() + b.size() + num_special);
  out.push_back(SpecialToken(vocab_, vocab_.cls_id(), 0));
  // Word indices are renumbered densely in order of appearance, so text_b's
  // words follow the (possibly truncated) words of text_a.
  int next_word = 0;
  auto append = [&](std::vector<Token>& tokens, int segment) {
    int last_source_word = -1;
    for (Token& token : tokens) {
      if (token.word_index != last_source_word) {
        last_source_word = token.word_index;
        ++next_word;
      }
      token.word_index = next_word - 1;
      token.segment = segment;
      out.push_back(std::move(token));
    }
  };
  append(*a, 0);
  out.push_back(SpecialToken(vocab_, vocab_.sep_id(), 0));
  if (pair) {
    append(b, 1);
    out.push_back(SpecialToken(vocab_, vocab_.sep_id(), 1));
  }
  encoding.num_words = next_word;
  return encoding;
}

}  // namespace bertology
