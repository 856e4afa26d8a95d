#include "server/service/convert/attention_view.h"

#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace bertology {

std::vector<WordSpan> WordSpans(const Encoding& encoding) {
  std::vector<WordSpan> words;
  int previous_word = -2;
  for (int i = 0; i < static_cast<int>(encoding.tokens.size()); ++i) {
    const Token& token = encoding.tokens[i];
    const bool joins = !token.special && token.word_index >= 0 &&
                       token.word_index == previous_word;
    if (joins) {
      ++words.back().num_tokens;
    } else {
      words.push_back(WordSpan{i, 1});
    }
    previous_word = token.special ? -2 : token.word_index;
  }
  return words;
}

std::vector<float> WordLevelMap(const std::vector<float>& a, int t,
                                const std::vector<WordSpan>& words) {
  const int w = static_cast<int>(words.size());
  // To-word sums: [T x W].
  std::vector<double> to(static_cast<size_t>(t) * w, 0.0);
  for (int i = 0; i < t; ++i) {
    for (int v = 0; v < w; ++v) {
      double sum = 0;
      for (int k = 0; k < words[v].num_tokens; ++k) {
        sum += a[static_cast<size_t>(i) * t + words[v].first_token + k];
      }
      to[static_cast<size_t>(i) * w + v] = sum;
    }
  }
  // From-word means: [W x W].
  std::vector<float> out(static_cast<size_t>(w) * w, 0.0f);
  for (int u = 0; u < w; ++u) {
    for (int v = 0; v < w; ++v) {
      double sum = 0;
      for (int k = 0; k < words[u].num_tokens; ++k) {
        sum += to[static_cast<size_t>(words[u].first_token + k) * w + v];
      }
      out[static_cast<size_t>(u) * w + v] =
          static_cast<float>(sum / words[u].num_tokens);
    }
  }
  return out;
}

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

}  // namespace bertology
