#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "utf8proc.h"

namespace bertology {
namespace {

// Path of a tokenizer fixture, or "" when the shared folder is absent.
std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("BERTOLOGY_SHARED_DIR");
  if (dir == nullptr) return "";
  std::string path = std::string(dir) + "/fixtures/tokenizer/" + name;
  return std::filesystem::exists(path) ? path : "";
}

#define LOAD_TOKENIZER_OR_SKIP(var, vocab_name)                        \
  const std::string var##_path = Fixture(vocab_name);                  \
  if (var##_path.empty()) {                                            \
    GTEST_SKIP() << "fixture " << vocab_name                           \
                 << " not found under $BERTOLOGY_SHARED_DIR/fixtures/" \
                    "tokenizer";                                       \
  }                                                                    \
  absl::StatusOr<Vocab> var##_vocab = Vocab::FromFile(var##_path);     \
  ASSERT_TRUE(var##_vocab.ok()) << var##_vocab.status();               \
  const BertTokenizer var(*std::move(var##_vocab), TokenizerOptions{})

// An independent normal form for the offset property: utf8proc's case fold,
// canonical decomposition, mark stripping, and removal of control and
// default-ignorable characters (as BERT's cleaning drops them), plus U+FFFD.
std::string Fold(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
      static_cast<utf8proc_ssize_t>(s.size()), &out,
      static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_CASEFOLD |
                                     UTF8PROC_STRIPMARK | UTF8PROC_STRIPCC |
                                     UTF8PROC_IGNORE));
  EXPECT_GE(n, 0) << "utf8proc_map failed on " << s;
  std::string folded =
      n >= 0 ? std::string(reinterpret_cast<char*>(out), n) : std::string();
  std::free(out);
  const std::string kReplacement = "\xEF\xBF\xBD";
  for (size_t p; (p = folded.find(kReplacement)) != std::string::npos;) {
    folded.erase(p, kReplacement.size());
  }
  return folded;
}

// True for what BERT's tokenizer drops: whitespace, separators, control
// and format characters (category C*), U+FFFD.
bool DroppedByBert(utf8proc_int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r' || cp == 0xFFFD) return true;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

// Checks the offset contract on every piece of `text`: spans lie inside the
// text, are ordered and disjoint, byte and char spans agree, the original
// substring normalizes to the piece (without "##"), and every character
// outside all spans is one BERT drops (so stripped accents are covered).
void ExpectOffsetsMapBack(const BertTokenizer& tokenizer,
                          const std::string& text) {
  SCOPED_TRACE("text: " + text);
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  int last_word = -1, last_end = 0;
  std::vector<bool> covered(text.size(), false);
  for (const Token& t : *tokens) {
    ASSERT_LE(0, t.byte_start);
    ASSERT_LT(t.byte_start, t.byte_end);
    ASSERT_LE(t.byte_end, static_cast<int>(text.size()));
    EXPECT_GE(t.byte_start, last_end) << t.text << " overlaps";
    EXPECT_GE(t.word_index, last_word);
    EXPECT_LE(t.word_index, last_word + 1);
    last_end = t.byte_end;
    std::fill(covered.begin() + t.byte_start, covered.begin() + t.byte_end,
              true);
    last_word = t.word_index;
    const std::string original =
        text.substr(t.byte_start, t.byte_end - t.byte_start);
    // Char offsets count code points of the same span.
    std::vector<int> starts;
    for (int i = 0; i < static_cast<int>(text.size()); ++i) {
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        starts.push_back(i);
      }
    }
    starts.push_back(static_cast<int>(text.size()));
    EXPECT_EQ(starts[t.char_start], t.byte_start) << t.text;
    EXPECT_EQ(starts[t.char_end], t.byte_end) << t.text;
    EXPECT_FALSE(t.special);
    if (t.id == tokenizer.vocab().unk_id()) continue;
    EXPECT_EQ(tokenizer.vocab().Id(t.text), t.id);
    std::string piece = t.text;
    if (piece.rfind("##", 0) == 0) piece.erase(0, 2);
    EXPECT_EQ(Fold(original), Fold(piece))
        << "piece " << t.text << " spans \"" << original << "\"";
  }
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(
        reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + i,
        static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    ASSERT_GT(len, 0);
    if (!covered[i]) {
      EXPECT_TRUE(DroppedByBert(cp)) << "U+" << std::hex << cp << std::dec
                                     << " at byte " << i << " is in no piece";
    }
    i += len;
  }
}

TEST(TokenizerTest, MatchesReferenceOnSquadQuestions) {
  LOAD_TOKENIZER_OR_SKIP(tokenizer, "bert-base-uncased-vocab.txt");
  const std::string golden = Fixture("squad-questions-uncased.jsonl");
  ASSERT_FALSE(golden.empty()) << "squad-questions-uncased.jsonl missing";
  std::ifstream in(golden);
  std::vector<nlohmann::json> cases;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) cases.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(cases.size(), 2000u);

  int matched = 0;
  double seconds = 0;
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(tokens.ok()) << text << ": " << tokens.status();
    std::vector<std::string> texts;
    std::vector<int> ids;
    for (const Token& t : *tokens) {
      texts.push_back(t.text);
      ids.push_back(t.id);
    }
    const bool ok = texts == c["tokens"].get<std::vector<std::string>>() &&
                    ids == c["ids"].get<std::vector<int>>();
    EXPECT_TRUE(ok) << "mismatch on: " << text;
    matched += ok;
  }
  std::cout << "[ matched " << matched << "/" << cases.size() << " in "
            << seconds * 1000 << " ms ]\n";
  EXPECT_EQ(matched, static_cast<int>(cases.size()));
  EXPECT_LT(seconds, 1.0) << "tokenizing 2,000 questions is too slow";
  // The offsets of every golden question map back too.
  for (const nlohmann::json& c : cases) {
    ExpectOffsetsMapBack(tokenizer, c["text"].get<std::string>());
  }
}

