#include "client/render/escape.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/utf8.h"

namespace bertology::render {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at s[i] that is also an XML
// character, or 0.
size_t XmlCharLength(std::string_view s, size_t i) {
  char32_t cp;
  const int len = Utf8SequenceAt(s, i, &cp);
  // U+FFFE and U+FFFF are not XML characters.
  if (len == 0 || cp == 0xFFFE || cp == 0xFFFF) return 0;
  return static_cast<size_t>(len);
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          // Other C0 controls are not XML characters: dropped.
          if (u >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += c;
      }
      ++i;
      continue;
    }
    const size_t len = XmlCharLength(text, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string JsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatNumber(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  std::string s = absl::StrFormat("%.*f", decimals, value);
  // Avoid "-0.0" for values that round to zero.
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) {
    s.erase(0, 1);
  }
  return s;
}

}  // namespace bertology::render
