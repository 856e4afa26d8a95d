#include "server/train/vocab_builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "server/core/tokenizer/basic_tokenizer.h"

namespace bertology {

absl::StatusOr<std::vector<std::string>> BuildVocab(
    const std::vector<std::string>& texts, const VocabBuilderOptions& options) {
  BasicTokenizerOptions basic_options;
  basic_options.do_lower_case = options.do_lower_case;
  BasicTokenizer basic(basic_options);
  std::set<char32_t> chars;
  std::map<std::string, int> word_counts;
  for (size_t i = 0; i < texts.size(); ++i) {
    DecodedText decoded;
    absl::Status st = DecodeUtf8(texts[i], &decoded);
    if (!st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("text ", i, ": ", st.message()));
    }
    for (const BasicWord& word : basic.Split(decoded.chars)) {
      std::string w;
      for (const NormalizedChar& c : word) {
        chars.insert(c.cp);
        AppendUtf8(c.cp, &w);
      }
      if (word.size() > 1) ++word_counts[w];
    }
  }
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                    "[MASK]"};
  std::set<std::string> seen(vocab.begin(), vocab.end());
  auto add = [&](std::string token) {
    if (seen.insert(token).second) vocab.push_back(std::move(token));
  };
  for (char32_t cp : chars) {
    std::string s;
    AppendUtf8(cp, &s);
    add(s);
  }
  for (char32_t cp : chars) {
    std::string s = "##";
    AppendUtf8(cp, &s);
    add(s);
  }
  std::vector<std::pair<int, std::string>> words;
  for (const auto& [w, n] : word_counts) {
    if (n >= options.min_word_count) words.emplace_back(-n, w);
  }
  std::sort(words.begin(), words.end());
  if (static_cast<int>(words.size()) > options.max_words) {
    words.resize(options.max_words);
  }
  for (auto& [n, w] : words) add(std::move(w));
  return vocab;
}

}  // namespace bertology
