#include "client/render/sweep_figures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"
#include "client/render/file_output.h"
#include "client/render/mask_groups.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Subtitle(const SweepResults& sweep) {
  std::string s = sweep.model.empty() ? "" : absl::StrCat(sweep.model, " · ");
  absl::StrAppend(&s, "baseline accuracy ",
                  FormatNumber(sweep.baseline.accuracy * 100, 2), "% on ",
                  sweep.baseline.examples, " examples");
  return s;
}

// Largest |v| over finite values, or 1 when there is none (keeps the colour
// scale and the legend well-defined).
double MaxAbs(const std::vector<double>& values) {
  double m = 0;
  for (double v : values) {
    if (std::isfinite(v)) m = std::max(m, std::abs(v));
  }
  return m > 0 ? m : 1.0;
}

// A vertical colour legend for the diverging scale at (x, y).
void DivergingLegend(std::string* out, double x, double y, double w, double h,
                     double max_abs) {
  ColorBar bar{"diverging", x, y, w, h};
  bar.color = [max_abs](int i) {
    const double t = i / 10.0;
    return DivergingColor(max_abs * (1 - 2 * t), max_abs);
  };
  for (int i = 0; i <= 4; ++i) {
    const double v = max_abs * (1 - i / 2.0);
    bar.ticks.push_back(
        absl::StrCat(v > 0 ? "+" : "", FormatNumber(v, 1), "%"));
  }
  bar.tick_span = h;
  AppendColorBar(out, bar);
}

}  // namespace

std::string HeadHeatmapSvg(const SweepResults& sweep) {
  const int layers = std::max(0, sweep.num_layers);
  const int heads = std::max(0, sweep.num_heads);
  std::vector<double> cells(static_cast<size_t>(layers) * heads, kNaN);
  for (const MaskOutcome& r : sweep.results) {
    HeadIndex h;
    if (IsSingleHead(r, layers, heads, &h)) {
      cells[static_cast<size_t>(h.layer) * heads + h.head] =
          r.relative_change_percent;
    }
  }
  const double max_abs = MaxAbs(cells);
  const double cw = 46, ch = 26, left = 60, top = 82;
  const double grid_w = heads * cw, grid_h = layers * ch;
  const double width = std::max(left + grid_w + 110, 600.0);
  const double height = top + grid_h + 30;

  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, width / 2, 22,
          "Relative change in accuracy (%) when one head is masked", 15,
          "middle", "font-weight=\"bold\" class=\"title\"");
  SvgText(&out, width / 2, 40, Subtitle(sweep), 11);
  SvgText(&out, left + grid_w / 2, 58, "head", 12);
  SvgText(
      &out, 16, top + grid_h / 2, "layer", 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 16 %.1f)\"", top + grid_h / 2));
  for (int h = 0; h < heads; ++h) {
    SvgText(&out, left + (h + 0.5) * cw, top - 8, absl::StrCat("H", h), 10);
  }
  for (int l = 0; l < layers; ++l) {
    SvgText(&out, left - 8, top + (l + 0.5) * ch + 4, absl::StrCat("L", l), 10,
            "end");
    for (int h = 0; h < heads; ++h) {
      const double v = cells[static_cast<size_t>(l) * heads + h];
      const std::string fill = DivergingColor(v, max_abs);
      const double x = left + h * cw, y = top + l * ch;
      const std::string label = FormatNumber(v, 1);
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" data-layer=\"%d\" "
          "data-head=\"%d\" data-value=\"%s\"><title>L%dH%d: %s%%</title>"
          "</rect>\n",
          x, y, cw, ch, fill, l, h, std::isfinite(v) ? FormatNumber(v, 4) : "",
          l, h, label);
      SvgText(
          &out, x + cw / 2, y + ch / 2 + 3.5, label, 9.5, "middle",
          absl::StrFormat("fill=\"%s\" class=\"value\"", TextColorOn(fill)));
    }
  }
  DivergingLegend(&out, left + grid_w + 20, top, 14, grid_h, max_abs);
  CloseSvg(&out);
  return out;
}

