#include "client/render/difference_map_figure.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

constexpr double kCell = 22, kTop = 60, kLabel = 90;

}  // namespace

std::string DifferenceMapSvg(const DifferenceMap& map) {
  const int t = static_cast<int>(map.tokens.size());
  double max_abs = 0;
  for (double v : map.values) {
    if (std::isfinite(v)) max_abs = std::max(max_abs, std::abs(v));
  }
  // An all-zero difference still draws (white) with a readable scale.
  if (!(max_abs > 0)) max_abs = 1;
  const double left = kLabel, top = kTop + kLabel;
  const double side = t * kCell;
  const double width = std::max(left + side + 110, 480.0);
  const double height = top + side + 30;
  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, width / 2, 22, map.title, 15, "middle",
          "font-weight=\"bold\" class=\"title\"");
  SvgText(&out, width / 2, 40, map.subtitle, 11);
  for (int i = 0; i < t; ++i) {
    const double y = top + (i + 0.5) * kCell + 4;
    SvgText(&out, left - 6, y, map.tokens[i], 10, "end", "class=\"row-label\"");
    const double x = left + (i + 0.5) * kCell + 4;
    // Column labels run upwards so long pieces do not overlap.
    SvgText(&out, x, top - 6, map.tokens[i], 10, "start",
            absl::StrFormat("class=\"col-label\" transform=\"rotate(-90 "
                            "%.1f %.1f)\"",
                            x, top - 6));
  }
  for (int i = 0; i < t; ++i) {
    for (int j = 0; j < t; ++j) {
      const size_t k = static_cast<size_t>(i) * t + j;
      const double v = k < map.values.size() ? map.values[k] : NAN;
      const std::string fill = DivergingColor(v, max_abs);
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.5\" "
          "data-row=\"%d\" data-col=\"%d\" data-value=\"%s\"><title>%s &#8594; "
          "%s: %s</title></rect>\n",
          left + j * kCell, top + i * kCell, kCell, kCell, fill, i, j,
          std::isfinite(v) ? FormatNumber(v, 6) : "", XmlEscape(map.tokens[i]),
          XmlEscape(map.tokens[j]), FormatNumber(v, 4));
    }
  }
  // Colour bar: +max_abs (red) at the top, -max_abs (blue) at the bottom.
  const double lx = left + side + 20, lw = 14, lh = std::max(side, 1.0);
  ColorBar bar{"diverging", lx, top, lw, lh};
  bar.color = [](int i) { return DivergingColor(1 - i / 5.0, 1); };
  for (int i = 0; i <= 2; ++i) {
    bar.ticks.push_back(FormatNumber(max_abs * (1 - i), 3));
  }
  bar.tick_span = lh;
  AppendColorBar(&out, bar);
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
