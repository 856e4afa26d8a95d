// libFuzzer target: the basic tokenizer and WordPiece through Tokenizer's
// Tokenize and Encode, on the golden model's vocabulary. Byte 0 picks the
// options, byte 1 the max_length; the rest is the text, split at the first
// tab into text_a and text_b. Besides the sanitizers, it checks what the
// service relies on: every span lies inside its text, ids are in the
// vocabulary, and an encoding fits max_length.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/core/tokenizer/vocab.h"

namespace bertology {
namespace {

const Vocab& GoldenVocab() {
  static const Vocab* vocab = [] {
    auto v = Vocab::FromFile(BERTOLOGY_FUZZ_SOURCE_DIR
                             "/tests/golden/tiny-bert-cls/vocab.txt");
    if (!v.ok()) std::abort();
    return new Vocab(*std::move(v));
  }();
  return *vocab;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckSpans(const std::vector<Token>& tokens, std::string_view a,
                std::string_view b, int vocab_size) {
  for (const Token& t : tokens) {
    Check(t.id >= 0 && t.id < vocab_size);
    const size_t len = t.segment == 0 ? a.size() : b.size();
    Check(t.byte_start >= 0 && t.byte_start <= t.byte_end &&
          static_cast<size_t>(t.byte_end) <= len);
    Check(t.char_start >= 0 && t.char_start <= t.char_end &&
          t.char_end <= t.byte_end);
  }
}

}  // namespace
}  // namespace bertology

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using bertology::BertTokenizer;
  using bertology::TokenizerOptions;
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const int max_length = data[1];
  TokenizerOptions options;
  options.do_lower_case = (flags & 1) != 0;
  if ((flags & 6) == 2) options.strip_accents = true;
  if ((flags & 6) == 4) options.strip_accents = false;
  options.tokenize_chinese_chars = (flags & 8) != 0;
  if (flags & 16) options.never_split = {"lol", "[E1]", "##", "\xe4\xb8\xad"};
  if (flags & 32) options.special_tokens.push_back("[E1]");
  if (flags & 64) options.max_input_chars_per_word = 3;
  const bertology::BertTokenizer tokenizer(bertology::GoldenVocab(), options);

  const std::string_view text(reinterpret_cast<const char*>(data + 2),
                              size - 2);
  const size_t tab = text.find('\t');
  const std::string_view a = text.substr(0, tab);
  const std::optional<std::string_view> b =
      tab == std::string_view::npos
          ? std::nullopt
          : std::optional<std::string_view>(text.substr(tab + 1));
  const int vocab_size = tokenizer.vocab().size();

  auto tokens = tokenizer.Tokenize(a);
  if (tokens.ok()) bertology::CheckSpans(*tokens, a, "", vocab_size);
  auto encoding = tokenizer.Encode(a, b, max_length);
  if (encoding.ok()) {
    bertology::CheckSpans(encoding->tokens, a, b.value_or(""), vocab_size);
    bertology::Check(static_cast<int>(encoding->tokens.size()) <= max_length);
  }
  return 0;
}