TEST(TokenizerTest, OffsetsMapBackToOriginalText) {
  LOAD_TOKENIZER_OR_SKIP(tokenizer, "bert-base-uncased-vocab.txt");
  const std::vector<std::string> inputs = {
      "Café Déjà vu",
      "  multiple   spaces\t\ttabs\nnew\r\nlines  ",
      "Hello,world!! (approx.) 100% -- \"quoted\" [brackets] {x}",
      "ctrl\x01"
      "chars\x7finside\x1bwords",
      std::string("nul\0in", 6) + "side",
      "naïve résumé Ångström São Paulo Zürich",
      "e\xCC\x81"
      "clair decomposed",  // 'e' + U+0301 COMBINING ACUTE
      "\xCC\x81leading mark",
      "cafe\xCC\x81 cafe\xCC\x81! na\xCC\x88ive",  // decomposed, word-final
      "zero\xE2\x80\x8Bwidth \xEF\xBB\xBF"
      "bom",
      "replacement \xEF\xBF\xBD char\xEF\xBF\xBDinside",
      "line\xE2\x80\xA8sep para\xE2\x80\xA9sep",
      "non\xC2\xA0"
      "breaking",
      "l'été où l’on va",
      "ΟΔΟΣ Σας ΑΘΗΝΑ",
      "emoji 😀 ok",
      "中文abc混合 日本語テキスト",
      "UPPER lower MiXeD",
      "a-very-long-hyphenated-word_with_underscores",
      std::string(150, 'x') + " short",
      "supercalifragilisticexpialidocious antidisestablishmentarianism",
      "",
      "   ",
  };
  for (const std::string& text : inputs) ExpectOffsetsMapBack(tokenizer, text);
}

