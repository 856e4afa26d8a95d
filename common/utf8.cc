#include "common/utf8.h"

#include <utf8proc.h>

#include "absl/strings/str_cat.h"

namespace bertology {

int Utf8SequenceAt(std::string_view text, size_t i, char32_t* cp) {
  if (i >= text.size()) return 0;
  utf8proc_int32_t c = -1;
  const utf8proc_ssize_t n = utf8proc_iterate(
      reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
      static_cast<utf8proc_ssize_t>(text.size() - i), &c);
  if (n <= 0 || c < 0) return 0;
  *cp = static_cast<char32_t>(c);
  return static_cast<int>(n);
}

bool IsValidUtf8(std::string_view text) {
  char32_t cp;
  for (size_t i = 0; i < text.size();) {
    const int n = Utf8SequenceAt(text, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

absl::Status DecodeUtf8(std::string_view text, DecodedText* out) {
  out->chars.clear();
  out->byte_offsets.clear();
  out->chars.reserve(text.size());
  out->byte_offsets.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const int n = Utf8SequenceAt(text, i, &cp);
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "text is not valid UTF-8: an invalid sequence at byte ", i));
    }
    out->chars.push_back(cp);
    out->byte_offsets.push_back(static_cast<int>(i));
    i += n;
  }
  out->byte_offsets.push_back(static_cast<int>(text.size()));
  return absl::OkStatus();
}

void AppendUtf8(char32_t cp, std::string* out) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n =
      utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
  out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

}  // namespace bertology
