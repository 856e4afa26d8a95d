// RobertaTokenizer and XlmrTokenizer behind the Tokenizer interface: the
// encodings Tokenizer::Encode lays out from their pieces equal HF's own
// (tests/golden/byte-bpe/ and sentencepiece-*/ goldens, written by HF's
// RobertaTokenizerFast and XLMRobertaTokenizer), with the pair roles,
// words and truncation the server needs.
#include "server/core/tokenizer/piece_tokenizers.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/tokenizer/golden_files_for_tests.h"

namespace bertology {
namespace {

using testing::ReadJsonLines;
using testing::SourcePath;

std::unique_ptr<RobertaTokenizer> Roberta(bool add_prefix_space) {
  RobertaTokenizerOptions options;
  options.add_prefix_space = add_prefix_space;
  auto t = RobertaTokenizer::FromFiles(
      SourcePath("tests/golden/byte-bpe/vocab.json"),
      SourcePath("tests/golden/byte-bpe/merges.txt"), options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

std::unique_ptr<XlmrTokenizer> Xlmr(const std::string& kind) {
  auto t =
      XlmrTokenizer::FromFile(SourcePath("tests/golden/sentencepiece-" + kind +
                                         "/sentencepiece.bpe.model"),
                              XlmRobertaTokenizerOptions{});
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

std::optional<std::string_view> Pair(const nlohmann::json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get_ref<const std::string&>();
}

// `<s> a </s>` is segment 0, `</s> b </s>` segment 1; the four added
// tokens are special.
void ExpectRobertaLayout(const Encoding& e, bool pair) {
  ASSERT_GE(e.tokens.size(), 2u);
  EXPECT_TRUE(e.tokens.front().special);
  EXPECT_EQ(e.tokens.front().segment, 0);
  EXPECT_TRUE(e.tokens.back().special);
  EXPECT_EQ(e.tokens.back().segment, pair ? 1 : 0);
  int specials = 0;
  for (const Token& t : e.tokens) specials += t.special ? 1 : 0;
  EXPECT_EQ(specials, pair ? 4 : 2);
}

TEST(RobertaTokenizerTest, EncodeMatchesHfFastIdsAndCharOffsets) {
  const std::unique_ptr<RobertaTokenizer> t[2] = {Roberta(false),
                                                  Roberta(true)};
  ASSERT_TRUE(t[0] && t[1]);
  int checked = 0;
  for (const nlohmann::json& c :
       ReadJsonLines(SourcePath("tests/golden/byte-bpe/golden.jsonl"))) {
    const bool prefix = c["add_prefix_space"].get<bool>();
    const auto text_b = Pair(c["text_b"]);
    auto e = t[prefix]->Encode(c["text_a"].get<std::string>(), text_b, 512);
    ASSERT_TRUE(e.ok()) << e.status();
    std::vector<int> ids;
    for (const Token& token : e->tokens) ids.push_back(token.id);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>()) << c.dump();
    ExpectRobertaLayout(*e, text_b.has_value());
    for (size_t i = 0; i < e->tokens.size(); ++i) {
      const Token& token = e->tokens[i];
      if (token.special) continue;
      EXPECT_EQ(token.char_start, c["char_offsets"][i][0].get<int>())
          << c.dump() << " token " << i;
      EXPECT_EQ(token.char_end, c["char_offsets"][i][1].get<int>())
          << c.dump() << " token " << i;
      EXPECT_EQ(token.segment, c["sequence_ids"][i].get<int>()) << c.dump();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 96);
}

TEST(RobertaTokenizerTest, WordsArePreTokensAndTextBFollowsTextA) {
  auto t = Roberta(false);
  ASSERT_TRUE(t);
  // "Hello world!" -> Hello | Ġworld | ! (three GPT-2 pre-tokens).
  auto e = t->Encode("Hello world!", std::string_view("ok"), 64);
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<int> words;
  for (const Token& token : e->tokens) words.push_back(token.word_index);
  ASSERT_EQ(e->tokens.size(), words.size());
  EXPECT_EQ(words.front(), -1);
  EXPECT_EQ(words.back(), -1);
  EXPECT_EQ(e->num_words, 4);
  EXPECT_EQ(e->tokens[e->tokens.size() - 2].word_index, 3);  // "ok"
  // <s> Hello Ġworld ! </s> </s> ok </s> (a piece may split): the second
  // </s> opens text_b.
  size_t sep = 1;
  while (sep < e->tokens.size() && !e->tokens[sep].special) ++sep;
  ASSERT_LT(sep + 1, e->tokens.size());
  EXPECT_EQ(e->tokens[sep].segment, 0);
  EXPECT_TRUE(e->tokens[sep + 1].special);
  EXPECT_EQ(e->tokens[sep + 1].segment, 1);
  EXPECT_EQ(e->tokens[sep - 1].word_index, 2);  // "!"
}

TEST(RobertaTokenizerTest, TruncatesLongestFirstAroundFourSpecials) {
  auto t = Roberta(false);
  ASSERT_TRUE(t);
  auto e = t->Encode("a b c d e f g h", std::string_view("x y"), 9);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->tokens.size(), 9u);
  EXPECT_TRUE(e->truncated);
  // 5 pieces fit: text_a keeps 3, text_b its 2.
  int a = 0, b = 0;
  for (const Token& token : e->tokens) {
    if (token.special) continue;
    (token.segment == 0 ? a : b) += 1;
  }
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 2);
  EXPECT_FALSE(t->Encode("a", std::string_view("b"), 4).ok());
}

TEST(RobertaTokenizerTest, SpecialsComeFromTheVocabulary) {
  auto t = Roberta(false);
  ASSERT_TRUE(t);
  const SpecialTokens& s = t->specials();
  EXPECT_EQ(s.cls_id, 0);
  EXPECT_EQ(s.pad_id, 1);
  EXPECT_EQ(s.sep_id, 2);
  EXPECT_EQ(s.unk_id, 3);
  EXPECT_EQ(s.mask_id, 4);
  EXPECT_EQ(s.pair_separators, 2);
  RobertaTokenizerOptions options;
  options.mask_token = "<masque>";
  auto missing = RobertaTokenizer::FromFiles(
      SourcePath("tests/golden/byte-bpe/vocab.json"),
      SourcePath("tests/golden/byte-bpe/merges.txt"), options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("<masque>"), std::string::npos);
  EXPECT_NE(missing.status().message().find("vocab.json"), std::string::npos);
}

TEST(XlmrTokenizerTest, EncodeMatchesHfSlowIdsAndSentencepieceSpans) {
  int checked = 0;
  for (const std::string kind : {"bpe", "unigram"}) {
    auto t = Xlmr(kind);
    ASSERT_TRUE(t);
    for (const nlohmann::json& c : ReadJsonLines(SourcePath(
             "tests/golden/sentencepiece-" + kind + "/golden.jsonl"))) {
      const auto text_b = Pair(c["text_pair"]);
      auto e = t->Encode(c["text"].get<std::string>(), text_b, 512);
      ASSERT_TRUE(e.ok()) << e.status();
      std::vector<int> ids;
      for (const Token& token : e->tokens) ids.push_back(token.id);
      EXPECT_EQ(ids, c["slow_ids"].get<std::vector<int>>()) << c.dump();
      ExpectRobertaLayout(*e, text_b.has_value());
      if (!text_b.has_value()) {
        // Tokenize's pieces keep sentencepiece's byte spans.
        for (size_t i = 0; i + 2 < e->tokens.size(); ++i) {
          EXPECT_EQ(e->tokens[i + 1].byte_start,
                    c["sp_offsets"][i][0].get<int>());
          EXPECT_EQ(e->tokens[i + 1].byte_end,
                    c["sp_offsets"][i][1].get<int>());
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 90);
}

TEST(XlmrTokenizerTest, WordsStartAtTheMetaspace) {
  auto t = Xlmr("bpe");
  ASSERT_TRUE(t);
  // "▁He" "llo" "▁wor" "ld": two words.
  auto e = t->Encode("Hello world", std::nullopt, 64);
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<int> words;
  for (const Token& token : e->tokens) words.push_back(token.word_index);
  EXPECT_EQ(words, (std::vector<int>{-1, 0, 0, 1, 1, -1}));
  EXPECT_EQ(e->num_words, 2);
  EXPECT_EQ(t->specials().mask_id, t->vocab_size() - 1);
}

}  // namespace
}  // namespace bertology