TEST(TokenizerTest, AccentedWordSpansItsOriginalCharacters) {
  LOAD_TOKENIZER_OR_SKIP(tokenizer, "bert-base-uncased-vocab.txt");
  const std::string text = "Café Déjà";
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  // Two words: "cafe" then "deja" after lower-casing and stripping accents.
  std::string words[2];
  for (const Token& t : *tokens) {
    ASSERT_GE(t.word_index, 0);
    ASSERT_LT(t.word_index, 2);
    words[t.word_index] +=
        t.text.rfind("##", 0) == 0 ? t.text.substr(2) : t.text;
  }
  EXPECT_EQ(words[0], "cafe");
  EXPECT_EQ(words[1], "deja");
  // The last piece of each word ends after the accented character.
  int end[2] = {0, 0};
  int char_end[2] = {0, 0};
  for (const Token& t : *tokens) {
    end[t.word_index] = t.byte_end;
    char_end[t.word_index] = t.char_end;
  }
  EXPECT_EQ(end[0], static_cast<int>(std::string("Café").size()));
  EXPECT_EQ(char_end[0], 4);
  EXPECT_EQ(end[1], static_cast<int>(text.size()));
  EXPECT_EQ(char_end[1], 9);
}

TEST(TokenizerTest, ChineseCharactersAreSingleWords) {
  LOAD_TOKENIZER_OR_SKIP(tokenizer, "bert-base-chinese-vocab.txt");
  const std::string text = "我爱北京天安门。";
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const Token& t = (*tokens)[i];
    const std::string ch = text.substr(3 * i, 3);  // all 3-byte characters
    EXPECT_EQ(t.text, ch);
    EXPECT_NE(t.id, tokenizer.vocab().unk_id()) << ch;
    EXPECT_EQ(t.id, tokenizer.vocab().Id(ch));
    EXPECT_EQ(t.char_start, i);
    EXPECT_EQ(t.char_end, i + 1);
    EXPECT_EQ(t.byte_start, 3 * i);
    EXPECT_EQ(t.byte_end, 3 * i + 3);
    EXPECT_EQ(t.word_index, i);
  }
}

TEST(TokenizerTest, MixedChineseEnglishDigits) {
  LOAD_TOKENIZER_OR_SKIP(tokenizer, "bert-base-chinese-vocab.txt");
  const std::string text = "我有3个iPhone和2019年的MacBook Pro！";
  ExpectOffsetsMapBack(tokenizer, text);
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  // Every CJK character is a word of its own, with its own id.
  for (const std::string ch : {"我", "有", "个", "和", "年", "的"}) {
    const size_t at = text.find(ch);
    int found = 0;
    for (const Token& t : *tokens) {
      if (t.byte_start == static_cast<int>(at)) {
        ++found;
        EXPECT_EQ(t.text, ch);
        EXPECT_EQ(t.id, tokenizer.vocab().Id(ch));
        EXPECT_EQ(t.byte_end, static_cast<int>(at + ch.size()));
      }
    }
    EXPECT_EQ(found, 1) << ch;
  }
  // Lower-casing: the Latin words tokenize as their lower-case forms.
  for (const auto& [upper, lower] :
       std::vector<std::pair<std::string, std::string>>{
           {"iPhone", "iphone"}, {"MacBook Pro", "macbook pro"}}) {
    absl::StatusOr<std::vector<Token>> u = tokenizer.Tokenize(upper);
    absl::StatusOr<std::vector<Token>> l = tokenizer.Tokenize(lower);
    ASSERT_TRUE(u.ok() && l.ok());
    ASSERT_EQ(u->size(), l->size());
    for (size_t i = 0; i < u->size(); ++i) {
      EXPECT_EQ((*u)[i].id, (*l)[i].id);
    }
  }
  // Words: 我 有 3 个 iphone 和 2019 年 的 macbook pro ！ = 12.
  EXPECT_EQ(tokens->back().word_index, 11);
  EXPECT_EQ(tokens->back().text, "！");
}

TEST(TokenizerTest, InvalidUtf8IsInvalidArgument) {
  absl::StatusOr<Vocab> vocab =
      Vocab::FromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"}, "test");
  ASSERT_TRUE(vocab.ok());
  const BertTokenizer tokenizer(*std::move(vocab), TokenizerOptions{});
  for (const std::string bad : {"a\xff", "\xc3", "\xed\xa0\x80", "\xc0\xaf"}) {
    absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(bad);
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<Encoding> enc = tokenizer.Encode("a", "\xff", 16);
  EXPECT_EQ(enc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(enc.status().message().find("text_b"), std::string::npos)
      << enc.status();
}

}  // namespace
}  // namespace bertology
