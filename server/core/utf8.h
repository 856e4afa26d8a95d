// Strict UTF-8 decoding and encoding, with the byte offset of every code
// point so that spans in code points can be mapped back to bytes.
#ifndef BERTOLOGY_CORE_UTF8_H_
#define BERTOLOGY_CORE_UTF8_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace bertology {

// A decoded text: `chars[i]` starts at byte `byte_offsets[i]`;
// `byte_offsets` has one extra entry, the total byte length.
struct DecodedText {
  std::vector<char32_t> chars;
  std::vector<int> byte_offsets;
};

// Decodes `text` into `out`. Rejects overlong forms, surrogates, code points
// above U+10FFFF and truncated sequences with INVALID_ARGUMENT naming the
// byte offset of the fault.
absl::Status DecodeUtf8(std::string_view text, DecodedText* out);

// Appends the UTF-8 encoding of `cp` (assumed a valid scalar value).
void AppendUtf8(char32_t cp, std::string* out);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_UTF8_H_
