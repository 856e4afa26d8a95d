#include "client/render/patch_figure.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

// Wider than this many columns (a head x position grid), cells shrink and
// drop their numbers, which would not fit; the <title> still has them.
constexpr int kCompactColumns = 16;

size_t LongestLabel(const std::vector<std::string>& labels) {
  size_t n = 0;
  for (const std::string& l : labels) n = std::max(n, l.size());
  return n;
}

// The colour bar: +max at the top, -max at the bottom, 0 in the middle.
void Legend(std::string* out, double x, double y, double w, double h,
            double max_abs) {
  ColorBar bar{"patch-diverging", x, y, w, h};
  bar.color = [max_abs](int i) {
    const double t = i / 10.0;
    return DivergingColor(max_abs * (1 - 2 * t), max_abs);
  };
  for (int i = 0; i <= 2; ++i) {
    const double v = max_abs * (1 - i);
    bar.ticks.push_back(absl::StrCat(v > 0 ? "+" : "", FormatNumber(v, 2)));
  }
  bar.tick_span = h;
  AppendColorBar(out, bar);
}

}  // namespace

std::string PatchGridSvg(const PatchGrid& grid) {
  const int rows = static_cast<int>(grid.row_labels.size());
  const int cols = static_cast<int>(grid.col_labels.size());
  const bool compact = cols > kCompactColumns;
  const double cw = compact ? 22 : 46, ch = compact ? 16 : 26;
  // Room for the labels: about 6.5 px a character at 10 px.
  const double left = std::max(
      60.0, 24 + 6.5 * static_cast<double>(LongestLabel(grid.row_labels)));
  const double col_label_h =
      compact ? 6.0 * static_cast<double>(LongestLabel(grid.col_labels)) + 8
              : 16;
  const double top = 66 + col_label_h;
  double max_abs = grid.scale_max;
  if (!(max_abs > 0)) {
    max_abs = 1;
    for (double v : grid.values) {
      if (std::isfinite(v)) max_abs = std::max(max_abs, std::abs(v));
    }
  }
  const double grid_w = cols * cw, grid_h = rows * ch;
  const double width = std::max(left + grid_w + 100, 600.0);
  const double height = top + std::max(grid_h, 60.0) + 30;

  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, width / 2, 22, grid.title, 15, "middle",
          "font-weight=\"bold\" class=\"title\"");
  SvgText(&out, width / 2, 40, grid.subtitle, 11);
  SvgText(&out, left + grid_w / 2, 56, grid.col_axis, 12);
  SvgText(
      &out, 14, top + grid_h / 2, grid.row_axis, 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 14 %.1f)\"", top + grid_h / 2));
  for (int c = 0; c < cols; ++c) {
    const double x = left + (c + 0.5) * cw, y = top - 6;
    if (compact) {
      SvgText(&out, x + 3, y, grid.col_labels[c], 10, "start",
              absl::StrFormat("transform=\"rotate(-60 %.1f %.1f)\" "
                              "class=\"col-label\"",
                              x + 3, y));
    } else {
      SvgText(&out, x, y, grid.col_labels[c], 10, "middle",
              "class=\"col-label\"");
    }
  }
  for (int r = 0; r < rows; ++r) {
    SvgText(&out, left - 8, top + (r + 0.5) * ch + 4, grid.row_labels[r], 10,
            "end", "class=\"row-label\"");
    for (int c = 0; c < cols; ++c) {
      const size_t k = static_cast<size_t>(r) * cols + c;
      const double v = k < grid.values.size() ? grid.values[k] : NAN;
      const std::string fill = DivergingColor(v, max_abs);
      const double x = left + c * cw, y = top + r * ch;
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" data-row=\"%d\" "
          "data-col=\"%d\" data-value=\"%s\"><title>%s %s: %s</title>"
          "</rect>\n",
          x, y, cw, ch, fill, r, c, std::isfinite(v) ? FormatNumber(v, 6) : "",
          XmlEscape(grid.row_labels[r]), XmlEscape(grid.col_labels[c]),
          FormatNumber(v, 3));
      if (!compact) {
        SvgText(
            &out, x + cw / 2, y + ch / 2 + 3.5, FormatNumber(v, 2), 9.5,
            "middle",
            absl::StrFormat("fill=\"%s\" class=\"value\"", TextColorOn(fill)));
      }
    }
  }
  Legend(&out, left + grid_w + 20, top, 14, std::max(grid_h, 60.0), max_abs);
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
