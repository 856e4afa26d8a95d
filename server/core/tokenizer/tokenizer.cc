// Tokenizer::Encode: the input layout and truncation every family shares.
#include "server/core/tokenizer/tokenizer.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

Token AddedToken(int id, const std::string& text, int segment) {
  Token token;
  token.text = text;
  token.id = id;
  token.segment = segment;
  token.special = true;
  return token;
}

}  // namespace

absl::StatusOr<Encoding> Tokenizer::Encode(
    std::string_view text_a, std::optional<std::string_view> text_b,
    int max_length) const {
  const bool pair = text_b.has_value();
  const int num_special = pair ? 2 + specials_.pair_separators : 2;
  if (max_length < num_special + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_length ", max_length,
        " is too small: ", pair ? "a pair" : "a text", " needs at least ",
        num_special + 1, " (", num_special, " special tokens and one piece)"));
  }
  absl::StatusOr<std::vector<Token>> a = Tokenize(text_a);
  if (!a.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("text_a: ", a.status().message()));
  }
  std::vector<Token> b;
  if (pair) {
    absl::StatusOr<std::vector<Token>> tb = Tokenize(*text_b);
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

  const SpecialTokens& s = specials_;
  std::vector<Token>& out = encoding.tokens;
  out.reserve(a->size() + b.size() + num_special);
  out.push_back(AddedToken(s.cls_id, s.cls, 0));
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
  out.push_back(AddedToken(s.sep_id, s.sep, 0));
  if (pair) {
    // RoBERTa's `</s></s>`: the second opens text_b.
    for (int k = 1; k < s.pair_separators; ++k) {
      out.push_back(AddedToken(s.sep_id, s.sep, 1));
    }
    append(b, 1);
    out.push_back(AddedToken(s.sep_id, s.sep, 1));
  }
  encoding.num_words = next_word;
  return encoding;
}

}  // namespace bertology
