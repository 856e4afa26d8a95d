// UTF-8 for everything that reads text: the tokenizer (code points with
// their byte offsets), request validation, and the client's XML/SVG
// escaping. One decoder, utf8proc's, which rejects overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences.
#ifndef BERTOLOGY_COMMON_UTF8_H_
#define BERTOLOGY_COMMON_UTF8_H_

#include <cstddef>
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

// The length in bytes of the valid UTF-8 sequence at text[i] (0 when the
// bytes there are not one), and its code point in `*cp`.
int Utf8SequenceAt(std::string_view text, size_t i, char32_t* cp);

// Whether all of `text` is valid UTF-8.
bool IsValidUtf8(std::string_view text);

// Decodes `text` into `out`; INVALID_ARGUMENT naming the byte offset of the
// first invalid sequence.
absl::Status DecodeUtf8(std::string_view text, DecodedText* out);

// Appends the UTF-8 encoding of `cp` (assumed a valid scalar value).
void AppendUtf8(char32_t cp, std::string* out);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_UTF8_H_
