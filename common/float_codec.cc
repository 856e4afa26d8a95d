#include "common/float_codec.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace bertology {
namespace {

// Little-endian on the wire whatever the host is, so assemble the bits by
// hand rather than memcpy the bytes.
uint32_t LoadLe(const std::string& bytes, size_t offset, int width) {
  uint32_t v = 0;
  for (int i = width - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(bytes[offset + i]);
  }
  return v;
}

float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds past 65504: inf
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent >= -14) {  // normal half
    uint32_t mantissa = abs & 0x7FFFFFu;
    uint32_t half =
        (static_cast<uint32_t>(exponent + 15) << 10) | (mantissa >> 13);
    const uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal
  // Subnormal half: value = m * 2^-24 with m < 1024.
  const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;  // implicit 1
  const int shift = -exponent - 14 + 13;                    // 14..24
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

std::string EncodeFloat32(const float* data, size_t n) {
  std::string out(n * 4, '\0');
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (n > 0) std::memcpy(out.data(), data, n * 4);
#else
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], 4);
    for (int k = 0; k < 4; ++k)
      out[i * 4 + k] = static_cast<char>(bits >> (8 * k));
  }
#endif
  return out;
}

namespace {

void PutHalf(uint16_t bits, char* out) {
  out[0] = static_cast<char>(bits & 0xFF);
  out[1] = static_cast<char>(bits >> 8);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Converts the first n - n % 8 values; returns how many it did. F16C's
// VCVTPS2PH with imm 0 rounds to nearest even like FloatToHalf; NaNs stay
// NaNs (their payload bits may differ: attention weights have none).
__attribute__((target("avx,f16c"))) size_t HalvesF16c(const float* data,
                                                      size_t n, char* out) {
  const size_t whole = n - n % 8;
  for (size_t i = 0; i < whole; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), 0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
  }
  return whole;
}

// F16C is CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports does not
// know "f16c"); its 256-bit form needs AVX, which the builtin checks with
// the OS's YMM support.
bool HasF16c() {
  static const bool has = [] {
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ecx & (1u << 29)) != 0 && __builtin_cpu_supports("avx");
  }();
  return has;
}
#endif

}  // namespace

std::string EncodeFloat16(const float* data, size_t n) {
  std::string out(n * 2, '\0');
  size_t i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (HasF16c()) i = HalvesF16c(data, n, out.data());
#endif
  for (; i < n; ++i) PutHalf(FloatToHalf(data[i]), out.data() + 2 * i);
  return out;
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const int exponent = (half >> 10) & 0x1f;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) {  // inf or NaN
    return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -v : v;
  }
  return BitsToFloat(sign | static_cast<uint32_t>(exponent - 15 + 127) << 23 |
                     mantissa << 13);
}

std::vector<float> DecodeFloat32(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = BitsToFloat(LoadLe(bytes, i * 4, 4));
  }
  return out;
}

std::vector<float> DecodeFloat16(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = HalfToFloat(static_cast<uint16_t>(LoadLe(bytes, i * 2, 2)));
  }
  return out;
}

}  // namespace bertology
