#include "server/core/tokenizer/basic_tokenizer.h"

#include <string>
#include <vector>

#include "common/utf8.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

struct Result {
  std::vector<std::string> words;
  std::vector<std::pair<int, int>> spans;  // original char span of each word
};

Result Split(const std::string& text, bool lower = true) {
  DecodedText decoded;
  EXPECT_TRUE(DecodeUtf8(text, &decoded).ok());
  Result result;
  for (const BasicWord& word :
       BasicTokenizer({lower, true}).Split(decoded.chars)) {
    std::string s;
    for (const NormalizedChar& c : word) AppendUtf8(c.cp, &s);
    result.words.push_back(s);
    result.spans.emplace_back(word.front().orig_start, word.back().orig_end);
  }
  return result;
}

using Words = std::vector<std::string>;

// Expected words below were produced by a line-by-line Python port of
// google-research/bert tokenization.py's BasicTokenizer (Python 3.11
// unicodedata), not by this implementation; the Greek line by HF's
// BertTokenizerFast normalizer and pre-tokenizer (transformers 4.46.3).
TEST(BasicTokenizerTest, MatchesPythonReference) {
  EXPECT_EQ(Split("Hello, world!").words, (Words{"hello", ",", "world", "!"}));
  // HF lower-cases one code point at a time: a final capital sigma becomes
  // U+03C3 (BertTokenizerFast and BertTokenizer both; str.lower() on the
  // word, as google-research/bert does, would give the final form U+03C2).
  EXPECT_EQ(Split("ΟΔΟΣ. Σας ΑΣ").words,
            (Words{"οδο\u03c3", ".", "σας", "α\u03c3"}));
  EXPECT_EQ(Split("İstanbul").words, (Words{"istanbul"}));
  EXPECT_EQ(Split("naïve résumé").words, (Words{"naive", "resume"}));
  EXPECT_EQ(Split("e\xCC\x81"
                  "clair")
                .words,
            (Words{"eclair"}));
  EXPECT_EQ(Split("don't stop").words, (Words{"don", "'", "t", "stop"}));
  // U+037E GREEK QUESTION MARK becomes ';' under NFD, then splits.
  EXPECT_EQ(Split("a\xCD\xBE"
                  "b")
                .words,
            (Words{"a", ";", "b"}));
  EXPECT_EQ(Split("¿Qué?").words, (Words{"¿", "que", "?"}));
  // U+2028 splits (Python's str.split), U+200B (Cf) is dropped.
  EXPECT_EQ(Split("x\xE2\x80\xA8y z\xE2\x80\x8Bw").words,
            (Words{"x", "y", "zw"}));
  EXPECT_EQ(Split("ﬁne").words, (Words{"ﬁne"}));  // NFD keeps ligatures
  EXPECT_EQ(Split("Ǆemal").words, (Words{"ǆemal"}));
}

TEST(BasicTokenizerTest, HangulDecomposesUnderNfd) {
  // NFD turns each syllable into two or three jamo; each jamo still maps to
  // its syllable.
  const Result r = Split("한국");
  ASSERT_EQ(r.words.size(), 1u);
  DecodedText d;
  ASSERT_TRUE(DecodeUtf8(r.words[0], &d).ok());
  EXPECT_EQ(d.chars, (std::vector<char32_t>{0x1112, 0x1161, 0x11AB, 0x1100,
                                            0x116E, 0x11A8}));
  EXPECT_EQ(r.spans[0], std::make_pair(0, 2));
}

TEST(BasicTokenizerTest, CasedKeepsTextAsIs) {
  EXPECT_EQ(Split("Café, OK", /*lower=*/false).words,
            (Words{"Café", ",", "OK"}));
}

TEST(BasicTokenizerTest, CleansControlCharacters) {
  const Result r = Split(std::string("a\0b\x01\tc\xEF\xBF\xBD", 9) + "d");
  EXPECT_EQ(r.words, (Words{"ab", "cd"}));
  // "a\0b" spans chars 0..3 (the NUL inside belongs to the word).
  EXPECT_EQ(r.spans[0], std::make_pair(0, 3));
  // "c\uFFFDd" spans 5..8.
  EXPECT_EQ(r.spans[1], std::make_pair(5, 8));
}

TEST(BasicTokenizerTest, ChineseCharactersSplitOff) {
  const Result r = Split("ab中文cd");
  EXPECT_EQ(r.words, (Words{"ab", "中", "文", "cd"}));
  EXPECT_EQ(r.spans,
            (std::vector<std::pair<int, int>>{{0, 2}, {2, 3}, {3, 4}, {4, 6}}));
}

