// Token- and word-level views of attention maps, and their byte encodings.
// Plain C++ on row-major float maps; no tensors, no gRPC.
#ifndef BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_
#define BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

// The rows/columns of a word-level map: consecutive tokens sharing a
// word_index form one word; every special token is a word of its own.
struct WordSpan {
  int first_token = 0;
  int num_tokens = 0;
};
std::vector<WordSpan> WordSpans(const Encoding& encoding);

// Clark et al. 2019: from a token map `a` ([T x T], row = from, column =
// to), attention *to* a word is the sum over its pieces and attention
// *from* a word is the mean over its pieces. Returns [W x W] row-major; rows
// that summed to 1 still do.
std::vector<float> WordLevelMap(const std::vector<float>& a, int t,
                                const std::vector<WordSpan>& words);

// IEEE binary16 bits of `f`, rounded to nearest even (overflow to inf,
// subnormals kept, NaN stays NaN).
uint16_t FloatToHalf(float f);

// Little-endian bytes of the n values at `data` as binary32 or binary16.
// Binary16 uses the CPU's F16C conversion where it has one (8 values per
// instruction, the same bits as FloatToHalf: round to nearest even), else
// FloatToHalf; the scalar loop was most of FLOAT16's cost in GetAttention
// (bench/RESULTS.md).
std::string EncodeFloat32(const float* data, size_t n);
std::string EncodeFloat16(const float* data, size_t n);
inline std::string EncodeFloat32(const std::vector<float>& values) {
  return EncodeFloat32(values.data(), values.size());
}
inline std::string EncodeFloat16(const std::vector<float>& values) {
  return EncodeFloat16(values.data(), values.size());
}

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_
