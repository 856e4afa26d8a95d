#include "common/csv.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace bertology {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvNumber(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.17g", v);
}

}  // namespace bertology