std::string LayerBarsSvg(const SweepResults& sweep) {
  const int layers = std::max(0, sweep.num_layers);
  std::vector<double> values(layers, kNaN);
  for (const MaskOutcome& r : sweep.results) {
    int l;
    if (IsWholeLayer(r, layers, sweep.num_heads, &l)) {
      values[l] = r.relative_change_percent;
    }
  }
  double lo = 0, hi = 0;
  for (double v : values) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  const std::vector<double> ticks = NiceTicks(lo, hi, 6);
  lo = std::min(lo, ticks.front());
  hi = std::max(hi, ticks.back());
  const double slot = 40, left = 70, top = 60, plot_h = 260;
  const double plot_w = std::max(1, layers) * slot;
  const double width = std::max(left + plot_w + 30, 600.0);
  const double height = top + plot_h + 55;
  auto y_of = [&](double v) { return top + (hi - v) / (hi - lo) * plot_h; };

  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, width / 2, 22,
          "Relative change in accuracy (%) when a whole layer is masked", 15,
          "middle", "font-weight=\"bold\" class=\"title\"");
  SvgText(&out, width / 2, 40, Subtitle(sweep), 11);
  for (double t : ticks) {
    absl::StrAppendFormat(&out,
                          "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                          left, y_of(t), left + plot_w, y_of(t),
                          t == 0 ? "#000000" : "#e0e0e0");
    SvgText(&out, left - 6, y_of(t) + 4, FormatNumber(t, 1), 10, "end");
  }
  const double max_abs = MaxAbs(values);
  bool any = false;
  for (int l = 0; l < layers; ++l) {
    const double cx = left + (l + 0.5) * slot;
    SvgText(&out, cx, top + plot_h + 16, absl::StrCat("L", l), 10);
    const double v = values[l];
    if (!std::isfinite(v)) continue;
    any = true;
    const double y0 = y_of(0), y1 = y_of(v);
    absl::StrAppendFormat(
        &out,
        "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\" fill=\"%s\" stroke=\"#555\" data-layer=\"%d\" "
        "data-value=\"%s\"><title>layer %d: %s%%</title></rect>\n",
        cx - slot * 0.35, std::min(y0, y1), slot * 0.7, std::abs(y1 - y0),
        DivergingColor(v, max_abs), l, FormatNumber(v, 4), l,
        FormatNumber(v, 1));
    SvgText(&out, cx, v >= 0 ? y1 - 4 : y1 + 12, FormatNumber(v, 1), 9.5,
            "middle", "class=\"value\"");
  }
  if (!any) SvgText(&out, left + plot_w / 2, top + plot_h / 2, "no data", 14);
  SvgText(&out, left + plot_w / 2, top + plot_h + 40, "masked layer", 12);
  SvgText(
      &out, 18, top + plot_h / 2, "relative change (%)", 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 18 %.1f)\"", top + plot_h / 2));
  CloseSvg(&out);
  return out;
}

absl::Status WriteSweepFigures(const SweepResults& sweep,
                               const std::string& dir,
                               std::vector<std::string>* written,
                               const SweepFigureFiles& names) {
  bool heads = false, layers = false;
  for (const MaskOutcome& r : sweep.results) {
    HeadIndex h;
    int l;
    heads |= IsSingleHead(r, sweep.num_layers, sweep.num_heads, &h);
    layers |= IsWholeLayer(r, sweep.num_layers, sweep.num_heads, &l);
  }
  if (heads) {
    absl::Status s = WriteOutputFile(dir, names.heads_heatmap,
                                     HeadHeatmapSvg(sweep), written);
    if (!s.ok()) return s;
  }
  if (layers) {
    absl::Status s =
        WriteOutputFile(dir, names.layer_bars, LayerBarsSvg(sweep), written);
    if (!s.ok()) return s;
  }
  if (!RandomSeries(sweep).empty()) {
    absl::Status s = WriteOutputFile(dir, names.fraction_curve,
                                     FractionCurveSvg(sweep), written);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace bertology::render
