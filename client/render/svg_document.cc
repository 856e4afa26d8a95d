#include "client/render/svg_document.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "client/render/escape.h"

namespace bertology::render {

void OpenSvg(std::string* out, double width, double height) {
  absl::StrAppendFormat(
      out,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%.0f\" "
      "height=\"%.0f\" fill=\"#ffffff\"/>\n",
      width, height, width, height, width, height);
}

void CloseSvg(std::string* out) { out->append("</svg>\n"); }

void SvgText(std::string* out, double x, double y, std::string_view text,
             double font_size, std::string_view anchor,
             std::string_view extra) {
  absl::StrAppendFormat(out,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" "
                        "text-anchor=\"%s\"%s%s>%s</text>\n",
                        x, y, font_size, anchor, extra.empty() ? "" : " ",
                        extra, XmlEscape(text));
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0.0};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 1e-9;
       t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  // Cover hi when floor() rounding left it just above the last tick.
  if (ticks.empty() || ticks.back() < hi - step * 1e-9) {
    ticks.push_back(ticks.empty() ? hi : ticks.back() + step);
  }
  return ticks;
}

}  // namespace bertology::render
