// Encode(): special tokens, segments, word indices and HF's longest-first
// truncation, on a tiny vocabulary (no fixtures needed).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/core/tokenizer/bert_tokenizer.h"

namespace bertology {
namespace {

// A tiny vocabulary where each of "a".."h" is one piece and one word, so
// piece counts are word counts.
BertTokenizer LetterTokenizer() {
  absl::StatusOr<Vocab> vocab =
      Vocab::FromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d",
                         "e", "f", "g", "h", "##x"},
                        "letters");
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  return BertTokenizer(*std::move(vocab), TokenizerOptions{});
}

// (text, segment) of each token.
std::vector<std::pair<std::string, int>> Layout(const Encoding& e) {
  std::vector<std::pair<std::string, int>> out;
  for (const Token& t : e.tokens) out.emplace_back(t.text, t.segment);
  return out;
}

using Layouts = std::vector<std::pair<std::string, int>>;

TEST(EncodeTest, SingleTextHasClsAndSep) {
  const BertTokenizer tokenizer = LetterTokenizer();
  absl::StatusOr<Encoding> e = tokenizer.Encode("a bx c", std::nullopt, 16);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Layout(*e), (Layouts{{"[CLS]", 0},
                                 {"a", 0},
                                 {"b", 0},
                                 {"##x", 0},
                                 {"c", 0},
                                 {"[SEP]", 0}}));
  EXPECT_FALSE(e->truncated);
  EXPECT_EQ(e->num_words, 3);
  const std::vector<int> want_words = {-1, 0, 1, 1, 2, -1};
  for (size_t i = 0; i < want_words.size(); ++i) {
    EXPECT_EQ(e->tokens[i].word_index, want_words[i]) << i;
  }
  EXPECT_TRUE(e->tokens.front().special);
  EXPECT_TRUE(e->tokens.back().special);
  EXPECT_EQ(e->tokens.front().id, tokenizer.vocab().cls_id());
  EXPECT_EQ(e->tokens.back().id, tokenizer.vocab().sep_id());
  // Offsets of "##x": bytes 3..4 of "a bx c".
  EXPECT_EQ(e->tokens[3].byte_start, 3);
  EXPECT_EQ(e->tokens[3].byte_end, 4);
}

TEST(EncodeTest, PairSegmentsAndWordIndices) {
  const BertTokenizer tokenizer = LetterTokenizer();
  absl::StatusOr<Encoding> e = tokenizer.Encode("a b", "c d e", 16);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Layout(*e), (Layouts{{"[CLS]", 0},
                                 {"a", 0},
                                 {"b", 0},
                                 {"[SEP]", 0},
                                 {"c", 1},
                                 {"d", 1},
                                 {"e", 1},
                                 {"[SEP]", 1}}));
  const std::vector<int> want_words = {-1, 0, 1, -1, 2, 3, 4, -1};
  for (size_t i = 0; i < want_words.size(); ++i) {
    EXPECT_EQ(e->tokens[i].word_index, want_words[i]) << i;
  }
  EXPECT_EQ(e->num_words, 5);
  // text_b's offsets are into text_b.
  EXPECT_EQ(e->tokens[4].byte_start, 0);
  EXPECT_EQ(e->tokens[6].byte_start, 4);
}

TEST(EncodeTest, SingleTextTruncatesFromTheEnd) {
  const BertTokenizer tokenizer = LetterTokenizer();
  absl::StatusOr<Encoding> e = tokenizer.Encode("a b c d", std::nullopt, 4);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Layout(*e),
            (Layouts{{"[CLS]", 0}, {"a", 0}, {"b", 0}, {"[SEP]", 0}}));
  EXPECT_TRUE(e->truncated);
  EXPECT_EQ(e->num_words, 2);
  // Exactly at the limit is not truncation.
  e = tokenizer.Encode("a b", std::nullopt, 4);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->truncated);
}

// HF's longest_first removes one piece at a time from text_a when it is
// strictly longer than text_b, else from text_b.
TEST(EncodeTest, LongestFirstTruncation) {
  const BertTokenizer tokenizer = LetterTokenizer();
  struct Case {
    std::string a, b;
    int max_length;
    int want_a, want_b;
  };
  const std::vector<Case> cases = {
      {"a b c d e", "f g", 8, 3, 2},    // only a shrinks: 5,2 -> 3,2
      {"a b c", "d e f", 7, 2, 2},      // tie -> b, then a: 3,3 -> 2,2
      {"a b c", "d e f", 8, 3, 2},      // tie removes from b
      {"a b", "c d e f g h", 7, 2, 2},  // only b shrinks
      {"a b c d", "", 5, 2, 0},         // empty b: all from a
      {"a b c", "d", 4, 1, 0},          // 3,1 -> 2,1 -> 1,1 -> 1,0
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a + " | " + c.b + " @" + std::to_string(c.max_length));
    absl::StatusOr<Encoding> e = tokenizer.Encode(c.a, c.b, c.max_length);
    ASSERT_TRUE(e.ok()) << e.status();
    int n_a = 0, n_b = 0;
    for (const Token& t : e->tokens) {
      if (!t.special) (t.segment == 0 ? n_a : n_b)++;
    }
    EXPECT_EQ(n_a, c.want_a);
    EXPECT_EQ(n_b, c.want_b);
    EXPECT_TRUE(e->truncated);
    EXPECT_EQ(static_cast<int>(e->tokens.size()), c.max_length);
    EXPECT_EQ(e->num_words, c.want_a + c.want_b);
    // Kept pieces are the leading ones of each text.
    EXPECT_EQ(e->tokens[1].text, c.want_a > 0 ? c.a.substr(0, 1) : "[SEP]");
  }
}

TEST(EncodeTest, TruncatedWordIndicesStayDense) {
  const BertTokenizer tokenizer = LetterTokenizer();
  absl::StatusOr<Encoding> e = tokenizer.Encode("a b c d", "e f", 7);
  ASSERT_TRUE(e.ok()) << e.status();
  // a b | e f: word indices 0 1 | 2 3, not 4 5.
  EXPECT_EQ(e->tokens[4].text, "e");
  EXPECT_EQ(e->tokens[4].word_index, 2);
  EXPECT_EQ(e->tokens[5].word_index, 3);
  EXPECT_EQ(e->num_words, 4);
}

TEST(EncodeTest, MaxLengthTooSmallIsInvalidArgument) {
  const BertTokenizer tokenizer = LetterTokenizer();
  EXPECT_EQ(tokenizer.Encode("a", std::nullopt, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tokenizer.Encode("a", "b", 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tokenizer.Encode("a", std::nullopt, 3).ok());
  EXPECT_TRUE(tokenizer.Encode("a", "b", 4).ok());
  EXPECT_NE(tokenizer.Encode("a", "b", 3).status().message().find("max_length"),
            std::string::npos);
}

}  // namespace
}  // namespace bertology
