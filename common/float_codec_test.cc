// The wire's float codec: binary16 rounding against known bits, the F16C
// path against the scalar one at every offset, byte order, and the decoders
// against the encoders for every binary16 value.
#include "common/float_codec.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

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

TEST(HalfToFloatTest, KnownValues) {
  EXPECT_EQ(HalfToFloat(0x0000), 0.0f);
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x3800), 0.5f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // subnormal
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
}

TEST(DecodeTest, InvertsTheEncoders) {
  // Every finite binary16 value decodes and re-encodes to its own bits.
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0) continue;  // NaN
    ASSERT_EQ(FloatToHalf(HalfToFloat(h)), h) << std::hex << bits;
  }
  const std::vector<float> values = {1.0f, -0.25f, 3.5e-5f, 65504.0f, 0.0f};
  EXPECT_EQ(DecodeFloat32(EncodeFloat32(values)), values);
  EXPECT_EQ(DecodeFloat16(EncodeFloat16(values)),
            (std::vector<float>{1.0f, -0.25f, HalfToFloat(FloatToHalf(3.5e-5f)),
                                65504.0f, 0.0f}));
  EXPECT_TRUE(DecodeFloat32(std::string(3, '\0')).empty());
}

}  // namespace
}  // namespace bertology