TEST(BasicTokenizerTest, StrippedAccentsBelongToTheirWord) {
  // "é!" with a decomposed accent: the accent (char 1) joins "e".
  const Result r = Split("e\xCC\x81!\xCC\x81x");
  EXPECT_EQ(r.words, (Words{"e", "!", "x"}));
  EXPECT_EQ(r.spans,
            (std::vector<std::pair<int, int>>{{0, 2}, {2, 4}, {4, 5}}));
  // A token that is only marks yields no word.
  EXPECT_TRUE(Split("\xCC\x81\xCC\x82").words.empty());
}

Words SplitWith(const std::string& text, BasicTokenizerOptions options,
                std::vector<bool>* never_split_word = nullptr) {
  DecodedText decoded;
  EXPECT_TRUE(DecodeUtf8(text, &decoded).ok());
  Words words;
  for (const BasicWord& word : BasicTokenizer(std::move(options))
                                   .Split(decoded.chars, never_split_word)) {
    std::string s;
    for (const NormalizedChar& c : word) AppendUtf8(c.cp, &s);
    words.push_back(s);
  }
  return words;
}

// Expected words from tests/golden/tokenizer_reference.py's basic() (HF's
// BasicTokenizer with strip_accents).
TEST(BasicTokenizerTest, StripAccentsSetting) {
  BasicTokenizerOptions options;
  options.strip_accents = false;  // lower-case only
  EXPECT_EQ(SplitWith("Café İx e\xCC\x81!", options),
            (Words{"café", "i\xCC\x87x", "e\xCC\x81", "!"}));
  options.strip_accents = true;
  EXPECT_EQ(SplitWith("Café İx", options), (Words{"cafe", "ix"}));
  options.do_lower_case = false;  // strip only
  EXPECT_EQ(SplitWith("Café İx", options), (Words{"Cafe", "Ix"}));
  options.strip_accents = std::nullopt;  // follows do_lower_case: neither
  EXPECT_EQ(SplitWith("Café İx", options), (Words{"Café", "İx"}));
}

TEST(BasicTokenizerTest, NeverSplitTokensStayWhole) {
  BasicTokenizerOptions options;
  options.never_split = {"[e1]", "café!"};
  std::vector<bool> kept;
  // Compared lower-cased, kept without accent stripping or punctuation
  // split; "[E1]x" is another token and splits as usual.
  EXPECT_EQ(SplitWith("[E1] CAFÉ! [E1]x", options, &kept),
            (Words{"[e1]", "café!", "[", "e1", "]", "x"}));
  EXPECT_EQ(kept, (std::vector<bool>{true, true, false, false, false, false}));
  options.do_lower_case = false;
  EXPECT_EQ(SplitWith("[E1] [e1]", options, &kept),
            (Words{"[", "E1", "]", "[e1]"}));
  EXPECT_EQ(kept, (std::vector<bool>{false, false, false, true}));
}

// HF's _is_control (every C* category), not Google's (Cc and Cf only): a
// private-use (Co) and an unassigned (Cn) code point are dropped too.
TEST(BasicTokenizerTest, DropsEveryOtherCategoryAsHf) {
  EXPECT_EQ(Split("a\xEE\x80\x80"
                  "b c\xCD\xB8"
                  "d e\x01\xE2\x80\x8B"
                  "f")
                .words,
            (Words{"ab", "cd", "ef"}));
  EXPECT_TRUE(IsBertControl(U'\uE000'));
  EXPECT_TRUE(IsBertControl(U'\u0378'));
}

TEST(BasicTokenizerTest, CharacterClasses) {
  for (char32_t cp : {U'$', U'^', U'`', U'~', U'-', U'\u00BF', U'\u2014',
                      U'\u3002', U'\uFF01'}) {
    EXPECT_TRUE(IsBertPunctuation(cp)) << static_cast<int>(cp);
  }
  for (char32_t cp : {U'a', U'0', U'\u00E9', U'\u4E2D', U' '}) {
    EXPECT_FALSE(IsBertPunctuation(cp)) << static_cast<int>(cp);
  }
  EXPECT_TRUE(IsBertWhitespace(U'\u00A0'));
  EXPECT_TRUE(IsBertWhitespace(U'\u3000'));
  EXPECT_FALSE(IsBertWhitespace(U'\u200B'));
  EXPECT_TRUE(IsBertControl(U'\u200B'));
  EXPECT_TRUE(IsBertControl(U'\x7F'));
  EXPECT_FALSE(IsBertControl(U'\t'));
  EXPECT_TRUE(IsCjkIdeograph(U'\u4E2D'));
  EXPECT_TRUE(IsCjkIdeograph(U'\U00020000'));
  EXPECT_FALSE(IsCjkIdeograph(U'\u3042'));  // hiragana is not
}

}  // namespace
}  // namespace bertology
