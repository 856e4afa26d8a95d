#include "server/service/convert/attention_view.h"

#include <cmath>
#include <cstring>
#include <random>
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

TEST(FloatToHalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // ties to even: inf
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(FloatToHalf(NAN) & 0x7C00, 0x7C00);
  EXPECT_NE(FloatToHalf(NAN) & 0x03FF, 0);
}

TEST(EncodeTest, LittleEndian) {
  const std::string f32 = EncodeFloat32({1.0f});
  ASSERT_EQ(f32.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(f32[3]), 0x3F);
  EXPECT_EQ(static_cast<unsigned char>(f32[2]), 0x80);
  const std::string f16 = EncodeFloat16({1.0f, -2.0f});
  ASSERT_EQ(f16.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(f16[0]), 0x00);
  EXPECT_EQ(static_cast<unsigned char>(f16[1]), 0x3C);
  EXPECT_EQ(static_cast<unsigned char>(f16[3]), 0xC0);
}

// The vector path (F16C where the CPU has it, 8 at a time) gives
// FloatToHalf's bits for every value, at every offset of the 8-value
// blocks: normals, ties, subnormals, overflow, zeros, random weights.
TEST(EncodeTest, Float16MatchesFloatToHalfEverywhere) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.0f,
                               65504.0f,
                               65520.0f,
                               1e6f,
                               -1e6f,
                               std::ldexp(1.0f, -24),
                               std::ldexp(1.0f, -14),
                               std::ldexp(1.0f, -26),
                               std::ldexp(3.0f, -25),
                               1.0f + std::ldexp(1.0f, -11),
                               1.0f + 3 * std::ldexp(1.0f, -11),
                               INFINITY,
                               -INFINITY};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7F7FFFFFu);
  for (int i = 0; i < 5000; ++i) values.push_back(weight(rng));
  for (int i = 0; i < 5000; ++i) {
    uint32_t b = bits(rng) | (i % 2 ? 0x80000000u : 0u);
    float f;
    std::memcpy(&f, &b, 4);
    values.push_back(f);
  }
  for (size_t offset = 0; offset < 8; ++offset) {
    const std::string got =
        EncodeFloat16(values.data() + offset, values.size() - offset);
    ASSERT_EQ(got.size(), 2 * (values.size() - offset));
    for (size_t i = offset; i < values.size(); ++i) {
      const size_t k = 2 * (i - offset);
      const uint16_t half =
          static_cast<uint16_t>(static_cast<unsigned char>(got[k]) |
                                (static_cast<unsigned char>(got[k + 1]) << 8));
      ASSERT_EQ(half, FloatToHalf(values[i]))
          << "value " << values[i] << " at " << i << ", offset " << offset;
    }
  }
  const std::string f32 = EncodeFloat32(values);
  ASSERT_EQ(f32.size(), 4 * values.size());
  EXPECT_EQ(std::memcmp(f32.data(), values.data(), f32.size()), 0);
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
