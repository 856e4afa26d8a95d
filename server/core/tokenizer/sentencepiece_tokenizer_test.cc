// XlmRobertaTokenizer against HF: tests/golden/sentencepiece-*/golden.jsonl
// is written by tests/golden/make_sentencepiece_golden.py from HF's slow
// XLMRobertaTokenizer (ids) and XLMRobertaTokenizerFast (offsets).
#include "server/core/tokenizer/sentencepiece_tokenizer.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/tokenizer/golden_files_for_tests.h"

namespace bertology {
namespace {

using testing::ReadJsonLines;
using testing::SourcePath;

std::string ModelPath(const std::string& type) {
  return SourcePath("tests/golden/sentencepiece-" + type +
                    "/sentencepiece.bpe.model");
}

std::vector<nlohmann::json> GoldenCases(const std::string& type) {
  const std::string path =
      SourcePath("tests/golden/sentencepiece-" + type + "/golden.jsonl");
  return ReadJsonLines(path);
}

std::vector<int> Ids(const std::vector<SentencePieceToken>& tokens) {
  std::vector<int> ids;
  for (const auto& t : tokens) ids.push_back(t.id);
  return ids;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

using Spans = std::vector<std::vector<int>>;

Spans SpansOf(const std::vector<SentencePieceToken>& tokens) {
  Spans spans;
  for (const auto& t : tokens) spans.push_back({t.byte_start, t.byte_end});
  return spans;
}

// Every case: Tokenize's ids, pieces and byte spans (sentencepiece's own,
// replayed by the script with python sentencepiece), Encode's ids (HF's
// slow tokenizer; the fast one's where they agree, which is all but
// "a  <mask>  b"), and Encode's spans and sequences built from Tokenize's.
TEST_P(GoldenTest, MatchesHf) {
  auto tokenizer = XlmRobertaTokenizer::FromFile(ModelPath(GetParam()));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const XlmRobertaTokenizer& tok = **tokenizer;
  const std::vector<nlohmann::json> cases = GoldenCases(GetParam());
  ASSERT_GE(cases.size(), 40u);
  int pieces_checked = 0;
  for (const nlohmann::json& c : cases) {
    const std::string a = c["text"];
    std::optional<std::string> b;
    if (!c["text_pair"].is_null()) b = c["text_pair"].get<std::string>();
    SCOPED_TRACE(a + (b ? " | " + *b : ""));
    const auto ids = c["slow_ids"].get<std::vector<int>>();
    auto encoding = tok.Encode(a, b);
    ASSERT_TRUE(encoding.ok()) << encoding.status();
    EXPECT_EQ(Ids(*encoding), ids);
    if (c["agree"].get<bool>()) EXPECT_EQ(Ids(*encoding), c["fast_ids"]);
    auto tokens_a = tok.Tokenize(a);
    ASSERT_TRUE(tokens_a.ok());
    Spans expected = {{0, 0}};
    for (const auto& s : SpansOf(*tokens_a)) expected.push_back(s);
    expected.push_back({0, 0});
    if (b) {
      auto tokens_b = tok.Tokenize(*b);
      ASSERT_TRUE(tokens_b.ok());
      expected.push_back({0, 0});
      for (const auto& s : SpansOf(*tokens_b)) expected.push_back(s);
      expected.push_back({0, 0});
      EXPECT_EQ((*encoding)[tokens_a->size() + 3].sequence,
                tokens_b->empty() ? -1 : 1);
    }
    EXPECT_EQ(SpansOf(*encoding), expected);
    EXPECT_EQ(encoding->front().sequence, -1);
    EXPECT_TRUE(encoding->back().special);
    if (b) continue;
    EXPECT_EQ(Ids(*tokens_a), c["tokenize_ids"].get<std::vector<int>>());
    std::vector<std::string> pieces;
    for (const auto& t : *tokens_a) {
      pieces.push_back(t.piece);
      EXPECT_EQ(t.sequence, 0);
      EXPECT_EQ(t.special, t.piece.front() == '<' && t.piece.back() == '>');
    }
    EXPECT_EQ(pieces, c["tokenize_pieces"].get<std::vector<std::string>>());
    EXPECT_EQ(SpansOf(*tokens_a), c["sp_offsets"].get<Spans>());
    pieces_checked += static_cast<int>(pieces.size());
  }
  EXPECT_GT(pieces_checked, 300);
}

TEST_P(GoldenTest, Ids) {
  auto tokenizer = XlmRobertaTokenizer::FromFile(ModelPath(GetParam()));
  ASSERT_TRUE(tokenizer.ok());
  auto mask = (*tokenizer)->Tokenize("<mask>");
  ASSERT_TRUE(mask.ok());
  EXPECT_EQ((*mask)[0].id, (*tokenizer)->mask_id());
  EXPECT_EQ((*tokenizer)->vocab_size(), (*tokenizer)->mask_id() + 1);
  // Without lstrip the space stays with the text before it.
  XlmRobertaTokenizerOptions options;
  options.mask_lstrip = false;
  auto no_strip = XlmRobertaTokenizer::FromFile(ModelPath(GetParam()), options);
  ASSERT_TRUE(no_strip.ok());
  auto tokens = (*no_strip)->Tokenize("a <mask>");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->back().byte_start, 2);
  EXPECT_FALSE((*tokenizer)->Tokenize("bad \xff utf-8").ok());
}

TEST(SentencePieceTokenizerTest, MissingFileIsNamed) {
  auto tokenizer = XlmRobertaTokenizer::FromFile("/nonexistent/sp.model");
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(tokenizer.status().message().find("/nonexistent/sp.model"),
            std::string::npos);
}

TEST(SentencePieceTokenizerTest, NotAModelIsNamed) {
  const std::string path =
      SourcePath("tests/golden/make_sentencepiece_golden.py");
  auto tokenizer = XlmRobertaTokenizer::FromFile(path);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tokenizer.status().message().find(path), std::string::npos);
  EXPECT_NE(tokenizer.status().message().find("not a SentencePiece model"),
            std::string::npos);
}

// Many threads on one tokenizer give what one thread gives (run under
// TSan/ASan in the sanitizer build).
TEST(SentencePieceTokenizerTest, ThreadSafe) {
  auto tokenizer = XlmRobertaTokenizer::FromFile(ModelPath("unigram"));
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<nlohmann::json> cases = GoldenCases("unigram");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (const nlohmann::json& c : cases) {
          if (!c["text_pair"].is_null()) continue;
          auto encoding =
              (*tokenizer)->Encode(c["text"].get<std::string>(), std::nullopt);
          if (!encoding.ok() || Ids(*encoding) != c["slow_ids"]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenTest,
                         ::testing::Values("bpe", "unigram"));

}  // namespace
}  // namespace bertology
