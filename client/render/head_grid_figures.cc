#include "client/render/head_grid_figures.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

constexpr double kCellW = 46, kCellH = 26, kLeft = 60, kTop = 82;

struct PatternStyle {
  const char* name;
  const char* color;  // ColorBrewer Set2, readable with black text
  const char* letter;
};

constexpr PatternStyle kPatterns[] = {
    {"vertical", "#66c2a5", "V"},           {"diagonal", "#fc8d62", "D"},
    {"vertical+diagonal", "#8da0cb", "VD"}, {"block", "#e78ac3", "B"},
    {"heterogeneous", "#e5c494", "H"},
};

// Title, subtitle and the head/layer axis labels of a grid at (kLeft, kTop).
void GridFrame(std::string* out, double width, const std::string& title,
               const std::string& subtitle, int layers, int heads) {
  SvgText(out, width / 2, 22, title, 15, "middle",
          "font-weight=\"bold\" class=\"title\"");
  SvgText(out, width / 2, 40, subtitle, 11);
  const double grid_h = layers * kCellH;
  SvgText(out, kLeft + heads * kCellW / 2, 58, "head", 12);
  SvgText(
      out, 16, kTop + grid_h / 2, "layer", 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 16 %.1f)\"", kTop + grid_h / 2));
  for (int h = 0; h < heads; ++h) {
    SvgText(out, kLeft + (h + 0.5) * kCellW, kTop - 8, absl::StrCat("H", h),
            10);
  }
  for (int l = 0; l < layers; ++l) {
    SvgText(out, kLeft - 8, kTop + (l + 0.5) * kCellH + 4, absl::StrCat("L", l),
            10, "end");
  }
}

}  // namespace

std::string HeadGridSvg(const HeadGrid& grid) {
  const int layers = std::max(0, grid.num_layers);
  const int heads = std::max(0, grid.num_heads);
  double max = grid.scale_max;
  if (!(max > 0)) {
    for (double v : grid.values) {
      if (std::isfinite(v)) max = std::max(max, v);
    }
  }
  if (!(max > 0)) max = 1;
  const double grid_w = heads * kCellW, grid_h = layers * kCellH;
  const double width = std::max(kLeft + grid_w + 110, 600.0);
  const double height = kTop + grid_h + 30;
  std::string out;
  OpenSvg(&out, width, height);
  GridFrame(&out, width, grid.title, grid.subtitle, layers, heads);
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      const size_t k = static_cast<size_t>(l) * heads + h;
      const double v = k < grid.values.size() ? grid.values[k] : NAN;
      const std::string fill = SequentialColor(v / max);
      const double x = kLeft + h * kCellW, y = kTop + l * kCellH;
      const std::string label = FormatNumber(v, grid.decimals);
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" data-layer=\"%d\" "
          "data-head=\"%d\" data-value=\"%s\"><title>L%dH%d: %s</title>"
          "</rect>\n",
          x, y, kCellW, kCellH, fill, l, h,
          std::isfinite(v) ? FormatNumber(v, 6) : "", l, h, label);
      SvgText(
          &out, x + kCellW / 2, y + kCellH / 2 + 3.5, label, 9.5, "middle",
          absl::StrFormat("fill=\"%s\" class=\"value\"", TextColorOn(fill)));
    }
  }
  // Colour bar: max at the top, 0 at the bottom.
  const double lx = kLeft + grid_w + 20, lw = 14;
  ColorBar bar{"sequential", lx, kTop, lw, std::max(grid_h, 1.0)};
  bar.color = [](int i) { return SequentialColor(1 - i / 10.0); };
  for (int i = 0; i <= 2; ++i) {
    bar.ticks.push_back(FormatNumber(max * (1 - i / 2.0), grid.decimals));
  }
  bar.tick_span = grid_h;
  AppendColorBar(&out, bar);
  CloseSvg(&out);
  return out;
}

const std::vector<std::string>& PatternNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>;
    for (const PatternStyle& p : kPatterns) v->push_back(p.name);
    return v;
  }();
  return *names;
}

std::string PatternGridSvg(const std::string& subtitle, int num_layers,
                           int num_heads,
                           const std::vector<std::string>& patterns) {
  const int layers = std::max(0, num_layers);
  const int heads = std::max(0, num_heads);
  const double grid_w = heads * kCellW, grid_h = layers * kCellH;
  const double legend_w = 170;
  const double width = std::max(kLeft + grid_w + legend_w + 20, 600.0);
  const double height = kTop + std::max(grid_h, 5 * 22.0) + 30;
  std::string out;
  OpenSvg(&out, width, height);
  GridFrame(&out, width, "Attention pattern of each head (Kovaleva et al.)",
            subtitle, layers, heads);
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      const size_t k = static_cast<size_t>(l) * heads + h;
      const std::string name = k < patterns.size() ? patterns[k] : "";
      const PatternStyle* style = nullptr;
      for (const PatternStyle& p : kPatterns) {
        if (name == p.name) style = &p;
      }
      const std::string fill = style ? style->color : kMissingColor;
      const double x = kLeft + h * kCellW, y = kTop + l * kCellH;
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell pattern\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" data-layer=\"%d\" "
          "data-head=\"%d\" data-pattern=\"%s\"><title>L%dH%d: %s</title>"
          "</rect>\n",
          x, y, kCellW, kCellH, fill, l, h, XmlEscape(name), l, h,
          XmlEscape(name.empty() ? "n/a" : name));
      SvgText(&out, x + kCellW / 2, y + kCellH / 2 + 3.5,
              style ? style->letter : "?", 10, "middle", "class=\"value\"");
    }
  }
  const double lx = kLeft + grid_w + 20;
  for (size_t i = 0; i < std::size(kPatterns); ++i) {
    const double y = kTop + i * 22.0;
    absl::StrAppendFormat(
        &out,
        "<rect class=\"legend-swatch\" x=\"%.1f\" y=\"%.1f\" width=\"16\" "
        "height=\"16\" fill=\"%s\" data-pattern=\"%s\"/>\n",
        lx, y, kPatterns[i].color, kPatterns[i].name);
    SvgText(&out, lx + 22, y + 12,
            absl::StrCat(kPatterns[i].letter, "  ", kPatterns[i].name), 11,
            "start", "class=\"legend-label\"");
  }
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
