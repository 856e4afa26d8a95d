#include "client/render/svg_document.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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

void AppendColorBar(std::string* out, const ColorBar& bar) {
  absl::StrAppend(out, "<defs><linearGradient id=\"", bar.id,
                  "\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">\n");
  for (int i = 0; i <= 10; ++i) {
    absl::StrAppendFormat(out, "<stop offset=\"%.2f\" stop-color=\"%s\"/>\n",
                          i / 10.0, bar.color(i));
  }
  absl::StrAppend(out, "</linearGradient></defs>\n");
  absl::StrAppendFormat(out,
                        "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" "
                        "width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"url(#%s)\" stroke=\"#888\"/>\n",
                        bar.x, bar.y, bar.w, bar.h, bar.id);
  const int n = static_cast<int>(bar.ticks.size());
  for (int k = 0; k < n; ++k) {
    const double y =
        n > 1 ? bar.y + bar.tick_span * k / (n - 1) + 4 : bar.y + 4;
    SvgText(out, bar.x + bar.w + 4, y, bar.ticks[k], 10, "start");
  }
}

}  // namespace bertology::render
