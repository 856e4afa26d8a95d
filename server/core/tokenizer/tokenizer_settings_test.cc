// The tokenizer_config.json settings (TokenizerOptions) against the Python
// reference: tests/golden/tokenizer_settings.golden.jsonl is written by
// tests/golden/tokenizer_reference.py --golden (a port of HF's
// BertTokenizer), not by this implementation.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/core/tokenizer/golden_files_for_tests.h"

namespace bertology {
namespace {

using Strings = std::vector<std::string>;

using testing::ReadJsonLines;
using testing::SourcePath;

// Path of a tokenizer fixture, or "" when the shared folder is absent.
std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("BERTOLOGY_SHARED_DIR");
  if (dir == nullptr) return "";
  std::string path = std::string(dir) + "/fixtures/tokenizer/" + name;
  return std::filesystem::exists(path) ? path : "";
}

// The lines of a golden file: tokenizer_settings.golden.jsonl by default
// (the port's), tokenizer_hf.golden.jsonl (HF's own BertTokenizerFast,
// tests/golden/make_hf_tokenizer_golden.py).
std::vector<nlohmann::json> GoldenCases(
    const std::string& name = "tokenizer_settings.golden.jsonl") {
  const std::string path = SourcePath("tests/golden/" + name);
  return ReadJsonLines(path);
}

TokenizerOptions OptionsOf(const nlohmann::json& options) {
  TokenizerOptions o;
  o.do_lower_case = options.value("do_lower_case", true);
  if (options.contains("strip_accents") &&
      !options["strip_accents"].is_null()) {
    o.strip_accents = options["strip_accents"].get<bool>();
  }
  o.tokenize_chinese_chars = options.value("tokenize_chinese_chars", true);
  o.never_split = options.value("never_split", Strings{});
  if (options.contains("special_tokens")) {
    o.special_tokens = options["special_tokens"].get<Strings>();
  }
  return o;
}

// Tokenizes one golden case and compares; checks spans are ordered and
// that a special token's span is its literal text.
void ExpectMatchesReference(const nlohmann::json& c, Vocab vocab) {
  const std::string text = c["text"].get<std::string>();
  SCOPED_TRACE("options " + c["options"].dump() + " text " + text);
  const BertTokenizer tokenizer(std::move(vocab), OptionsOf(c["options"]));
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  Strings texts;
  std::vector<int> ids;
  int last_end = 0;
  for (const Token& t : *tokens) {
    texts.push_back(t.text);
    ids.push_back(t.id);
    EXPECT_LE(last_end, t.byte_start) << t.text;
    EXPECT_LT(t.byte_start, t.byte_end) << t.text;
    last_end = t.byte_end;
    // A piece spanning a special token's text is that token.
    const std::string span =
        text.substr(t.byte_start, t.byte_end - t.byte_start);
    const Strings& specials = tokenizer.options().special_tokens;
    if (std::find(specials.begin(), specials.end(), span) != specials.end()) {
      EXPECT_EQ(t.text, span);
    }
  }
  EXPECT_EQ(texts, c["tokens"].get<Strings>());
  EXPECT_EQ(ids, c["ids"].get<std::vector<int>>());
}

TEST(TokenizerSettingsTest, TinyVocabCasesMatchReference) {
  int n = 0;
  for (const nlohmann::json& c : GoldenCases()) {
    if (c["vocab"] != "tiny") continue;
    absl::StatusOr<Vocab> vocab =
        Vocab::FromTokens(c["vocab_tokens"].get<Strings>(), "tiny");
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    ExpectMatchesReference(c, *std::move(vocab));
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(TokenizerSettingsTest, FixtureVocabCasesMatchReference) {
  if (Fixture("bert-base-uncased-vocab.txt").empty()) {
    GTEST_SKIP() << "fixtures not found under "
                    "$BERTOLOGY_SHARED_DIR/fixtures/tokenizer";
  }
  int n = 0;
  for (const nlohmann::json& c : GoldenCases()) {
    if (c["vocab"] == "tiny") continue;
    const std::string path = Fixture(c["vocab"].get<std::string>());
    ASSERT_FALSE(path.empty()) << c["vocab"] << " missing";
    absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    ExpectMatchesReference(c, *std::move(vocab));
    ++n;
  }
  EXPECT_GE(n, 10);
}

// HF's own tokenizers on Chinese, accents, control characters and special
// tokens written in the text, on the fixtures' vocabularies and a tiny one
// with accented and cased entries. Where HF's fast and slow tokenizers
// differ, the case names the one the engine follows, and why
// (make_hf_tokenizer_golden.py's engine_follows).
TEST(TokenizerSettingsTest, HuggingFaceTokenizerCasesMatch) {
  const bool fixtures = !Fixture("bert-base-uncased-vocab.txt").empty();
  int n = 0;
  for (nlohmann::json c : GoldenCases("tokenizer_hf.golden.jsonl")) {
    absl::StatusOr<Vocab> vocab =
        c["vocab"] == "tiny"
            ? Vocab::FromTokens(c["vocab_tokens"].get<Strings>(), "tiny")
        : fixtures ? Vocab::FromFile(Fixture(c["vocab"].get<std::string>()))
                   : absl::NotFoundError("fixtures");
    if (!fixtures && c["vocab"] != "tiny") continue;
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    if (c.value("engine_follows", "fast") == "slow") {
      c["tokens"] = c["slow_tokens"];
      c["ids"] = c["slow_ids"];
    }
    ExpectMatchesReference(c, *std::move(vocab));
    ++n;
  }
  EXPECT_GE(n, fixtures ? 50 : 6);
}

Vocab TinyVocab() {
  absl::StatusOr<Vocab> vocab =
      Vocab::FromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b",
                         "##b", "lol", "[", "]", "mask", "café", "cafe"},
                        "test");
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  return *std::move(vocab);
}

Strings Texts(const Tokenizer& tokenizer, const std::string& text) {
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  Strings out;
  if (tokens.ok()) {
    for (const Token& t : *tokens) out.push_back(t.text);
  }
  return out;
}

TEST(TokenizerSettingsTest, SpecialTokenInTextIsOneWordWithOffsets) {
  const BertTokenizer tokenizer(TinyVocab(), TokenizerOptions{});
  const std::string text = "a[MASK]b";
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 3u);
  const Token& mask = (*tokens)[1];
  EXPECT_EQ(mask.text, "[MASK]");
  EXPECT_EQ(mask.id, tokenizer.vocab().Id("[MASK]"));
  EXPECT_EQ(mask.char_start, 1);
  EXPECT_EQ(mask.char_end, 7);
  EXPECT_EQ(mask.byte_start, 1);
  EXPECT_EQ(mask.byte_end, 7);
  EXPECT_FALSE(mask.special);
  EXPECT_EQ((*tokens)[0].word_index, 0);
  EXPECT_EQ(mask.word_index, 1);
  EXPECT_EQ((*tokens)[2].word_index, 2);
  EXPECT_EQ((*tokens)[2].char_start, 7);
  // Case-sensitive and whole: "[mask]" and "[MASK" are ordinary text.
  EXPECT_EQ(Texts(tokenizer, "[mask] [MASK"),
            (Strings{"[", "mask", "]", "[", "mask"}));
  // Without special tokens "[MASK]" is split like any text.
  TokenizerOptions none;
  none.special_tokens.clear();
  EXPECT_EQ(Texts(BertTokenizer(TinyVocab(), none), "a[MASK]b"),
            (Strings{"a", "[", "mask", "]", "b"}));
}

