#include "server/core/utf8.h"

#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

absl::Status Invalid(int offset, const char* why) {
  return absl::InvalidArgumentError(
      absl::StrCat("text is not valid UTF-8: ", why, " at byte ", offset));
}

}  // namespace

absl::Status DecodeUtf8(std::string_view text, DecodedText* out) {
  out->chars.clear();
  out->byte_offsets.clear();
  out->chars.reserve(text.size());
  out->byte_offsets.reserve(text.size() + 1);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const int n = static_cast<int>(text.size());
  int i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    int len;
    char32_t cp;
    char32_t min_cp;
    if (b < 0x80) {
      len = 1, cp = b, min_cp = 0;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, cp = b & 0x1F, min_cp = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, cp = b & 0x0F, min_cp = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, cp = b & 0x07, min_cp = 0x10000;
    } else {
      return Invalid(i, "bad lead byte");
    }
    if (i + len > n) return Invalid(i, "truncated sequence");
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        return Invalid(i + k, "bad continuation byte");
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min_cp) return Invalid(i, "overlong encoding");
    if (cp > 0x10FFFF) return Invalid(i, "code point above U+10FFFF");
    if (cp >= 0xD800 && cp <= 0xDFFF) return Invalid(i, "surrogate");
    out->chars.push_back(cp);
    out->byte_offsets.push_back(i);
    i += len;
  }
  out->byte_offsets.push_back(n);
  return absl::OkStatus();
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace bertology
