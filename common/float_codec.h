// Floats as little-endian IEEE bytes, the wire form of attention maps
// (v1::AttentionEncoding FLOAT32 and FLOAT16): encoded by the server,
// decoded by the client, both here. No dependencies.
#ifndef BERTOLOGY_COMMON_FLOAT_CODEC_H_
#define BERTOLOGY_COMMON_FLOAT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bertology {

// IEEE binary16 bits of `f`, rounded to nearest even (overflow to inf,
// subnormals kept, NaN stays NaN).
uint16_t FloatToHalf(float f);

// IEEE binary16 -> float, exactly (subnormals, inf and NaN included).
float HalfToFloat(uint16_t half);

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

// The floats of little-endian binary32 / binary16 bytes, whatever the
// host's byte order; a trailing partial value is ignored (callers check
// the size).
std::vector<float> DecodeFloat32(const std::string& bytes);
std::vector<float> DecodeFloat16(const std::string& bytes);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_FLOAT_CODEC_H_