TEST(TokenizerSettingsTest, SpecialTokenInsideEncodeKeepsSegmentsAndWords) {
  const BertTokenizer tokenizer(TinyVocab(), TokenizerOptions{});
  absl::StatusOr<Encoding> enc = tokenizer.Encode("a [MASK]", "[SEP]b", 16);
  ASSERT_TRUE(enc.ok()) << enc.status();
  Strings texts;
  std::vector<int> segments, words;
  for (const Token& t : enc->tokens) {
    texts.push_back(t.text);
    segments.push_back(t.segment);
    words.push_back(t.word_index);
  }
  EXPECT_EQ(texts,
            (Strings{"[CLS]", "a", "[MASK]", "[SEP]", "[SEP]", "b", "[SEP]"}));
  EXPECT_EQ(segments, (std::vector<int>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(words, (std::vector<int>{-1, 0, 1, -1, 2, 3, -1}));
  EXPECT_EQ(enc->num_words, 4);
}

TEST(TokenizerSettingsTest, LongestSpecialTokenWins) {
  TokenizerOptions options;
  options.special_tokens = {"[M", "[MASK]", "[MASK]b"};
  absl::StatusOr<std::vector<Token>> tokens =
      BertTokenizer(TinyVocab(), options).Tokenize("a[MASK]bb [Ma");
  ASSERT_TRUE(tokens.ok());
  Strings texts;
  std::vector<int> ids;
  for (const Token& t : *tokens) {
    texts.push_back(t.text);
    ids.push_back(t.id);
  }
  EXPECT_EQ(texts, (Strings{"a", "[MASK]b", "b", "[M", "a"}));
  // Special tokens absent from the vocabulary get [UNK]'s id.
  EXPECT_EQ(ids, (std::vector<int>{5, 1, 6, 1, 5}));
}

TEST(TokenizerSettingsTest, NeverSplitSkipsWordPiece) {
  TokenizerOptions options;
  options.never_split = {"lol", "zz-top"};
  const BertTokenizer tokenizer(TinyVocab(), options);
  absl::StatusOr<std::vector<Token>> tokens =
      tokenizer.Tokenize("LOL zz-top zz");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ((*tokens)[0].text, "lol");
  EXPECT_EQ((*tokens)[0].id, tokenizer.vocab().Id("lol"));
  // Not in the vocabulary: [UNK]'s id, its own text, its whole span.
  EXPECT_EQ((*tokens)[1].text, "zz-top");
  EXPECT_EQ((*tokens)[1].id, tokenizer.vocab().unk_id());
  EXPECT_EQ((*tokens)[1].byte_start, 4);
  EXPECT_EQ((*tokens)[1].byte_end, 10);
  EXPECT_EQ((*tokens)[1].word_index, 1);
  EXPECT_EQ((*tokens)[2].text, "[UNK]");
}

TEST(TokenizerSettingsTest, StripAccentsFollowsOrOverridesLowerCase) {
  const std::string text = "Café";
  TokenizerOptions options;
  EXPECT_EQ(Texts(BertTokenizer(TinyVocab(), options), text), Strings{"cafe"});
  options.strip_accents = false;
  EXPECT_EQ(Texts(BertTokenizer(TinyVocab(), options), text), Strings{"café"});
  options.do_lower_case = false;
  options.strip_accents = true;
  EXPECT_EQ(Texts(BertTokenizer(TinyVocab(), options), "cAfé"),
            Strings{"[UNK]"});
  EXPECT_EQ(Texts(BertTokenizer(TinyVocab(), options), "café"),
            Strings{"cafe"});
}

TEST(TokenizerSettingsTest, ChineseCharsCanStayInWords) {
  absl::StatusOr<Vocab> vocab = Vocab::FromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "中", "##文", "中文"}, "test");
  ASSERT_TRUE(vocab.ok());
  TokenizerOptions options;
  EXPECT_EQ(Texts(BertTokenizer(*vocab, options), "中文"),
            (Strings{"中", "[UNK]"}));
  options.tokenize_chinese_chars = false;
  EXPECT_EQ(Texts(BertTokenizer(*vocab, options), "中文"), Strings{"中文"});
}

}  // namespace
}  // namespace bertology
