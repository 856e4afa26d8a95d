#include "server/service/convert/attention_view.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

Token Piece(int word, bool special = false) {
  Token t;
  t.word_index = special ? -1 : word;
  t.special = special;
  return t;
}

TEST(WordSpansTest, SpecialTokensAreTheirOwnWords) {
  Encoding e;
  e.tokens = {Piece(-1, true), Piece(0), Piece(0),       Piece(1),
              Piece(-1, true), Piece(2), Piece(-1, true)};
  std::vector<WordSpan> spans = WordSpans(e);
  // [CLS] | w0 w0 | w1 | [SEP] | w2 | [SEP]
  ASSERT_EQ(spans.size(), 6u);
  EXPECT_EQ(spans[1].first_token, 1);
  EXPECT_EQ(spans[1].num_tokens, 2);
  EXPECT_EQ(spans[2].first_token, 3);
  EXPECT_EQ(spans[3].first_token, 4);
  EXPECT_EQ(spans[4].first_token, 5);
  EXPECT_EQ(spans[5].first_token, 6);
}

TEST(WordLevelMapTest, SumToMeanFrom) {
  // Tokens: [CLS] a ##b [SEP]; words: [CLS], ab, [SEP].
  const int t = 4;
  std::vector<float> a = {
      0.1f,  0.2f,  0.3f,  0.4f,   //
      0.25f, 0.25f, 0.25f, 0.25f,  //
      0.0f,  0.5f,  0.5f,  0.0f,   //
      1.0f,  0.0f,  0.0f,  0.0f,
  };
  std::vector<WordSpan> words = {{0, 1}, {1, 2}, {3, 1}};
  std::vector<float> w = WordLevelMap(a, t, words);
  ASSERT_EQ(w.size(), 9u);
  // From [CLS]: to ab = 0.2 + 0.3.
  EXPECT_FLOAT_EQ(w[0 * 3 + 1], 0.5f);
  // From ab: mean of rows 1, 2. To [CLS]: (0.25 + 0) / 2; to ab: (0.5 + 1)/2.
  EXPECT_FLOAT_EQ(w[1 * 3 + 0], 0.125f);
  EXPECT_FLOAT_EQ(w[1 * 3 + 1], 0.75f);
  EXPECT_FLOAT_EQ(w[1 * 3 + 2], 0.125f);
  for (int u = 0; u < 3; ++u) {
    EXPECT_NEAR(w[u * 3] + w[u * 3 + 1] + w[u * 3 + 2], 1.0f, 1e-6);
  }
}

}  // namespace
}  // namespace bertology
